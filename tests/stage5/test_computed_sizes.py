"""Computed sizes (symbolic/computed.py): floor division and modulo of symbols in sizes.

A convolution, a pooling and `x[::2]` give sizes such as `(s0 - 1)//2 + 1`. Each floor
division is a symbol of its own (`ps0`) in the IR; the wrapper computes it in Python and
the kernels take it as an argument, so one compile serves every image size.
"""

import math
import operator

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from hypothesis import example, given, settings
from hypothesis import strategies as st
from torch.fx.experimental.symbolic_shapes import ShapeEnv
from torch.utils._sympy import functions as sf

import stage3_guards
import stage4_fx
from stage5_inductor_cpp.symbolic import sizes
from stage5_inductor_cpp.symbolic.computed import PYTHON, python_text
from tests.oracle import assert_same_as_eager
from tests.stage5.helpers import KeepGraphs

pytestmark = pytest.mark.usefixtures("fresh_compiles")  # tests/conftest.py


def symbol(env, value):
    """A size symbol of `env` whose value at the trace is `value`."""
    from torch._dynamo.source import ConstantSource

    return env.create_symbol(value, source=ConstantSource(f"size{value}"))


# Each function of the table, with arguments in a symbol `a` and the values to try: its
# Python text must compute what sympy (torch's definition) evaluates to. FloorDiv and
# PythonMod are Python's for every sign; torch's Mod and ModularIndexing only ever
# see non-negative numbers.
CASES = {
    sf.FloorDiv: (lambda a: (a - 10, 3), range(-4, 20)),
    sf.CleanDiv: (lambda a: (2 * a, 2), range(0, 9)),
    sf.ModularIndexing: (lambda a: (a + 1, 2, 3), range(0, 20)),
    sf.PythonMod: (lambda a: (a - 10, 4), range(-4, 20)),
    sf.Mod: (lambda a: (a, 4), range(0, 20)),
    sf.Max: (lambda a: (a - 5, 1), range(0, 9)),
    sf.Min: (lambda a: (a - 5, 1), range(0, 9)),
    sf.PowByNatural: (lambda a: (a, 2), range(0, 9)),
    sf.Identity: (lambda a: (a + 1,), range(0, 9)),
    # sizes computed in floats (float_sizes.py): truncation towards zero, floor, ceiling,
    # rounding half to even, and true divisions, each of the doubles eager has
    sf.ToFloat: (lambda a: (a,), range(0, 9)),
    sf.TruncToInt: (lambda a: (0.7 * sf.ToFloat(a - 10),), range(0, 20)),
    sf.FloorToInt: (lambda a: (0.1 * sf.ToFloat(a - 10),), range(0, 20)),
    sf.CeilToInt: (lambda a: (0.1 * sf.ToFloat(a - 10),), range(0, 20)),
    sf.RoundToInt: (lambda a: (0.5 * sf.ToFloat(a),), range(0, 20)),
    sf.IntTrueDiv: (lambda a: (a, 7), range(0, 20)),
    sf.FloatTrueDiv: (lambda a: (sf.ToFloat(a), 2.5), range(0, 20)),
}


@pytest.mark.parametrize("function", list(CASES), ids=lambda f: f.__name__)
def test_each_function_prints_as_python_computes_it(function):
    import sympy

    a = sympy.Symbol("a", integer=True)
    make, values = CASES[function]
    expr = function(*make(a))
    written = python_text(expr)
    for value in values:
        exact = sympy.sympify(expr.xreplace({a: value}))
        expected = int(exact) if exact.is_Integer else float(exact)
        assert eval(written, {"a": value, "math": math}) == expected, (written, value)


def test_every_function_of_the_table_is_tested():
    assert set(CASES) >= {f for f in PYTHON if f.__module__.startswith("torch")}


