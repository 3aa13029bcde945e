"""The exercises at the end of docs/stage2_symbolic_vm.md (skipped unless MINIDYNAMO_EXERCISES=1).

MINIDYNAMO_EXERCISES=1 .venv/bin/python -m pytest tests/stage2/test_exercises.py -q
"""

import contextlib
import io
import itertools
import os
import sys

import pytest
import torch

from stage2_symbolic_vm import replay, trace
from tests.oracle import assert_same_as_eager
from tests.tiny_programs import load_tiny

pytestmark = pytest.mark.skipif(
    os.environ.get("MINIDYNAMO_EXERCISES") != "1",
    reason="exercises: set MINIDYNAMO_EXERCISES=1 to check your solutions",
)


def check(fn, *args):
    recorded = trace(fn, *args)
    assert_same_as_eager(
        lambda *a: replay(recorded, fn, *a), fn, *args, captured=lambda: recorded.nodes
    )


def load_tiny_program():
    """docs/tiny/symbolic_vm.py as a module (its demo runs only as a script)."""
    return load_tiny("symbolic_vm")


def tiny_trace(fn, *args):
    """Run the tiny VM quietly: the trace it records and the name (or value) it returns."""
    vm = load_tiny_program().TinyVM(fn, *args)
    with contextlib.redirect_stdout(io.StringIO()):
        result = vm.run()
    return vm.trace, result


def scaled(x, n):
    return (n * 2 + 1) * x


def test_tiny_vm_computes_known_values():
    """An operation on two known values is computed now; only the rest is recorded."""
    assert tiny_trace(scaled, "x", 3) == (["t0 = 7 * x"], "t0")
    assert tiny_trace(scaled, 5, 3) == ([], 35)
    # a traced input is still recorded, and what is computed from it
    assert tiny_trace(scaled, "x", "n") == (["t0 = n * 2", "t1 = t0 + 1", "t2 = t1 * x"], "t2")


def halve(x):
    return x / 2


def double_after(x, act):
    if act:
        x = act(x)
    return x * 2


@pytest.mark.parametrize("act", [None, halve, torch.relu], ids=["none", "user", "torch"])
def test_truth_of_a_function(act):
    check(double_after, torch.randn(3), act)


def test_itertools_tee():
    def f(x):
        a, b = itertools.tee([x, x * 2])
        return list(a), list(b), [v + 1 for v in a]

    check(f, torch.randn(3))


def product(x, factors):
    for k in factors:
        x = x * k
    return x


@pytest.mark.skipif(
    sys.version_info >= (3, 13),
    reason="3.13 fuses a store and a load of locals into one instruction the tiny VM lacks",
)
def test_tiny_vm_unrolls_a_loop():
    """A loop over a known list runs in the tiny VM, and each turn records its operations."""
    assert tiny_trace(product, "x", [2, 3]) == (["t0 = x * 2", "t1 = t0 * 3"], "t1")
    assert tiny_trace(product, "x", []) == ([], "x")


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
