"""bias_addmm.py on lowered graphs: `mm + bias` and `F.linear` as one addmm, into planned memory.

test_fusion.py checks the same rewrite through the whole backend (the wrapper's
`# addmm` lines, and results equal to eager's).
"""

from unittest import mock

import hypothesis.strategies as st
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings

import stage4_fx
from stage5_inductor_cpp import compile_fx as bias_addmm_compile
from stage5_inductor_cpp.graph_lowering import GraphLowering
from stage5_inductor_cpp.ir import ComputedBuffer, ExternKernel
from stage5_inductor_cpp.performance.bias_addmm import broadcasts_to
from stage5_inductor_cpp.rules import CPU_RULES
from tests.oracle import assert_same_as_eager
from tests.stage5.helpers import (
    as_python_function,
    check_both,
    check_lowered,
    check_traced,
    compile_traced,
)


def lowered(fn, *args) -> GraphLowering:
    return GraphLowering(torch.fx.symbolic_trace(fn), list(args)).run()


def externs(graph) -> list:
    return [b.target for b in graph.buffers if isinstance(b, ExternKernel)]


def test_the_product_becomes_an_addmm_after_its_bias():
    x, w, b = torch.randn(4, 3), torch.randn(3, 5), torch.randn(5)
    graph = lowered(lambda x, w, b: x @ w + b * 2, x, w, b)
    bias, addmm = graph.buffers
    assert isinstance(bias, ComputedBuffer)  # b * 2, computed first
    assert addmm.target is torch.addmm and addmm.name == "buf0"  # the product's own name
    assert [str(a) for a in addmm.args] == [bias.name, "arg0", "arg1"]
    assert str(graph.outputs) == "buf0"


def test_the_bias_may_come_first():
    x, w, b = torch.randn(4, 3), torch.randn(3, 5), torch.randn(4, 1)
    assert externs(lowered(lambda x, w, b: b + torch.mm(x, w), x, w, b)) == [torch.addmm]


def test_other_adds_and_other_ops_are_left_alone():
    x, w, b = torch.randn(4, 3), torch.randn(3, 5), torch.randn(5)
    assert externs(lowered(lambda x, w, b: x @ w - b, x, w, b)) == [torch.matmul]
    assert externs(lowered(lambda x, w, b: (x @ w).add(b, alpha=2), x, w, b)) == [torch.matmul]


def test_a_product_added_to_itself_is_no_addmm():
    """`y + y` read the library's own output as the bias before it was written (found by
    tests/stage5/test_memory_plan.py's random programs)."""
    x, w = torch.randn(4, 3), torch.randn(3, 5)
    assert externs(lowered(lambda x, w: (lambda y: y + y)(x @ w), x, w)) == [torch.matmul]
    check_traced(lambda x, w: (lambda y: y + y)(x @ w), x, w)


def test_a_bias_that_would_grow_the_product_does_not_broadcast_to_it():
    assert broadcasts_to((5,), (4, 5)) and broadcasts_to((4, 1), (4, 5))
    assert not broadcasts_to((2, 4, 5), (4, 5)) and not broadcasts_to((3,), (4, 5))


# --- F.linear: one addmm over the rows, into planned memory ----------------------------------

LINEARS = {  # name: (fn, args, the product's extern)
    "3d_bias": (F.linear, (torch.randn(2, 5, 8), torch.randn(6, 8), torch.randn(6)), "addmm"),
    "3d_no_bias": (F.linear, (torch.randn(2, 5, 8), torch.randn(6, 8)), "mm"),
    "2d_bias": (F.linear, (torch.randn(5, 8), torch.randn(6, 8), torch.randn(6)), "addmm"),
    "1d_input": (F.linear, (torch.randn(8), torch.randn(6, 8), torch.randn(6)), "addmm"),
    "transposed_2d": (
        lambda x, w: F.linear(x.t(), w),
        (torch.randn(8, 5), torch.randn(6, 8)),
        "mm",
    ),
    "computed_rows": (
        lambda x, w, b: F.linear(x.relu(), w, b).sin(),
        (torch.randn(3, 4, 8), torch.randn(6, 8), torch.randn(6)),
        "addmm",
    ),
}


@pytest.mark.parametrize("name", LINEARS)
def test_linear_is_one_product_over_the_rows(name):
    """`F.linear` is lowered as inductor decomposes it, and eager computes it on contiguous
    rows: `addmm(b, x.view(-1, k), w.t())`, seen again with x's leading dims."""
    fn, args, product = LINEARS[name]
    compiled = check_lowered(fn, *args, externs=(product,))
    assert compiled.last.extern_names == (product,)
    assert "out=buf" in compiled.code  # into memory the wrapper planned


def test_linear_of_rows_that_are_not_one_block_calls_torchs_linear():
    x, w = torch.randn(5, 2, 8).transpose(0, 1), torch.randn(6, 8)
    compiled = check_lowered(F.linear, x, w, externs=("linear",))
    assert compiled.last.extern_names == ("linear",)


