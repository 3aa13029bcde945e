"""Graphs with symbolic sizes: what a backend gets, `dynamic=`, breaks, and eager as the oracle.

A graph compiled after a size changed carries symbols as torch's do: a SymInt
placeholder per symbol of an input's sizes (`s0`, read at each call from
`L['x'].size()[0]`), FakeTensors with symbolic sizes as the placeholders'
`meta["example_value"]`, and SymInts among the backend's example inputs.
"""

import contextlib
import io
import operator

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import stage3_guards
import stage4_fx
from stage5_inductor_cpp import compile_fx
from tests.oracle import assert_same_as_eager
from tests.stage4.test_properties import define, programs

pytestmark = pytest.mark.usefixtures("fresh_compiles")  # tests/conftest.py


class Recorder:
    """A backend that keeps what it was given and runs the graph as it is."""

    def __init__(self):
        self.graphs, self.inputs = [], []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        self.inputs.append(list(example_inputs))
        return gm.forward


def flatten_rows(x, n):
    y = x.view(x.size(0), -1) * n
    return torch.arange(x.size(0)) + y.sum(1), x.numel()


def test_the_graph_carries_symbols_as_torch_s_do():
    backend = Recorder()
    f = stage4_fx.compile(flatten_rows, backend=backend)
    for rows in (4, 5, 6):
        assert_same_as_eager(f, flatten_rows, torch.randn(rows, 3, 2), rows + 1)
    assert len(backend.graphs) == 2
    gm = backend.graphs[1]
    placeholders = [node for node in gm.graph.nodes if node.op == "placeholder"]
    symbol, x, n = placeholders
    assert symbol.name.startswith("s") and symbol.type is torch.SymInt
    assert (x.name, n.name, n.type) == ("l_x_", "l_n_", torch.SymInt)
    fake = x.meta["example_value"]
    assert isinstance(fake, torch._subclasses.FakeTensor)
    assert fake.shape[0] is not None and str(fake.shape[0]) == symbol.name
    assert list(fake.shape[1:]) == [3, 2] and fake.device == torch.device("cpu")
    assert isinstance(n.meta["example_value"], torch.SymInt)
    # the backend's example inputs: as torch passes them
    kinds = [torch.SymInt, torch.Tensor, torch.SymInt]
    assert [type(value) for value in backend.inputs[1]] == kinds
    assert "view = l_x_.view(" + symbol.name + ", -1)" in gm.code
    assert "torch.arange(" + symbol.name + ")" in gm.code


def test_equal_sizes_are_one_symbol_and_one_placeholder():
    def add(x, y):
        return (x.sin() + y).mean(dim=1)

    backend = Recorder()
    f = stage4_fx.compile(add, backend=backend)
    for cols in (8, 9, 10):
        assert_same_as_eager(f, add, torch.randn(6, cols), torch.randn(6, cols))
    placeholders = [n.name for n in backend.graphs[1].graph.nodes if n.op == "placeholder"]
    assert len(placeholders) == 3 and placeholders[1:] == ["l_x_", "l_y_"]
    with pytest.raises(RuntimeError):  # unequal sizes fail the guard and meet eager's error
        f(torch.randn(6, 9), torch.randn(6, 10))


def test_a_size_computed_inside_the_graph_is_a_sym_size_node():
    def last_rows(x):
        y = torch.cat([x, x])
        return y[: y.size(0) - 1]

    backend = Recorder()
    f = stage4_fx.compile(last_rows, backend=backend)
    for rows in (2, 3, 4):
        assert_same_as_eager(f, last_rows, torch.randn(rows, 3))
    targets = [node.target for node in backend.graphs[1].graph.nodes]
    assert torch.ops.aten.sym_size.int in targets and operator.sub in targets


def test_dynamic_true_makes_every_size_a_symbol_from_the_first_call():
    f = stage4_fx.compile(flatten_rows, backend="eager", dynamic=True)
    for rows, cols in ((4, 3), (5, 7), (9, 2)):
        assert_same_as_eager(f, flatten_rows, torch.randn(rows, cols, 2), cols)
    assert stage3_guards.counters.compiled == 1


def test_dynamic_false_never_makes_a_symbol():
    f = stage4_fx.compile(flatten_rows, backend="eager", dynamic=False)
    for rows in (4, 5, 6):
        assert_same_as_eager(f, flatten_rows, torch.randn(rows, 3, 2), 2)
    assert stage3_guards.counters.compiled == 3