def test_a_floor_division_becomes_a_computed_size_and_a_decision_on_it_a_guard():
    """`(s0 - 1)//2` is `ps0` in the IR; a comparison of it is asked of the ShapeEnv in
    its own terms, which records the guard (on the definition, not on `ps0`)."""
    env = ShapeEnv()
    with sizes.symbols_of(env):
        s0 = symbol(env, 9)
        half = sizes.floordiv(s0 - 1, 2)
        assert half.is_Symbol and half.name == "ps0"
        assert sizes.floordiv(s0 - 1, 2) == half  # the same definition, the same name
        assert sizes.hint(2 * half + 1) == 9
        assert sizes.decide(operator.gt, half, 3)  # (9 - 1)//2 = 4 > 3, for this size
        assert sizes.computed_sizes().sources() == {"ps0": f"(({s0} - 1)//2)"}
    guards = [str(g.expr) for g in env.guards]
    assert any("//" in g and "ps0" not in g for g in guards), guards


def test_sizes_python_cannot_spell_are_refused_with_their_name():
    env = ShapeEnv()
    with sizes.symbols_of(env):
        s0 = symbol(env, 9)
        with pytest.raises(sizes.SymbolicUnsupported, match="FloatPow"):  # a float's power
            sizes.computed_sizes().size(sf.FloorToInt(sf.FloatPow(sf.ToFloat(s0), 0.5)))


def test_symbolic_loops_are_collapsed_only_as_deep_as_the_threads_need(monkeypatch):
    """OpenMP's collapse divides by each collapsed loop's bound per iteration: by a symbol
    that is a real division, so a symbolic kernel shares out the fewest leading loops that
    give each thread 8 iterations (performance/parallel_loops.py)."""
    from stage5_inductor_cpp.performance.parallel_loops import collapsed_depth

    monkeypatch.setattr(torch, "get_num_threads", lambda: 4)
    env = ShapeEnv()
    with sizes.symbols_of(env):
        side = symbol(env, 56)
        assert collapsed_depth((8, 64, side, side)) == 2  # 512 iterations for 4 threads
        assert collapsed_depth((2, 3, side, side)) == 3
        assert collapsed_depth((1, 1, 2, side)) == 4


def every_other(x):
    return x[::2] + 1


def test_a_kernel_takes_the_computed_size_as_an_argument():
    backend = KeepGraphs()
    compiled = stage4_fx.compile(every_other, backend=backend)
    for rows in (4, 5, 6, 7, 12):
        assert_same_as_eager(compiled, every_other, torch.randn(rows, 3))
    assert len(backend.graphs) == 2
    code = backend.graphs[1].symbolic
    assert code is not None, backend.graphs[1].per_size_reason
    kernels = code.source.replace(code.prelude, "")  # the kernels, not the prelude's comments
    assert "const int64_t ps0" in kernels and "x0 < ps0" in kernels
    assert "//" not in kernels and "/ 2" not in kernels  # C++ never divides sizes
    assert "ps0 = ((1 + s" in code.wrapper_source and ")//2)" in code.wrapper_source


def first_of_every_other(x):
    return x[::2][:3] * 2


def test_a_guard_on_a_floor_division_sends_smaller_sizes_elsewhere():
    """Three rows of `x[::2]` exist from 5 rows on: the symbolic graph's guard says so in
    the call's terms, and 4 or 3 rows compile again, equal to eager."""
    backend = KeepGraphs()
    compiled = stage4_fx.compile(first_of_every_other, backend=backend)
    for rows in (6, 7, 9, 4, 3, 11):
        assert_same_as_eager(compiled, first_of_every_other, torch.randn(rows, 2))
    assert len(backend.graphs) == 3
    assert all(g.symbolic is not None for g in backend.graphs[1:])
    [cache] = [c for c in compiled.options.caches.values() if c.entries]
    codes = [g.code for e in cache.entries for g in e.guards.guards if g.kind == "SHAPE_ENV"]
    assert any("// 2" in code for codes_ in codes for code in codes_), codes


