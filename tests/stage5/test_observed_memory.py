"""Ops that read memory by its strides see eager's layout, whatever layout the kernels chose.

A producer makes a tensor that our kernels lay out otherwise than eager (a convolution's
channels-last image, a transposed sum stored contiguous, a slice of a computed value, a
linear's columns of a wider product); an optional view follows; then an observer reads
the memory (`as_strided`, `view(dtype)`, `data_ptr`), asks about the layout
(`stride()`), or takes a view whose validity depends on it (`view`). Each combination is
compared with eager by the oracle, and every output tensor must also sit in memory as
eager's does (its storage offset and the size of its storage: a caller can read both).
"""

from unittest import mock

import pytest
import torch
import torch.nn.functional as F
import torch.utils._pytree as pytree
from hypothesis import given, note
from hypothesis import strategies as st

import stage4_fx
import stage5_inductor_cpp
from stage5_inductor_cpp.rules import CPU_RULES
from tests.oracle import assert_same_as_eager
from tests.stage5.helpers import KeepGraphs, compile_traced, lowered

WEIGHT = torch.randn(3, 2, 1, 1)
W1, B1, W2, B2 = torch.randn(3, 4), torch.randn(3), torch.randn(3, 4), torch.randn(3)


@pytest.fixture(autouse=True, scope="module")
def sibling_products_on_the_cpu():
    """Stacked sibling products are a GPU rule (sibling_products.py): on here, for their
    columns."""
    with mock.patch.object(CPU_RULES, "stack_sibling_products", True):
        yield


def image():
    return torch.randn(2, 2, 3, 3)


def matrix():
    return torch.randn(4, 4)


# name -> (the producer, a maker of its input): each lays its result out otherwise than
# eager somewhere (ours is in the comment), or, for the input's view, exactly as eager.
PRODUCERS = {
    "conv": (lambda a: F.conv2d(a, WEIGHT), image),  # channels-last
    "conv_relu": (lambda a: F.conv2d(a, WEIGHT).relu(), image),  # channels-last
    "conv_permute_contiguous": (  # a copy of a channels-last image
        lambda a: F.conv2d(a, WEIGHT).permute(0, 2, 3, 1).contiguous(),
        image,
    ),
    "permute_contiguous": (lambda a: (a * 2).permute(0, 2, 3, 1).contiguous(), image),
    "channels_last_input": (  # eager: channels-last; ours, unstored, would be contiguous
        lambda a: a.to(memory_format=torch.channels_last) * 2,
        image,
    ),
    "transposed_sum": (lambda a: (a + 1).t(), matrix),  # a view of a contiguous base
    "pointwise_of_transposed": (lambda a: a.t() * 2, matrix),  # eager: strides (1, 4)
    "slice_of_computed": (lambda a: (a * 2)[:, 1:], matrix),  # eager: a view at offset 1
    "sibling_linear": (  # ours: the columns of one product of both weights
        lambda a: F.linear(a, W1, B1) + F.linear(a, W2, B2).sum(),
        matrix,
    ),
    "sibling_linear_of_one_row": (lambda a: F.linear(a[:1], W1, B1), matrix),
    "keepdim_sum": (lambda a: a.sum(1, keepdim=True), matrix),
    "input_transposed": (lambda a: a.t(), matrix),  # the input's memory, as in eager
    "input_sliced": (lambda a: a[1:], matrix),
}

VIEWS = {
    "none": lambda y: y,
    "transpose": lambda y: y.transpose(-1, -2),
    "slice": lambda y: y[1:],
    "unsqueeze": lambda y: y.unsqueeze(0),
    "split": lambda y: y.split(1)[-1],
}


