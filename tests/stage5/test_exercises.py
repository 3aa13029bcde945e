"""The exercises at the end of docs/stage5_inductor_cpp.md (skipped unless MINIDYNAMO_EXERCISES=1).

MINIDYNAMO_EXERCISES=1 .venv/bin/python -m pytest tests/stage5/test_exercises.py -q
"""

import math
import os

import pytest
import torch
import torch.nn.functional as F

from tests.stage5.helpers import check_lowered
from tests.tiny_programs import load_tiny

pytestmark = pytest.mark.skipif(
    os.environ.get("MINIDYNAMO_EXERCISES") != "1",
    reason="exercises: set MINIDYNAMO_EXERCISES=1 to check your solutions",
)

x = torch.randn(6, 8)
specials = torch.tensor(
    [[float("nan"), 1.0, -2.0, 0.5], [float("inf"), float("-inf"), 0.0, -0.0]]
).repeat(1, 2)


def check_kernels(fn, *args, kernels=1):
    """Compiled equals eager, and the op became C++ (at most `kernels` kernels), not torch."""
    compiled = check_lowered(fn, *args).last
    assert 1 <= len(compiled.kernel_names) <= kernels, compiled.kernel_names


def load_tiny_program():
    """docs/tiny/fused_loop.py as a module (running it prints its two lines)."""
    return load_tiny("fused_loop")


def test_fused_sum():
    """`fused_sum(x)` is sum(relu(sin(x) * 2)) in one loop: each element loaded once,
    nothing stored (the running total lives in a local variable, as a register)."""
    tiny = load_tiny_program()
    x = tiny.Buffer(0.25 * i - 3 for i in range(100))
    tiny.Buffer.loads = tiny.Buffer.stores = 0
    total = tiny.fused_sum(x)
    assert (tiny.Buffer.loads, tiny.Buffer.stores) == (len(x), 0)
    expected = sum(max(math.sin(v) * 2, 0.0) for v in list.copy(x))
    assert math.isclose(total, expected, rel_tol=1e-12)


def test_hardsigmoid():
    for args in (x * 4, specials):
        check_kernels(F.hardsigmoid, args)


def test_sign():
    for args in (x, specials, torch.randint(-3, 4, (5, 7))):  # NaN's sign is 0
        check_kernels(torch.sign, args)


def test_cosine_similarity():
    zeros = torch.zeros(2, 8)
    for a, b in ((x, x.flip(0)), (specials, x[:2]), (x[:2], zeros), (specials, specials)):
        check_kernels(torch.cosine_similarity, a, b)  # one kernel: three sums over each row
        check_kernels(lambda p, q: torch.cosine_similarity(p, q, 0), a, b)
        check_kernels(lambda p, q: torch.cosine_similarity(p, q, -1, 0.5), a, b)