def patches_plus_positions(x):
    """A ViT's position embeddings resized to its patch grid (`interpolate_pos_encoding`)."""
    positions = torch.linspace(0, 1, 16).view(1, 1, 4, 4)
    grid = (x.shape[-2] // 4, x.shape[-1] // 4)
    patches = F.avg_pool2d(x, 4)
    return patches + F.interpolate(positions, size=grid, mode="bicubic", align_corners=False)


def test_an_extern_takes_a_computed_size_as_an_argument():
    backend = KeepGraphs()
    compiled = stage4_fx.compile(patches_plus_positions, backend=backend)
    for side in (16, 20, 24, 36):
        assert_same_as_eager(compiled, patches_plus_positions, torch.randn(1, 1, side, side))
    assert len(backend.graphs) == 2
    code = backend.graphs[1].symbolic
    assert code is not None, backend.graphs[1].per_size_reason
    assert "upsample_bicubic2d" in code.extern_names or "interpolate" in code.extern_names


def halved(x):
    return F.avg_pool2d(x, 2)


def test_an_average_of_windows_inside_the_input_divides_by_their_size():
    """`s//2` windows of 2 never reach past `s` rows (a guard that every size passes: the
    ShapeEnv does not prove `2*(s//2) - 1 < s` by itself), so the symbolic kernel divides
    by 4 instead of counting each window's elements."""
    backend = KeepGraphs()
    compiled = stage4_fx.compile(halved, backend=backend)
    for side in (8, 10, 13):
        assert_same_as_eager(compiled, halved, torch.randn(1, 2, side, side))
    code = backend.graphs[1].symbolic
    assert code is not None, backend.graphs[1].per_size_reason
    assert "min_propagate_nan" not in code.source.replace(code.prelude, "")


# torch 2.11's ShapeEnv (the GPU machine's) guards these pooled sizes more narrowly than
# 2.13's: on the H200 an odd side after even ones compiled one more symbolic graph, every
# answer equal to eager's. Measured there, not explained yet: the counts below say so.
NEWER_SHAPE_ENV = torch.torch_version.TorchVersion(torch.__version__) >= (2, 13)


def pooled(x):
    return F.max_pool2d(x, 5, 2) + 1


def test_a_computed_size_the_trace_fixed_to_one_is_one():
    """Rows 5 and 6 pool to one row: the trace guarded `(s0 - 5)//2 + 1 == 1` (size 1 is
    static, as in torch), and the lowering asks the ShapeEnv, so its output is 1 row too,
    as eager's; 4 rows raise eager's error."""
    backend = KeepGraphs()
    compiled = stage4_fx.compile(pooled, backend=backend)
    for side in (9, 10, 13, 5, 6, 4):
        assert_same_as_eager(compiled, pooled, torch.randn(1, 2, side, side))
    kinds = [g.symbolic is not None for g in backend.graphs]
    if NEWER_SHAPE_ENV:
        assert kinds == [False, True, True]
    else:  # torch 2.11 (the GPU machine's) compiled five graphs here: as seen there
        assert kinds[:2] == [False, True] and kinds[-2:] == [True, True] and len(kinds) == 5


def pool_plus_every_other(x):
    return F.avg_pool2d(x, 2) + x[:, :, ::2, ::2]


def test_two_computed_sizes_the_trace_found_equal_are_one_symbol():
    """`s//2` and `(s + 1)//2` rows add only for even sizes: the trace guarded them equal,
    and the lowering, asking the ShapeEnv, names both `ps0`, so the shapes broadcast;
    odd sizes raise eager's error."""
    backend = KeepGraphs()
    compiled = stage4_fx.compile(pool_plus_every_other, backend=backend)
    for side in (8, 10, 12, 9, 14):
        assert_same_as_eager(compiled, pool_plus_every_other, torch.randn(1, 2, side, side))
    symbolic = backend.graphs[1].symbolic
    assert symbolic is not None, backend.graphs[1].per_size_reason
    assert "ps0 = (s" in symbolic.wrapper_source and "ps2" not in symbolic.wrapper_source


class ConvPoolNet(nn.Module):
    """A ResNet's shape in miniature: a stride-2 convolution, a max pool, a strided slice,
    an adaptive average pool and a linear head."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        x = self.pool(self.conv(x).relu())
        x = x[:, :, ::2] + x[:, :, 1::2].mean()
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


def test_a_conv_pool_net_at_five_image_sizes_compiles_twice_and_equals_eager():
    model = ConvPoolNet().eval()
    backend = KeepGraphs()
    compiled = stage4_fx.compile(model, backend=backend)
    with torch.no_grad():
        for side in (32, 36, 40, 48, 57):
            x = torch.randn(2, 3, side, side)
            torch.testing.assert_close(compiled(x), model(x))
    assert stage3_guards.counters.compiled == (2 if NEWER_SHAPE_ENV else 3)  # torch 2.11: 57
    symbolic = backend.graphs[1]
    assert symbolic.symbolic is not None, symbolic.per_size_reason
    assert {id(c) for c in symbolic.specializations.values()} == {id(symbolic.symbolic)}
    assert set(symbolic.symbolic.extern_names) == {"conv2d", "addmm"}  # the rest: our kernels


# Steps of random image programs: each a function of one 4-d tensor whose sizes are
# floor divisions of the input's (windows, strides, slices), adaptive windows, sizes scaled in
# floats, or pointwise between them.
STEPS = {
    "max_pool": lambda x: F.max_pool2d(x, 3, 2, 1),
    "max_pool_2": lambda x: F.max_pool2d(x, 2),
    "avg_pool": lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
    "avg_pool_ceil": lambda x: F.avg_pool2d(x, 2, ceil_mode=True),
    "every_other_row": lambda x: x[:, :, ::2],
    "every_third_column": lambda x: x[..., 1::3],
    "conv": lambda x: F.conv2d(x, torch.ones(2, 2, 3, 3) / 9, stride=2, padding=1),
    "relu_add": lambda x: x.relu() + x.sin(),
    "mean_keep": lambda x: x - x.mean((2, 3), keepdim=True),
    "adaptive": lambda x: F.adaptive_avg_pool2d(x, 1) * x[..., :1, :1],
    "adaptive_uneven": lambda x: F.adaptive_avg_pool2d(x, (3, 5)),
    "adaptive_max": lambda x: F.adaptive_max_pool2d(x, 4),
    "upsample": lambda x: F.interpolate(x, scale_factor=1.5, mode="bilinear"),
}


def program(names):
    def run(x):
        for name in names:
            x = STEPS[name](x)
        return x

    return run


@settings(max_examples=20, deadline=None)
# a view of a pooling's output: its snapshot's strides are `Max(1, rows)`, our buffer's
# rows; equal for every size, so the view is landed in eager's memory (with eager's strides)
@example(names=["every_other_row", "avg_pool", "every_other_row"], sides=[(9, 9), (9, 9)])
@given(
    names=st.lists(st.sampled_from(sorted(STEPS)), min_size=1, max_size=3),
    sides=st.lists(st.tuples(st.integers(9, 30), st.integers(9, 30)), min_size=2, max_size=4),
)
def test_random_image_programs_equal_eager_at_every_size(names, sides):
    stage4_fx.reset()
    fn = program(names)
    backend = KeepGraphs()
    compiled = stage4_fx.compile(fn, backend=backend)
    for h, w in [(8, 8), *sides]:
        assert_same_as_eager(compiled, fn, torch.randn(1, 2, h, w), atol=1e-5, rtol=1e-4)
    reasons = [g.per_size_reason for g in backend.graphs if g.per_size_reason]
    assert not reasons, reasons  # every symbolic graph compiled once for all its sizes
