"""The exercises at the end of docs/stage2_symbolic_vm.md (skipped unless MINIDYNAMO_EXERCISES=1).

MINIDYNAMO_EXERCISES=1 .venv/bin/python -m pytest tests/stage2/test_exercises.py -q
"""

import os

import pytest
import torch

from stage2_symbolic_vm import handled_opnames, replay, trace
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


def test_delete_subscr():
    def f(x):
        xs = [x, x + 1, x + 2]
        del xs[1]
        return xs

    assert "DELETE_SUBSCR" in handled_opnames()
    check(f, torch.randn(3))


def test_named_tuple_fields():
    def f(x):
        best = torch.max(x, dim=1)
        return best.values * 2, best.indices

    check(f, torch.randn(3, 4))
