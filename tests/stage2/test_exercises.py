"""The exercises at the end of docs/stage2_symbolic_vm.md (skipped unless MINIDYNAMO_EXERCISES=1).

MINIDYNAMO_EXERCISES=1 .venv/bin/python -m pytest tests/stage2/test_exercises.py -q
"""

import itertools
import os

import pytest
import torch

from stage2_symbolic_vm import replay, trace
from tests.oracle import assert_same_as_eager

pytestmark = pytest.mark.skipif(
    os.environ.get("MINIDYNAMO_EXERCISES") != "1",
    reason="exercises: set MINIDYNAMO_EXERCISES=1 to check your solutions",
)


def check(fn, *args):
    recorded = trace(fn, *args)
    assert_same_as_eager(
        lambda *a: replay(recorded, fn, *a), fn, *args, captured=lambda: recorded.nodes
    )


def test_itertools_tee():
    def f(x):
        a, b = itertools.tee([x, x * 2])
        return list(a), list(b), [v + 1 for v in a]

    check(f, torch.randn(3))


def scale_by(x, shape):
    match shape:
        case (rows, cols):
            return x * rows + cols
        case [size]:
            return x - size
        case _:
            return x


@pytest.mark.parametrize("shape", [(2, 3), [4], "ab", 5])
def test_match_a_sequence(shape):
    check(scale_by, torch.randn(3), shape)
