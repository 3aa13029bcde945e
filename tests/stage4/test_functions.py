"""The function table: every small function gives eager's result, cut into the expected pieces."""

import contextlib
import io

import pytest

import stage4_fx
from stage3_guards import counters
from tests.oracle import assert_same_as_eager
from tests.stage4.functions_table import CASES


def test_the_table_is_large():
    assert len(CASES) >= 150


@pytest.mark.parametrize(
    ("fn", "args", "kwargs", "graphs", "breaks"), CASES, ids=[c[0].__name__ for c in CASES]
)
def test_function(fn, args, kwargs, graphs, breaks):
    with contextlib.redirect_stdout(io.StringIO()):  # some functions print: that is the point
        compiled = stage4_fx.compile(fn)
        assert_same_as_eager(compiled, fn, *args, kwargs=kwargs)
        compiles = counters.compiled
        assert_same_as_eager(compiled, fn, *args, kwargs=kwargs)  # the cached version too
        # Guards only read what exists before the call: equal arguments hit the cache.
        assert counters.compiled == compiles, "the second call with equal arguments recompiled"
        try:
            report = stage4_fx.explain(fn)(*args, **kwargs)
        except Exception:  # a function that raises: its compiled version raised the same above
            return
    assert (report.graph_count, report.graph_break_count) == (graphs, breaks), report