def test_explain_shows_the_guards_of_a_marked_dim():
    x = torch.randn(4, 3, 2)
    stage4_fx.mark_dynamic(x, 0)
    explained = stage4_fx.explain(flatten_rows)(x, 2)
    shown = [str(guard) for guard in explained.out_guards]
    assert "SHAPE_ENV: L['x'].size()[0] >= 2" in shown
    assert any(s.startswith("local 'x' TENSOR_MATCH: float32, cpu, size=(s") for s in shown)


def test_explain_called_again_shows_the_recompile_and_its_new_symbol():
    explaining = stage4_fx.explain(flatten_rows)
    first = explaining(torch.randn(4, 3, 2), 2)
    assert first.recompile_reasons == [] and first.graph_count == 1
    second = explaining(torch.randn(5, 3, 2), 2)
    assert second.graph_count == 2
    assert second.recompile_reasons == [
        "size of local 'x' changed: expected (4, 3, 2), got (5, 3, 2); "
        "dim 0 of local 'x' is now dynamic"
    ]
    assert "Recompile Reasons:\n  size of local 'x' changed" in str(second)


def test_a_fresh_explain_per_call_sees_one_call_as_torch_s_does():
    stage4_fx.explain(flatten_rows)(torch.randn(4, 3, 2), 2)
    second = stage4_fx.explain(flatten_rows)(torch.randn(5, 3, 2), 2)
    assert (second.graph_count, second.recompile_reasons) == (1, [])
    assert "local 'x' TENSOR_MATCH: float32, cpu, size=(5, 3, 2), stride=(6, 2, 1)" in [
        str(guard) for guard in second.out_guards
    ]


def test_a_symbolic_size_lives_across_a_graph_break():
    def with_print(x):
        n = x.size(0) * 2
        print("rows:", x.size(0))  # a graph break: n goes to the resume function as an int
        return x.reshape(n, -1).sum(1)

    f = stage4_fx.compile(with_print, backend="eager")
    for rows in (2, 3, 4, 5, 6):
        assert_same_as_eager(f, with_print, torch.randn(rows, 4))
    caches = list(f.options.caches.values())
    assert all(len(cache.entries) <= 2 for cache in caches), [c.recompile_reasons for c in caches]


def test_sizes_returned_to_the_caller_are_ints():
    def sizes(x):
        return x.shape, x.size(0) * 2, x.sum(0)

    f = stage4_fx.compile(sizes, backend="eager")
    for rows in (2, 3, 4):
        result = f(torch.randn(rows, 5))
        assert result[0] == torch.Size([rows, 5]) and type(result[0]) is torch.Size
        assert result[1] == rows * 2 and type(result[1]) is int
    assert stage3_guards.counters.compiled == 2


def test_our_inductor_is_right_on_a_dynamic_graph():
    def rows_sum(x, y):
        return (x * 2).sum(0) + y, x.size(0) * 3

    f = stage4_fx.compile(rows_sum, backend=compile_fx)
    for rows in (2, 3, 5, 8):
        assert_same_as_eager(f, rows_sum, torch.randn(rows, 4), torch.randn(4))
    assert stage3_guards.counters.compiled == 2


def test_torch_s_inductor_by_object_compiles_the_symbolic_graph():
    from torch._inductor.compile_fx import compile_fx as torch_compile_fx

    def rows_sum(x, y):
        return (x * 2).sum(0) + y

    f = stage4_fx.compile(rows_sum, backend=torch_compile_fx)
    for rows in (2, 3, 5):
        assert_same_as_eager(f, rows_sum, torch.randn(rows, 4), torch.randn(4))
    assert stage3_guards.counters.compiled == 2


# --- eager is the oracle, over random sizes ----------------------------------------------


def pointwise_and_reduce(x):
    return torch.relu(x * 2 - 1).sum(-1) / x.size(-1)


def view_by_sizes(x):
    b, t = x.shape[0], x.shape[1]
    return x.reshape(b * t, -1).mean(0) + torch.arange(t).sum()


def slices_and_cat(x):
    half = x.size(0) // 2
    return torch.cat([x[:half], x[half:] * 2], dim=0)[:, 1:]


def branch_on_size(x):
    if x.size(1) >= 4:
        return x[:, :4].softmax(-1)
    return x.new_zeros(x.size(0), 4) + x.sum()


PROGRAMS = [pointwise_and_reduce, view_by_sizes, slices_and_cat, branch_on_size]