@pytest.mark.parametrize(
    "args",
    [
        (torch.randn(2, 5, 8), torch.randn(6, 7)),  # the inner sizes differ
        (torch.randn(2, 5, 8), torch.randn(6, 8), torch.randn(4)),  # a bias of other length
        (torch.randn(5, 8), torch.randn(6, 8, dtype=torch.float64)),  # two dtypes
    ],
)
def test_linear_raises_eagers_error(args):
    assert_same_as_eager(compile_traced(F.linear), F.linear, *args)


def test_products_write_into_dead_buffers():
    """An `out=` product takes a dead buffer of its layout, as a kernel's output does; each
    sine writes over the product it reads (memory_plan.write_in_place): two buffers in all."""
    x, w = torch.randn(64, 64), torch.randn(64, 64) * 0.1

    def fn(x, w):
        for _ in range(3):
            x = (x @ w).sin()
        return x

    code = check_traced(fn, x, w).code
    assert "extern_buf2(buf1, arg1, out=buf2)" in code
    assert "buf4 = buf1; del buf1  # reuse" in code
    assert code.count("empty_strided") == 2


# --- sibling products: one input, several weights, one GEMM (on the GPU) --------------------


@pytest.fixture
def siblings_on_the_cpu(monkeypatch):
    """The rule runs on the GPU only; here it runs on the CPU's graphs too."""
    monkeypatch.setattr(CPU_RULES, "stack_sibling_products", True)


def qkv(x, wq, bq, wk, bk, wv, bv):
    q = F.linear(x, wq, bq).view(2, 5, 2, 4).transpose(1, 2)
    k, v = F.linear(x, wk, bk), F.linear(x, wv, bv)
    return q, k.sum(-1), v  # a view, a reduction, an output of eager's strides


def qkv_args(n_v=8):
    return [torch.randn(2, 5, 8), torch.randn(8, 8), torch.randn(8), torch.randn(8, 8),
            torch.randn(8), torch.randn(n_v, 8), torch.randn(n_v)]  # fmt: skip


@pytest.mark.parametrize("n_v", [8, 3])  # v may be narrower than q and k
def test_products_of_one_input_are_one_product_by_the_stacked_weights(siblings_on_the_cpu, n_v):
    args = qkv_args(n_v)
    assert externs(lowered(qkv, *args)) == [torch.addmm]  # one product, three slices of it
    check_traced(qkv, *args)


def test_sibling_products_without_biases_and_through_torch_compile(siblings_on_the_cpu):
    def glu(x, gate, up, down):  # Llama's MLP
        return F.linear(F.silu(F.linear(x, gate)) * F.linear(x, up), down)

    args = [torch.randn(6, 8), torch.randn(16, 8), torch.randn(16, 8), torch.randn(8, 16)]
    assert externs(lowered(glu, *args)) == [torch.mm, torch.mm]  # gate and up, then down
    check_both(glu, *args)


def handwritten_qkv(x, wq, bq, wk, bk, wv, bv):
    """The same attention products as `qkv`, written as a reader of the math would."""
    q = (x @ wq.t() + bq).view(2, 5, 2, 4).transpose(1, 2)
    k, v = x @ wk.T + bk, torch.matmul(x, wv.transpose(0, 1)) + bv
    return q, k.sum(-1), v


def conv1d_qkv(x, wq, bq, wk, bk):
    """GPT-2's `Conv1D`: `addmm(bias, rows, weight)` with an (in, out) weight."""
    rows = x.view(-1, 8)
    return torch.addmm(bq, rows, wq).relu(), torch.addmm(bk, rows, wk) * 2


def test_the_rule_is_the_product_not_its_spelling(siblings_on_the_cpu):
    """Products of one input by parameters' matrices stack however they are written:
    `x @ w.t()`, `x @ w.T`, `matmul(x, w.transpose(0, 1))`, and `addmm(b, x, w)` with an
    (in, out) weight, which is read transposed."""
    args = qkv_args(3)
    assert externs(lowered(handwritten_qkv, *args)) == [torch.mm]  # the adds are kernels
    check_traced(handwritten_qkv, *args)
    args = [
        torch.randn(2, 5, 8),
        torch.randn(8, 4),
        torch.randn(4),
        torch.randn(8, 6),
        torch.randn(6),
    ]
    assert externs(lowered(conv1d_qkv, *args)) == [torch.addmm]
    check_traced(conv1d_qkv, *args)


