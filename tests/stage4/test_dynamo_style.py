"""PyTorch-style function tests in strict mode: eager's result, and no silent fallback."""

import collections

import numpy as np
import pytest
import torch

import stage4_fx
from tests.oracle import assert_same_as_eager

SILENT_FALLBACKS = ("compiler_error", "eager_error")


# --- the three silent fallbacks this suite was written after ----------------------------------


def explain_without_fallback(fn, *args):
    """Compiled equals eager, and explain() shows no frame run eagerly by a failure."""
    assert_same_as_eager(stage4_fx.compile(fn), fn, *args)
    report = stage4_fx.explain(fn)(*args)
    fallbacks = [b for b in report.break_reasons if b.kind in SILENT_FALLBACKS]
    assert not fallbacks, "\n".join(str(b) for b in fallbacks)
    return report


def test_fromkeys_through_a_subclass():
    """A class method of a builtin class called through a subclass makes the subclass
    (`defaultdict.fromkeys` is dict's); it was wrapped as a method of its first argument."""

    def fn(x):
        a = collections.defaultdict.fromkeys("ab", 1)
        b = collections.OrderedDict.fromkeys(["p"], 2)
        return x * a["b"] + b["p"], a, b, a.default_factory

    report = explain_without_fallback(fn, torch.ones(3))
    assert (report.graph_count, report.graph_break_count) == (1, 0), report


def test_a_method_of_an_object_the_vm_does_not_model_breaks():
    """`np.random.rand` is a Cython function bound to NumPy's generator: the call breaks with
    its name (it was wrapped as an object of a Python class and failed)."""

    def fn(x):
        noise = np.random.rand(2)
        return x + 1, noise.shape

    report = explain_without_fallback(fn, torch.ones(3))
    assert [b.kind for b in report.break_reasons] == ["untraceable_call"]
    assert "RandomState.rand" in report.break_reasons[0].reason


@pytest.mark.skipif(not torch.distributed.is_available(), reason="torch without distributed")
def test_distributed_is_initialized_is_traced_and_guarded():
    """`GroupMember.WORLD` is a property of its metaclass: read, and guarded, as CPython's
    type_getattro finds it (the VM looked in the class only, and the frame ran eagerly)."""

    def fn(x):
        if torch.distributed.is_initialized():
            return x + 1
        return x - 1

    report = explain_without_fallback(fn, torch.ones(3))
    assert (report.graph_count, report.graph_break_count) == (1, 0), report


def test_distributed_not_built(monkeypatch):
    """Without distributed, `is_available()` is False and `is_initialized` does not exist:
    the usual test of both compiles, and calling the missing one raises as in eager."""
    monkeypatch.delattr(torch._C, "_c10d_init", raising=False)
    monkeypatch.delattr(torch.distributed, "is_initialized", raising=False)

    def guarded(x):
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            return x + 1
        return x - 1

    def unguarded(x):
        return x + torch.distributed.is_initialized()

    report = explain_without_fallback(guarded, torch.ones(3))
    assert (report.graph_count, report.graph_break_count) == (1, 0), report
    assert_same_as_eager(stage4_fx.compile(unguarded), unguarded, torch.ones(3))
