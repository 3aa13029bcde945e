"""PyTorch-style function tests in strict mode: eager's result, and no silent fallback.

Every case of dynamo_style_table.py is compiled (strict mode: tests/conftest.py), compared
with eager, and then explained: no frame may have run eagerly because minidynamo failed
("compiler_error") or because the VM predicted an exception eager does not raise
("eager_error"), and no CompilerWarning may have been shown. A case that raises in eager
must raise the same type compiled (the oracle checks it).
"""

import collections
import contextlib
import io
import warnings

import numpy as np
import pytest
import torch

import stage3_guards
import stage4_fx
from stage3_guards import counters
from tests.oracle import assert_same_as_eager, run_or_exception
from tests.stage4.dynamo_style_table import CASES

SILENT_FALLBACKS = ("compiler_error", "eager_error")


def test_the_table_is_large():
    assert len(CASES) >= 150
    names = [c[0].__name__ for c in CASES]
    assert len(set(names)) == len(names), "two cases share a name"


@pytest.mark.parametrize(
    ("fn", "args", "kwargs", "graphs", "breaks"), CASES, ids=[c[0].__name__ for c in CASES]
)
def test_function(fn, args, kwargs, graphs, breaks):
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always", stage3_guards.CompilerWarning)
        compiled = stage4_fx.compile(fn)
        assert_same_as_eager(compiled, fn, *args, kwargs=kwargs)
        compiles = counters.compiled
        assert_same_as_eager(compiled, fn, *args, kwargs=kwargs)  # the cached version too
        assert counters.compiled == compiles, "the second call with equal arguments recompiled"
        _, error = run_or_exception(fn, args, kwargs)
        if error is not None:  # raises in eager: explain must raise the same
            with pytest.raises(type(error)):
                stage4_fx.explain(fn)(*args, **kwargs)
            return
        report = stage4_fx.explain(fn)(*args, **kwargs)
    assert not [w for w in shown if issubclass(w.category, stage3_guards.CompilerWarning)]
    fallbacks = [b for b in report.break_reasons if b.kind in SILENT_FALLBACKS]
    assert not fallbacks, "\n".join(str(b) for b in fallbacks)
    assert (report.graph_count, report.graph_break_count) == (graphs, breaks), report


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


def test_a_function_made_in_the_trace_keeps_its_attributes():
    """Attributes the trace gave a function it made (`functools.wraps` gives `__name__` and
    `__wrapped__`, a registry a tag) are set again when the new code makes it: they were lost."""

    def fn(x):
        def double(t):
            """Doubles."""
            return t * 2

        double.tag = "mine"
        double.__name__ = "renamed"
        double.__dict__["count"] = 3
        return double(x), double

    x = torch.ones(3)
    _, made = stage4_fx.compile(fn)(x)
    assert (made.tag, made.__name__, made.__doc__, made.count) == ("mine", "renamed", "Doubles.", 3)
    assert made.__dict__ == {"tag": "mine", "count": 3}
    report = stage4_fx.explain(fn)(x)
    assert (report.graph_count, report.graph_break_count) == (1, 0), report