def observers(y: torch.Tensor) -> dict:
    """name -> an observer of tensors shaped as eager's `y`, with sizes that fit it."""
    n = y.numel()
    return {
        "as_strided": lambda t: torch.as_strided(t, (2, n // 4), (1, 2)) + 0,
        "as_strided_offset": lambda t: t.as_strided((n // 2,), (1,), 1) * 1,
        "as_strided_returned": lambda t: t.as_strided((2, 2), (2, 1)),
        "as_strided_out_of_bounds": lambda t: t.as_strided((n,), (2,)) + 0,
        "as_strided_scatter": lambda t: torch.as_strided_scatter(
            t, torch.ones(n // 2), (n // 2,), (2,), 0
        ),
        "as_strided_in_place": lambda t: t.clone().as_strided_((n // 2,), (2,)) * 1,
        "view_as_int16": lambda t: t.view(torch.int16).view(torch.float32) * 1,
        "view_flat": lambda t: t.view(-1) * 1,
        "view_flat_returned": lambda t: t.view(-1),
        "unfold": lambda t: t.unfold(-1, 1, 1),
        "returned": lambda t: t,
        "returned_with_a_copy": lambda t: (t, t * 2),
    }


# Symbolic trace only (Dynamo's graphs break at them, or hold them as constants); a
# storage is not a tensor: its methods are called by name (`graph.MethodOf`).
TRACED_OBSERVERS = {
    "stride": lambda t: (t * 1, t.stride()),
    "is_contiguous": lambda t: (t * 1, t.is_contiguous()),
    "storage_offset": lambda t: (t * 1, t.storage_offset()),
    "data_ptr_distance": lambda t: (t * 1, t[-1:].data_ptr() - t.data_ptr()),
    "storage_bytes": lambda t: (t * 1, t.untyped_storage().nbytes()),
    "storage_start": lambda t: (t * 1, t.untyped_storage().data_ptr() - t.data_ptr()),
}


def memory_of(result) -> list:
    """Where each tensor of `result` lies in its storage, and how large that storage is."""
    return [
        (t.storage_offset(), t.untyped_storage().nbytes())
        for t in pytree.tree_leaves(result)
        if isinstance(t, torch.Tensor)
    ]


def program(producer: str, view: str, observe):
    make, example = PRODUCERS[producer]
    return (lambda a: observe(VIEWS[view](make(a)))), example()


def check_observed(fn, x):
    """The oracle, the outputs' memory, and that the graph ran as kernels: in torch only
    where eager raises, or where a view of memory laid out otherwise is read (the refusal
    of `layouts.land_read_memory`)."""
    run = compile_traced(fn)
    expected = assert_same_as_eager(run, fn, x)
    if expected is not None:
        reasons = run.state["compiled"].torch_reasons
        assert lowered(run.state)() or reasons, "nothing was compiled"
        assert all("reads the memory of" in r for r in reasons), reasons
        assert memory_of(run.state["result"]) == memory_of(expected)
    return run


def example_result(producer: str, view: str):
    make, example = PRODUCERS[producer]
    return VIEWS[view](make(example()))


@pytest.mark.parametrize("producer", PRODUCERS)
@pytest.mark.parametrize("observer", ["as_strided", "as_strided_offset", "view_as_int16"])
def test_each_producer_read_by_strides(producer, observer):
    observe = observers(example_result(producer, "none"))[observer]
    check_observed(*program(producer, "none", observe))


@given(
    producer=st.sampled_from(sorted(PRODUCERS)),
    view=st.sampled_from(sorted(VIEWS)),
    observer=st.sampled_from(sorted(observers(torch.empty(4)))),
)
def test_views_of_laid_out_values_read_by_strides(producer, view, observer):
    note(f"{producer} -> {view} -> {observer}")
    observe = observers(example_result(producer, view))[observer]
    check_observed(*program(producer, view, observe))


@pytest.mark.parametrize("observer", TRACED_OBSERVERS)
@pytest.mark.parametrize("producer", ["conv", "transposed_sum", "slice_of_computed"])
def test_layout_questions_and_storage_reads_get_eagers_answers(producer, observer):
    check_observed(*program(producer, "none", TRACED_OBSERVERS[observer]))


def test_as_strided_of_a_convolution_through_the_frontend():
    """The program that found it: eager's convolution is NCHW, ours channels-last."""

    def fn(a):
        return torch.as_strided(F.conv2d(a, WEIGHT), (3, 4), (4, 1)).clone()

    stage4_fx.reset()
    compiled = stage5_inductor_cpp.compile(fn)
    assert_same_as_eager(compiled, fn, torch.randn(1, 2, 2, 2))


def test_a_new_tensor_read_by_strides_is_stored_once_in_eagers_layout():
    """The image goes to memory NCHW for `as_strided`: one copy of the channels-last result."""
    run = check_observed(
        lambda a: F.conv2d(a, WEIGHT).as_strided((4,), (1,)) + 0, torch.randn(1, 2, 2, 2)
    )
    assert "empty_strided((1, 3, 2, 2), (12, 4, 2, 1)" in run.state["compiled"].code


def test_a_view_of_memory_laid_out_otherwise_runs_in_torch():
    """After an in-place write, an input's new values are in a buffer of ours until they are
    written back at the end: `as_strided` cannot read them where eager does. The graph runs
    in torch, and says why."""

    def fn(a):
        a.add_(1)
        return a[1:].as_strided((4,), (1,)) + 0

    run = check_observed(fn, matrix())
    assert any("reads the memory of" in r for r in run.state["compiled"].torch_reasons)


def test_a_call_into_torch_that_views_landed_memory_is_in_eagers_memory():
    """`unfold` calls torch, on the image landed NCHW: its view is eager's, read as it is."""
    run = check_observed(
        lambda a: F.conv2d(a, WEIGHT).unfold(-1, 2, 1).as_strided((4,), (1,)) + 0, image()
    )
    assert not run.state["compiled"].torch_reasons


@pytest.mark.parametrize(
    "fn",
    [
        lambda a: (a.t() * 2).as_strided((2, 2), (1, 2)) + 1,
        lambda a: (a + 1)[1:].view(torch.int32) + 0,
        lambda a: F.conv2d(a.view(1, 1, *a.shape), WEIGHT[:, :1]).as_strided((4,), (1,)) * 1,
    ],
)
def test_symbolic_sizes_read_by_strides(fn):
    """With symbolic sizes, eager's memory is compared as expressions (`sizes.same`): one
    code serves every size."""
    graphs = KeepGraphs()
    stage4_fx.reset()
    compiled = stage4_fx.compile(fn, backend=graphs, dynamic=True)
    for shape in [(4, 6), (5, 7), (6, 9)]:
        assert_same_as_eager(compiled, fn, torch.randn(shape))
    assert all(graph.symbolic is not None for graph in graphs.graphs), [
        graph.per_size_reason for graph in graphs.graphs
    ]


def test_an_output_is_alone_in_its_memory_as_eagers():
    """A linear's result is its columns of the product of both weights (bias_addmm.py): with
    one row, the strides are eager's, but the offset and the storage are not. The caller
    reads both after a graph break: the output is copied to memory of its own."""

    def fn(a):
        first, second = F.linear(a, W1, B1), F.linear(a, W2, B2)
        offsets = first.storage_offset(), second.storage_offset()  # a graph break
        return offsets, second.untyped_storage().nbytes(), second.as_strided((2,), (1,)) * 1

    stage4_fx.reset()
    graphs = KeepGraphs()
    assert_same_as_eager(stage4_fx.compile(fn, backend=graphs), fn, torch.randn(1, 4))
    assert all(not graph.torch_reasons for graph in graphs.graphs)
