"""Kernels whose sizes are symbols (symbolic/sizes.py): one compile serves every size.

After a size changes, the frontend traces the graph again with that dim symbolic; the
C++ kernels then take the symbol as an argument (`const int64_t s77`), their loops and
index math use it, and every later size runs the same code, equal to eager.
"""

import logging

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import stage4_fx
from stage5_inductor_cpp import compile_fx
from tests.oracle import assert_same_as_eager
from tests.stage5.helpers import KeepGraphs

pytestmark = pytest.mark.usefixtures("fresh_compiles")  # tests/conftest.py


def softmax_by_hand(x):
    m = x.max(dim=-1, keepdim=True).values
    e = (x - m).exp()
    return e / e.sum(-1, keepdim=True)


def layer_norm(x):
    return F.layer_norm(x, (x.shape[-1],))


def views(x):
    return x.view(-1, 4).t().reshape(4, -1) + 1


def matmul_relu(x):
    return (x @ x.t()).relu()


def arange_rows(x):
    return x + torch.arange(x.shape[0], dtype=x.dtype, device=x.device).unsqueeze(1)


def cat_sum(x):
    return torch.cat([x, x * 2], 0).sum(0)


def slice_rows(x):
    return x[1:, 2:] * 3


def standardise(x):
    return (x - x.mean(0)) / x.var(0).add(1e-5).sqrt()


def mean_rows(x):
    return x.mean(-1) + x.shape[0]


PROGRAMS = [
    softmax_by_hand,
    layer_norm,
    views,
    matmul_relu,
    arange_rows,
    cat_sum,
    slice_rows,
    standardise,
    mean_rows,
]


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_one_symbolic_compile_serves_every_size(fn):
    backend = KeepGraphs()
    compiled = stage4_fx.compile(fn, backend=backend)
    for rows in (4, 5, 6, 9, 17, 3):
        assert_same_as_eager(compiled, fn, torch.randn(rows, 8))
    assert len(backend.graphs) == 2  # static at first, then one with the dim symbolic
    symbolic = backend.graphs[1]
    assert symbolic.symbolic is not None, symbolic.per_size_reason
    assert symbolic.specializations and all(
        code is symbolic.symbolic for code in symbolic.specializations.values()
    )


def test_the_kernel_takes_the_symbol_as_an_argument():
    backend = KeepGraphs()
    compiled = stage4_fx.compile(softmax_by_hand, backend=backend)
    for rows in (4, 5):
        compiled(torch.randn(rows, 8))
    code = backend.graphs[1].symbolic
    (symbol,) = {
        name for name in code.wrapper_source.split() if name.startswith("s") and name[1:].isdigit()
    }
    assert f"const int64_t {symbol}" in code.source
    assert f"x0 < {symbol}" in code.source  # the outer loop's bound
    assert f"{symbol} = _scalar0" in code.wrapper_source  # read from the call's arguments


def test_a_decision_on_a_symbol_is_guarded():
    """`x[:5]` is 5 rows long only while the rows are at least 5: the lowering asks, torch's
    ShapeEnv records the answer as a guard, and a smaller size compiles again."""

    def first_rows(x):
        return x[:5] * 2

    backend = KeepGraphs()
    compiled = stage4_fx.compile(first_rows, backend=backend)
    for rows in (6, 7, 8, 3, 2):
        assert_same_as_eager(compiled, first_rows, torch.randn(rows, 4))
    assert backend.graphs[1].symbolic is not None
    assert len(backend.graphs) == 3  # rows < 5 failed the guard: a third graph


def test_sizes_a_kernel_cannot_take_compile_per_size_and_say_why(caplog):
    """A square root gives `TruncToInt(FloatPow(ToFloat(s), 0.5))` rows, a size computed in
    floats that the wrapper does not compute (a product by 1.5 it does: test_float_sizes.py),
    so each size gets its own specialisation, and the log says so."""

    def first_root(x):
        return x[: int(x.size(0) ** 0.5)] + 1

    backend = KeepGraphs()
    compiled = stage4_fx.compile(first_root, backend=backend)
    with caplog.at_level(logging.INFO, logger="minidynamo.recompiles"):
        for rows in (4, 5, 6, 7):
            assert_same_as_eager(compiled, first_root, torch.randn(rows, 3))
    graph = backend.graphs[1]
    assert graph.symbolic is None
    assert "one specialisation per size" in graph.per_size_reason
    assert graph.per_size_reason in caplog.text
    assert len(graph.specializations) == 3


def test_a_call_whose_strides_differ_gets_its_own_specialisation():
    backend = KeepGraphs()
    compiled = stage4_fx.compile(layer_norm, backend=backend)
    for rows in (4, 5):
        compiled(torch.randn(rows, 8))
    graph = backend.graphs[1]
    x = torch.randn(8, 6).t()  # 6 rows of 8, not contiguous
    assert not graph.symbolic.fits([6, x])
    assert_same_as_eager(compiled, layer_norm, x)


def test_a_marked_dim_compiles_once_symbolic():
    def scaled(x):
        return x.sin() * x.shape[0]

    backend = KeepGraphs()
    compiled = stage4_fx.compile(scaled, backend=backend)
    for rows in (3, 7, 11):
        x = torch.randn(rows, 5)
        stage4_fx.mark_dynamic(x, 0)
        assert_same_as_eager(compiled, scaled, x)
    assert len(backend.graphs) == 1 and backend.graphs[0].symbolic is not None


@settings(max_examples=25, deadline=None)
@given(
    rows=st.lists(st.integers(2, 40), min_size=2, max_size=5),
    cols=st.integers(1, 9),
    which=st.sampled_from(PROGRAMS[:3] + PROGRAMS[4:]),
)
def test_every_size_equals_eager(rows, cols, which):
    stage4_fx.reset()
    width = 8 if which is views else cols
    compiled = stage4_fx.compile(which, backend=compile_fx)
    for n in [5, *rows]:
        assert_same_as_eager(compiled, which, torch.randn(n, width))


def sine(x):
    return x.sin()


def test_an_internal_error_of_a_symbolic_lowering_is_raised_in_strict_mode(monkeypatch):
    """Out of strict mode a lowering's bug calls torch instead (with a warning); in strict
    mode (the tests') it is an error, not a quiet fallback to one compile per size."""
    from stage3_guards import config
    from stage5_inductor_cpp.lowering import LOWERINGS
    from stage5_inductor_cpp.symbolic.sizes import is_symbolic

    sin = LOWERINGS[torch.sin]

    def buggy_sin(graph, out, x):
        if any(map(is_symbolic, x.ranges)):
            raise RuntimeError("a bug that only symbolic sizes meet")
        return sin(graph, out, x)

    monkeypatch.setitem(LOWERINGS, torch.sin, buggy_sin)
    monkeypatch.setitem(LOWERINGS, "sin", buggy_sin)
    monkeypatch.setattr(config, "strict", False)
    backend = KeepGraphs()
    compiled = stage4_fx.compile(sine, backend=backend)
    for rows in (4, 5, 6):
        assert_same_as_eager(compiled, sine, torch.randn(rows, 3))
    assert backend.graphs[1].symbolic.extern_names == ("sin",)
    stage4_fx.reset()
    monkeypatch.setattr(config, "strict", True)
    compiled = stage4_fx.compile(sine, backend=KeepGraphs())
    compiled(torch.randn(4, 3))
    with pytest.raises(stage4_fx.BackendCompilerFailed, match="only symbolic sizes meet"):
        compiled(torch.randn(5, 3))