def test_a_training_graphs_decomposed_linears_stack_too(siblings_on_the_cpu):
    """In a training graph `linear` is `addmm(b, view(x), permute(w, [1, 0]))` (stage 4's
    aot.py): the forward's three products are one, and the gradients are eager's."""
    model = torch.nn.ModuleList(torch.nn.Linear(8, n) for n in (8, 8, 3))
    eager = __import__("copy").deepcopy(model)
    made = []

    def backend(gm, example_inputs):
        made.append(bias_addmm_compile(gm, example_inputs))
        return made[-1]

    fn = lambda layers, x: sum(layer(x).square().sum() for layer in layers)  # noqa: E731
    x = torch.randn(4, 8)
    loss = stage4_fx.compile(lambda x: fn(model, x), backend=backend)(x)
    torch.testing.assert_close(loss, fn(eager, x))
    loss.backward()
    fn(eager, x).backward()
    for ours, theirs in zip(model.parameters(), eager.parameters(), strict=True):
        torch.testing.assert_close(ours.grad, theirs.grad)
    forward = made[0].parts[0].last
    assert forward.extern_names.count("addmm") == 1, forward.extern_names


def written_between(make):
    """Two products of one view of `make(x)`, which is written between them."""

    def fn(x, w, b):
        y = make(x)
        rows = y.view(-1, 8)
        first = F.linear(rows, w, b)
        y.add_(1)
        return first + F.linear(rows, w, b)

    return fn


def sibling_cases():
    x, w, b = torch.randn(3, 8), torch.randn(4, 8), torch.randn(4)
    return {
        "one_with_a_bias": (lambda x, w, b: F.linear(x, w, b) + F.linear(x, w), [x, w, b]),
        "a_weight_written": (lambda x, w, b: F.linear(x, w, b) + F.linear(x, w.mul_(2), b),
                             [x, w, b]),
        "a_computed_weight": (lambda x, w, b: F.linear(x, w, b) + F.linear(x, w * 2, b),
                              [x, w, b]),
        "a_broadcast_bias": (lambda x, w, b: F.linear(x, w, b) + F.linear(x, w, b[:1]),
                             [x, w, b]),
        # a write between the products: the second reads its input after it
        "the_input_written_between": (written_between(lambda x: x), [x, w, b]),
        "an_intermediate_written_between": (written_between(lambda x: x * 1), [x, w, b]),
    }  # fmt: skip


@pytest.mark.parametrize("name", sibling_cases())
def test_products_that_cannot_share_a_gemm_stay_apart(siblings_on_the_cpu, name):
    fn, args = sibling_cases()[name]
    assert len(externs(lowered(fn, *[a.clone() for a in args]))) == 2
    check_traced(fn, *args)


def test_sibling_products_stay_apart_on_the_cpu():
    assert externs(lowered(qkv, *qkv_args())) == [torch.addmm] * 3


# Three spellings of one product: the rule stacks the product, not the call.
SPELLINGS = {
    "linear": (lambda x, w, b: F.linear(x, w, b), torch.addmm),
    "matmul_t": (lambda x, w, b: x @ w.t() + (0 if b is None else b), torch.mm),
    "addmm_rows": (
        lambda x, w, b: (
            torch.mm(x.reshape(-1, x.shape[-1]), w.T)
            if b is None
            else torch.addmm(b, x.reshape(-1, x.shape[-1]), w.T)
        ),
        torch.addmm,
    ),
}


@settings(max_examples=25, deadline=None)
@given(
    lead=st.lists(st.integers(1, 4), min_size=0, max_size=2),
    k=st.integers(1, 9),
    widths=st.lists(st.integers(1, 7), min_size=2, max_size=4),
    with_bias=st.booleans(),
    then=st.sampled_from(["sum", "views", "outputs"]),
    spelling=st.sampled_from(list(SPELLINGS)),
)
def test_random_sibling_products_equal_eager(lead, k, widths, with_bias, then, spelling):
    """Products of one input, of random widths, with or without biases, spelled as `linear`,
    `x @ w.t() + b` or `addmm(b, rows, w.T)`, their results read by a reduction, through
    views, or returned: one product, and eager's values and strides."""
    x = torch.randn(*lead, 3, k)
    params = [t for n in widths for t in [torch.randn(n, k)] + [torch.randn(n)] * with_bias]
    step = 2 if with_bias else 1
    product, stacked = SPELLINGS[spelling]

    def linears(x, *params):
        biases = params[1::step] if with_bias else [None] * len(widths)
        pairs = zip(params[::step], biases, strict=True)
        results = [product(x, w, b) for w, b in pairs]
        if then == "sum":
            return sum(r.sum(-1) for r in results)
        if then == "views":
            return [r.transpose(-1, -2) * 2 for r in results]
        return results

    fn = as_python_function(linears, 1 + len(params))
    with mock.patch.object(CPU_RULES, "stack_sibling_products", True):
        graph = GraphLowering(torch.fx.symbolic_trace(fn), [x, *params]).run()
        expected = stacked if with_bias else torch.mm
        assert externs(graph).count(expected) == 1, externs(graph)
        check_traced(fn, x, *params)
