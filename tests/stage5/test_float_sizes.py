"""Sizes computed in floats (symbolic/float_sizes.py): `interpolate(x, scale_factor=1.5)`,
`int(x.size(-1) * 0.5)`. The trace writes them `TruncToInt(1.5*ToFloat(s0))`; the wrapper
computes them in Python as eager does (`int(1.5*float(s0))`, the double product), so one
compile serves every size; a size that eager rounds more than once compiles per size.
"""

import math

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


def compiled_over(fn, shapes, **close):
    """`fn` compiled and checked against eager at each shape; the backend that kept its graphs."""
    backend = KeepGraphs()
    compiled = stage4_fx.compile(fn, backend=backend)
    for shape in shapes:
        assert_same_as_eager(compiled, fn, torch.randn(shape), **close)
    return backend


def assert_one_symbolic_compile(backend):
    """The first size compiled as a static graph, every later one by one symbolic graph."""
    assert len(backend.graphs) == 2, [g.per_size_reason for g in backend.graphs]
    symbolic = backend.graphs[1]
    assert symbolic.symbolic is not None, symbolic.per_size_reason
    assert {id(c) for c in symbolic.specializations.values()} == {id(symbolic.symbolic)}


def nearest(x):
    return F.interpolate(x, scale_factor=1.5) + 1


def test_a_scaled_size_is_computed_by_the_wrapper_as_eager_computes_it():
    backend = compiled_over(nearest, [(1, 2, side, side + 3) for side in (6, 7, 9, 10, 13)])
    assert_one_symbolic_compile(backend)
    wrapper = backend.graphs[1].symbolic.wrapper_source
    assert "int(1.5*float(s" in wrapper  # the double product, truncated as C++'s cast does


MODES = {
    "nearest": {"mode": "nearest"},
    "bilinear": {"mode": "bilinear", "align_corners": False},
    "bilinear_corners": {"mode": "bilinear", "align_corners": True},
}


def check_interpolate(mode, recompute, scales, sides, compile=compile_fx, device="cpu"):
    """`interpolate` by `scales` checked against eager at each size of `sides`, after a first
    call at other sizes; one symbolic graph served them all."""
    stage4_fx.reset()

    def resized(x):
        kwargs = MODES[mode]
        scaled = F.interpolate(x, scale_factor=scales, recompute_scale_factor=recompute, **kwargs)
        return scaled * 2

    backend = KeepGraphs(compile)
    compiled = stage4_fx.compile(resized, backend=backend)
    # the first call's sizes are none of the later ones': both dims are symbols from the second
    # on (a dim becomes one when it changes); every size scales to at least 2 (torch keeps a
    # size of 1 static: a trace that saw one guards it)
    for h, w in [(3, 3), *sides]:
        assert_same_as_eager(compiled, resized, torch.randn(1, 2, h, w, device=device))
    assert_one_symbolic_compile(backend)


MODE = st.sampled_from(sorted(MODES))
RECOMPUTE = st.sampled_from([None, False, True])
SCALES = st.tuples(st.floats(0.5, 3.0), st.floats(0.5, 3.0))
SIDES = st.lists(st.tuples(st.integers(4, 40), st.integers(4, 40)), min_size=2, max_size=4)


@settings(max_examples=12, deadline=None)
@given(mode=MODE, recompute=RECOMPUTE, scales=SCALES, sides=SIDES)
def test_interpolate_by_random_scales_equals_eager_with_one_symbolic_compile(
    mode, recompute, scales, sides
):
    check_interpolate(mode, recompute, scales, sides)


ROUNDINGS = {"int": int, "floor": math.floor, "ceil": math.ceil, "round": round}


@settings(max_examples=12, deadline=None)
@given(
    rounding=st.sampled_from(sorted(ROUNDINGS)),
    factor=st.floats(0.25, 0.75),
    sides=st.lists(st.integers(9, 200), min_size=2, max_size=5),
)
def test_a_size_times_a_float_rounded_to_an_int_equals_eager(rounding, factor, sides):
    """Every size keeps from 2 elements to 2 fewer than it has: a slice to its end (`x[:s0]`)
    is a guard of its own (`ceil(0.95*s0) >= s0` holds to 20 elements), and a size of 1 too."""
    stage4_fx.reset()

    def head(x):
        return x[..., : ROUNDINGS[rounding](x.size(-1) * factor)] * 2

    backend = compiled_over(head, [(2, side) for side in [8, *sides]])
    assert_one_symbolic_compile(backend)


def tenths_thrice(x):
    return torch.zeros(math.ceil(x.size(0) * 0.1 * 3)) + x.sum()


def test_a_size_rounded_twice_compiles_per_size():
    """`(s*0.1)*3` is `0.3*ToFloat(s)` to the trace: sympy folds the two constants, where
    eager rounds after each product. At 10 rows eager's ceil is 3, the folded one's 4
    (10*0.30000000000000004): such a size is refused, and each size compiles as a static
    graph, equal to eager."""
    backend = compiled_over(tenths_thrice, [(7,), (9,), (10,), (20,)])
    reason = backend.graphs[1].per_size_reason
    assert reason is not None and "more than once" in reason, reason


def test_a_size_that_rounds_in_an_order_the_trace_does_not_keep_is_refused():
    """`x.size(0) * 0.5 * x.size(1)` rounds twice, and sympy orders the factors by its own
    rule; `x.size(0) * x.size(1) * 0.5` multiplies the ints first and rounds once."""
    from torch.fx.experimental.symbolic_shapes import ShapeEnv
    from torch.utils._sympy import functions as sf

    from stage5_inductor_cpp.symbolic import sizes
    from stage5_inductor_cpp.symbolic.float_sizes import RoundedTwice
    from tests.stage5.test_computed_sizes import symbol

    env = ShapeEnv()
    with sizes.symbols_of(env):
        s0, s1 = symbol(env, 9), symbol(env, 13)
        once = sizes.computed_sizes().size(sf.FloorToInt(0.5 * sf.ToFloat(s0 * s1)))
        assert sizes.computed_sizes().sources()[once.name] == f"math.floor(0.5*float({s0 * s1}))"
        with pytest.raises(RoundedTwice, match="more than once"):
            sizes.computed_sizes().size(sf.FloorToInt(0.5 * sf.ToFloat(s0) * sf.ToFloat(s1)))


def quarter_by_division(x):
    return x[: int(x.size(0) / 4)] + 1  # IntTrueDiv: Python's int / int, one rounding


def test_a_true_division_of_sizes_is_computed_as_python_divides():
    backend = compiled_over(quarter_by_division, [(9, 3), (13, 3), (17, 3), (30, 3)])
    assert_one_symbolic_compile(backend)


def twice_upsampled(x):
    return F.interpolate(F.interpolate(x, scale_factor=1.5), scale_factor=1.5) + 1


def test_a_size_scaled_twice_rounds_once_each_time():
    """`int(1.5*float(int(1.5*float(s0))))`: each product rounds once, and is an int again
    before the next."""
    backend = compiled_over(twice_upsampled, [(1, 2, side, side + 1) for side in (6, 7, 9, 13)])
    assert_one_symbolic_compile(backend)
