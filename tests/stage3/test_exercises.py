"""The exercises at the end of docs/stage3_guards.md (skipped unless MINIDYNAMO_EXERCISES=1).

MINIDYNAMO_EXERCISES=1 .venv/bin/python -m pytest tests/stage3/test_exercises.py -q
"""

import contextlib
import io
import os

import pytest
import torch

from stage2_symbolic_vm.sources import Assumption
from stage3_guards import FrameCache, build_guards
from tests.tiny_programs import load_tiny

from .handmade import add
from .test_frame_cache import call, compile_add, frame_of

pytestmark = pytest.mark.skipif(
    os.environ.get("MINIDYNAMO_EXERCISES") != "1",
    reason="exercises: set MINIDYNAMO_EXERCISES=1 to check your solutions",
)


def load_tiny_program():
    """docs/tiny/guards_and_cache.py as a module (its demo runs only as a script)."""
    return load_tiny("guards_and_cache")


def test_the_tiny_cache_gives_up_past_a_limit():
    """Past LIMIT entries for a code object, a miss runs the function as it is."""
    tiny = load_tiny_program()
    tiny.LIMIT = 2
    with contextlib.redirect_stdout(io.StringIO()):
        for n in (1, 2, 3, 4, 1, 2):
            x = torch.ones(n)
            assert torch.equal(tiny.call(tiny.f, x), tiny.f(x))
    assert len(tiny.cache[tiny.f.__code__]) == 2  # sizes 1 and 2; 3 and 4 ran as they are


def test_every_entry_says_why_it_failed():
    cache = FrameCache(add.__code__, compile_add)
    for n in (4, 2):
        call(cache, add, torch.ones(n), torch.ones(n))
    frame = frame_of(add, torch.ones(8), torch.ones(8))
    assert cache.all_failure_reasons(frame.arguments, frame.globals, frame.function) == [
        "entry 0: size of local 'x' changed: expected 2, got 8",
        "entry 1: size of local 'x' changed: expected 4, got 8",
    ]


def test_a_hit_moves_the_entry_to_the_front():
    cache = FrameCache(add.__code__, compile_add)
    for n in (1, 2, 3):
        call(cache, add, torch.ones(n), torch.ones(n))
    first = cache.entries[-1]
    call(cache, add, torch.ones(1), torch.ones(1))
    assert cache.entries[0] is first
    assert len(cache.entries) == 3


def test_deterministic_algorithms_guard():
    (guard,) = build_guards([Assumption("deterministic")], {}, {})
    assert str(guard) == "DETERMINISTIC_ALGORITHMS: disabled"
    assert guard.failure({}, {}, None) is None
    torch.use_deterministic_algorithms(True)
    try:
        assert guard.failure({}, {}, None) == (
            "deterministic algorithms changed: expected disabled, got enabled"
        )
    finally:
        torch.use_deterministic_algorithms(False)