@given(
    st.sampled_from(PROGRAMS),
    st.lists(st.tuples(st.integers(1, 9), st.integers(2, 7)), min_size=2, max_size=6),
)
def test_symbolic_graphs_equal_eager_over_random_sizes(program, sizes):
    stage4_fx.reset()
    f = stage4_fx.compile(program, backend="eager")
    for rows, cols in sizes:
        assert_same_as_eager(f, program, torch.randn(rows, cols, 3))
    assert stage3_guards.counters.eager == 0


@given(
    programs(),
    st.lists(st.tuples(st.integers(1, 6), st.integers(0, 10)), min_size=3, max_size=5),
)
def test_random_programs_match_eager_as_sizes_and_ints_change(source, calls):
    """Stage 4's random programs (breaks, resume functions, closures, loops over `n`), called
    with changing row counts and ints: symbols cross breaks as ints, and eager is the oracle."""
    stage4_fx.reset()
    program = define(source)
    compiled = stage4_fx.compile(program)
    with contextlib.redirect_stdout(io.StringIO()):
        for rows, n in calls:
            x = torch.randn(rows, 3, generator=torch.Generator().manual_seed(n))
            assert_same_as_eager(compiled, program, x, n)


@given(st.lists(st.integers(2, 64), min_size=3, max_size=12))
def test_sizes_from_two_up_compile_at_most_twice(rows):
    stage4_fx.reset()
    f = stage4_fx.compile(view_by_sizes, backend="eager")
    for n in rows:
        assert_same_as_eager(f, view_by_sizes, torch.randn(n, 3, 2))
    assert stage3_guards.counters.compiled <= 2


SIZE_EXPRESSIONS = {
    "len": lambda x: x * len(x),
    "shape_numel": lambda x: x * x.shape.numel(),
    "unpack_shape": lambda x: (lambda b, t, c: x.reshape(b * t, c))(*x.shape),
    "shape_slice": lambda x: x.view(*x.shape[:-1], 2, -1),
    "max_min": lambda x: x[: max(x.size(0) // 2, 2)] * min(x.size(0), 3),
    "int_float": lambda x: x[: int(x.size(0) / 2)] * float(x.size(0)),
    "size_compare": lambda x: x + 1 if x.shape[0] > 1 else x,
    "numel_mean": lambda x: x.sum() / x.numel(),
    "zeros_like_shape": lambda x: torch.zeros(x.shape) + x.new_ones(x.size(0), 1, 1),
    "sym_size_of_intermediate": lambda x: x.flatten(1)[:, : x.flatten(1).size(1) - 1],
}


@pytest.mark.parametrize("name", SIZE_EXPRESSIONS)
def test_size_expressions_stay_symbolic(name):
    program = SIZE_EXPRESSIONS[name]
    f = stage4_fx.compile(program, backend="eager")
    for rows in (4, 5, 6, 9):
        assert_same_as_eager(f, program, torch.randn(rows, 3, 4))
    assert stage3_guards.counters.compiled == 2
    assert not f.options.breaks


def test_a_size_read_from_a_tensor_is_a_break_also_when_sizes_are_symbols():
    """`x.view(n, -1)` with `n` a 0-d tensor reads its data (`__index__`). torch gives such an
    input's FakeTensor a symbol for its value, which no guard here reads: left in, the trace
    used it and the guards named a symbol with no source (an internal error, on Longformer).
    Both with and without symbols, it is a break, and the answers are eager's."""

    def fn(x, n):
        return x.view(n, -1) * 2

    compiled = stage4_fx.compile(fn, backend="eager")
    for rows, cols in ((4, 6), (2, 10), (6, 4)):
        x, n = torch.randn(rows, cols), torch.tensor(rows // 2)
        assert_same_as_eager(compiled, fn, x, n)
    assert compiled.options.breaks and all(
        b.kind == "item_call" for b in compiled.options.breaks
    ), compiled.options.breaks


def test_a_torch_op_of_numbers_makes_a_tensor_in_the_graph():
    """`torch.div(n, 4, rounding_mode="trunc")` of ints (Longformer's chunk count) makes a
    0-d tensor, as eager does: recorded, with `n` a symbol once it changes; a function of
    numbers that is not a pointwise op (`torch.manual_seed`) is still a break."""

    def fn(x, n):
        chunks = torch.div(n, 4, rounding_mode="trunc") - 1
        return x * chunks + torch.exp(torch.div(3.0, 2))

    compiled = stage4_fx.compile(fn, backend=compile_fx, fullgraph=True)
    for n in (10, 13, 21):
        assert_same_as_eager(compiled, fn, torch.ones(3), n)

    def seeds(x):
        torch.manual_seed(0)
        return x + 1

    report = stage4_fx.explain(seeds)(torch.ones(2))
    assert report.graph_break_count == 1
