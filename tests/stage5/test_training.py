"""Training through our kernels: the joint graph, its partition, and both graphs compiled.

Eager is the oracle for the outputs, the gradients and the inputs' writes (BatchNorm's
running statistics); the compiled forward and backward must both have made kernels.
"""

import copy

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import stage4_fx
from stage4_fx.training.aot import partition, trace_joint
from stage5_inductor_cpp import compile_fx
from stage5_inductor_cpp.training.aten import DECOMPOSITIONS
from tests.stage5.helpers import KeepGraphs


def twins(*tensors):
    """Two independent copies of each argument, keeping requires_grad."""
    return tuple(
        [t.detach().clone().requires_grad_(t.requires_grad) for t in tensors] for _ in range(2)
    )


def check_training(fn, *args, compiled=None):
    """Outputs, gradients of a random projection of them, and arguments equal eager's.
    Returns the compiled graph."""
    ours, eager = twins(*args)
    compiled = compiled or compile_fx(torch.fx.symbolic_trace(fn), ours)
    actual, expected = compiled(*ours), fn(*eager)
    actual = actual if isinstance(actual, (list, tuple)) else [actual]
    expected = expected if isinstance(expected, (list, tuple)) else [expected]
    torch.testing.assert_close(list(actual), list(expected))
    weights = [torch.randn_like(e) for e in expected]
    if not any(e.requires_grad for e in expected):
        return compiled
    sum((a * w).sum() for a, w in zip(actual, weights, strict=True) if a.requires_grad).backward()
    sum((e * w).sum() for e, w in zip(expected, weights, strict=True) if e.requires_grad).backward()
    for a, e in zip(ours, eager, strict=True):
        # Gradients through exp reach hundreds, and eager's own float32 error (against
        # float64) reaches 4e-4 of the largest, ours too: a tolerance per element fails both.
        scale = max(e.grad.abs().max().item(), 1.0) if e.grad is not None else 1.0
        torch.testing.assert_close(a.grad, e.grad, rtol=1e-3, atol=1e-3 * scale)
        torch.testing.assert_close(a.detach(), e.detach())
    return compiled


def both_compiled(compiled):
    forward, backward = compiled.parts
    assert forward.last.kernel_names and backward.last.kernel_names
    assert compiled.torch_reasons == []


def mlp(x, w, b):
    return F.gelu(x @ w + b).sum(-1)


def conv_block(inplace: bool):
    """conv, BatchNorm, ReLU, conv in training mode; its eager twin, an image, and the model
    compiled by the frontend with stage 5 (the compiled graphs are in `made`)."""
    model = torch.nn.Sequential(
        torch.nn.Conv2d(4, 8, 3, padding=1, bias=False), torch.nn.BatchNorm2d(8),
        torch.nn.ReLU(inplace=inplace), torch.nn.Conv2d(8, 4, 3, padding=1, bias=False),
    ).train()  # fmt: skip
    eager = copy.deepcopy(model)
    made = KeepGraphs()
    return (
        model,
        eager,
        torch.randn(2, 4, 16, 16),
        made.graphs,
        stage4_fx.compile(model, backend=made),
    )


def test_the_joint_graph_splits_into_forward_and_backward_both_compiled():
    x, w, b = torch.randn(8, 4), torch.randn(4, 6, requires_grad=True), torch.randn(6)
    both_compiled(check_training(mlp, x, w, b.requires_grad_()))


def test_cheap_pointwise_values_are_recomputed_not_saved():
    def fn(x, w):
        return (x @ w).relu().sin() * 2

    x, w = torch.randn(8, 4), torch.randn(4, 6, requires_grad=True)
    joint = trace_joint(torch.fx.symbolic_trace(fn), [x, w], DECOMPOSITIONS, training=True)
    parts = partition(joint)
    # the backward needs relu's output (for sin's and relu's gradients): it saves the
    # product instead, as large, and computes relu again; the weight's gradient reads x
    assert parts.saved == ["primals_1", "mm"]
    assert "relu" in parts.recomputed
    check_training(fn, x, w)


def test_a_value_a_product_reads_in_the_backward_is_saved_not_recomputed():
    """The weight's gradient of `gelu(x @ w1) @ w2` multiplies GELU's output: the backward
    writes it to memory either way, so it is saved rather than computed a second time
    (GPT-2's backward computed its tanh GELU three times). GELU's input stays saved for
    GELU's own gradient."""

    def fn(x, w1, w2):
        return F.gelu(x @ w1) @ w2

    x, w1, w2 = torch.randn(8, 4), torch.randn(4, 6), torch.randn(6, 3, requires_grad=True)
    joint = trace_joint(torch.fx.symbolic_trace(fn), [x, w1, w2], DECOMPOSITIONS, training=True)
    parts = partition(joint)
    assert "gelu" in parts.saved and "gelu" not in parts.recomputed
    check_training(fn, x, w1, w2)


def test_inputs_that_do_not_require_grad_get_none():
    x, w, b = torch.randn(8, 4), torch.randn(4, 6, requires_grad=True), torch.randn(6)
    compiled = check_training(mlp, x, w, b)
    both_compiled(compiled)


def test_outputs_that_are_inputs_or_views_of_them_share_their_memory():
    def fn(x, w):
        return x, w.t(), (x * w).sum()

    x, w = torch.randn(3, 3, requires_grad=True), torch.randn(3, 3, requires_grad=True)
    compiled = compile_fx(torch.fx.symbolic_trace(fn), [x, w])
    out = compiled(x, w)
    assert out[0] is x and out[1].untyped_storage().data_ptr() == w.untyped_storage().data_ptr()
    check_training(fn, x, w)


def test_an_unused_outputs_gradient_stays_none_as_in_eager():
    def fn(x, w, v):
        return x @ w, x @ v

    x = torch.randn(2, 3)
    w, v = torch.randn(3, 3, requires_grad=True), torch.randn(3, 3, requires_grad=True)
    compiled = compile_fx(torch.fx.symbolic_trace(fn), [x, w, v])
    compiled(x, w, v)[0].sum().backward()
    assert w.grad is not None and v.grad is None


def test_batch_norm_in_training_writes_its_running_stats_as_eager():
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU())
    eager = __import__("copy").deepcopy(model)
    compiled = stage4_fx.compile(model, backend=compile_fx)
    x = torch.randn(16, 4)
    for _ in range(2):
        torch.testing.assert_close(compiled(x), eager(x))
        compiled(x).sum().backward()
        eager(x).sum().backward()
    for (name, ours), theirs in zip(
        model.state_dict().items(), eager.state_dict().values(), strict=False
    ):
        torch.testing.assert_close(ours, theirs, msg=name)
    for ours, theirs in zip(model.parameters(), eager.parameters(), strict=True):
        torch.testing.assert_close(ours.grad, theirs.grad)


def test_written_inputs_are_copied_back_in_one_call_per_dtype(monkeypatch):
    """Two batch norms write six statistics (four float, two int64 counts): the runtime
    copies them back with one `_foreach_copy_` per dtype, not one copy each."""
    model = torch.nn.Sequential(torch.nn.BatchNorm1d(4), torch.nn.BatchNorm1d(4))
    eager = copy.deepcopy(model)
    compiled = stage4_fx.compile(model, backend=compile_fx)
    x = torch.randn(8, 4, requires_grad=True)
    compiled(x).sum().backward()  # compiles; the next call is counted
    eager(x).sum().backward()
    calls = []
    foreach_copy = torch._foreach_copy_
    monkeypatch.setattr(
        torch,
        "_foreach_copy_",
        lambda into, new: calls.append(len(into)) or foreach_copy(into, new),
    )
    compiled(x).sum().backward()
    eager(x).sum().backward()
    assert sorted(calls) == [2, 4]
    for (name, ours), theirs in zip(
        model.state_dict().items(), eager.state_dict().values(), strict=True
    ):
        torch.testing.assert_close(ours, theirs, msg=name)


def saved_bytes(fn, *args) -> int:
    """The bytes autograd saves for backward while `fn` runs (distinct tensors)."""
    storages = {}

    def pack(tensor):
        storages[tensor.data_ptr()] = tensor.nelement() * tensor.element_size()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*args)
    return sum(storages.values())


def test_no_grad_and_inference_mode_run_the_forward_kernels_and_save_nothing():
    x, w, b = torch.randn(8, 4), torch.randn(4, 6, requires_grad=True), torch.randn(6)
    compiled = compile_fx(torch.fx.symbolic_trace(mlp), [x, w, b])
    for mode in (torch.no_grad, torch.inference_mode):
        with mode():
            assert saved_bytes(compiled, x, w, b) == 0
            torch.testing.assert_close(compiled(x, w, b), mlp(x, w, b))
    assert compiled.parts == [] and compiled.last.kernel_names  # the graph's own kernels
    assert 0 < saved_bytes(compiled, x, w, b) <= saved_bytes(mlp, x, w, b)


def test_batch_norm_saves_its_input_alone_less_than_eager():
    # BatchNorm's forward makes `x - mean` and `(x - mean) * rstd`, each as large as x, and
    # its decomposed backward reads both, and ReLU's output made from them: recomputed from
    # the convolution's output and two statistics, the block keeps one activation where
    # eager keeps two (BatchNorm's input, ReLU's output)
    model, eager, x, made, compiled = conv_block(inplace=True)
    compiled(x)  # compiles
    (plan,) = made[0].training.plans.values()
    saved = list(plan.parts.forward.graph.nodes)[-1].args[0][-plan.num_saved :]
    large = [n.name for n in saved if n.op != "placeholder" and n.meta["val"].numel() > 8]
    assert large == ["convolution"]
    assert saved_bytes(compiled, x) < saved_bytes(eager, x)
    compiled(x).square().sum().backward()
    eager(x).square().sum().backward()
    for ours, theirs in zip(model.parameters(), eager.parameters(), strict=True):
        torch.testing.assert_close(ours.grad, theirs.grad, rtol=1e-4, atol=1e-4)


def test_convolutions_train_channels_last_with_eagers_gradients():
    # As in inference (layouts.py), images between convolutions are stored channels-last,
    # in the backward too; the saved convolution output, which only the backward reads,
    # stays so, while the output the caller sees has eager's strides
    model, eager, x, made, compiled = conv_block(inplace=False)
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        out = compiled(x)
    assert out.is_contiguous() and out.stride() == eager(x).stride()
    images = [t for t in saved if not t.is_meta and t.shape == (2, 8, 16, 16)]
    assert images and all(t.is_contiguous(memory_format=torch.channels_last) for t in images)
    out.square().sum().backward()
    eager(x).square().sum().backward()
    forward, backward = made[0].parts
    assert "conv2d" in forward.last.wrapper_source
    assert "convolution_backward" in backward.last.wrapper_source
    for ours, theirs in zip(model.parameters(), eager.parameters(), strict=True):
        torch.testing.assert_close(ours.grad, theirs.grad, rtol=1e-4, atol=1e-4)


def test_equal_outputs_stay_two_tensors_as_in_eager():
    def fn(x):
        return x.sin(), x.sin()

    x = torch.randn(4, requires_grad=True)
    compiled = compile_fx(torch.fx.symbolic_trace(fn), [x])
    a, b = compiled(x)
    assert a.data_ptr() != b.data_ptr()  # a write into one must not show in the other
    check_training(fn, x, compiled=compiled)


def test_requires_grad_changing_between_calls_gives_eagers_gradients():
    compiled = stage4_fx.compile(mlp, backend=compile_fx)
    x, w, b = torch.randn(8, 4), torch.randn(4, 6), torch.randn(6)
    for needs in [(False, True, False), (True, False, True), (False, False, False)]:
        args = [t.detach().clone().requires_grad_(n) for t, n in zip((x, w, b), needs, strict=True)]
        check_training(mlp, *args, compiled=compiled)


def test_double_backward_is_a_clear_error():
    x = torch.randn(5, requires_grad=True)
    compiled = compile_fx(torch.fx.symbolic_trace(lambda a: (a.sin() * a).sum()), [x])
    with pytest.raises(RuntimeError, match="double backward through a compiled graph"):
        torch.autograd.grad(compiled(x), x, create_graph=True)
    (grad,) = torch.autograd.grad(compiled(x), x)
    torch.testing.assert_close(grad, x.detach().cos() * x.detach() + x.detach().sin())


UNARY = {"sin": torch.sin, "relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid,
         "square": torch.square, "gelu": F.gelu, "exp_neg": lambda v: torch.exp(-v)}  # fmt: skip
REDUCE = {
    "sum": lambda v: v.sum(-1),
    "mean": lambda v: v.mean(0),
    "softmax": lambda v: v.softmax(-1),
}


@settings(max_examples=10, deadline=None)
@given(
    st.lists(st.sampled_from(sorted(UNARY)), min_size=1, max_size=4),
    st.sampled_from(sorted(REDUCE)),
    st.booleans(),
)
def test_random_programs_train_as_eager(unary, reduce, x_requires_grad):
    def fn(x, w):
        value = x @ w
        for name in unary:
            value = UNARY[name](value) + value
        return REDUCE[reduce](value)

    x, w = torch.randn(6, 5), torch.randn(5, 4, requires_grad=True)
    check_training(fn, x.requires_grad_(x_requires_grad), w)


def test_a_cast_with_a_device_in_a_training_graph_is_compiled():
    """RoBERTa's position ids: casts of the ids, which the ATen graph writes as
    `_to_copy(x, dtype=..., device=cpu)`. The extern's meta run puts the result on the meta
    device too (it asked torch to copy a meta tensor to the CPU, and the graph ran in
    torch)."""

    def positions(ids, table):
        mask = ids.ne(1).int()
        return F.embedding((torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + 1, table)

    ids, table = torch.randint(0, 9, (2, 6)), torch.randn(20, 4)
    backend = KeepGraphs()
    compiled = stage4_fx.compile(positions, backend=backend)
    ours, theirs = table.clone().requires_grad_(), table.clone().requires_grad_()
    compiled(ids, ours).square().sum().backward()
    positions(ids, theirs).square().sum().backward()
    torch.testing.assert_close(ours.grad, theirs.grad)
    assert [reason for g in backend.graphs for reason in g.torch_reasons] == []


def test_a_traced_graph_run_in_torch_gets_its_inputs_in_the_traced_strides():
    """A make_fx graph recorded `view` for the strides it was traced with. Run in torch (here
    by `runs_in_torch`, as when our compiler gives up on a training graph) with an input in
    other strides, such as a saved channels-last image from our compiled forward, the input
    is copied into the traced strides first; torch's `view` would raise otherwise."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from stage5_inductor_cpp.backend import runs_in_torch

    gm = make_fx(lambda x: x.view(-1) * 2, tracing_mode="fake")(torch.randn(2, 3, 4, 5))
    image = torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    with pytest.raises(RuntimeError, match="view"):
        gm(image)
    torch.testing.assert_close(runs_in_torch(gm, "a reason").call([image]), image.reshape(-1) * 2)


def test_a_convolution_flattened_into_a_linear_layer_trains_in_our_kernels():
    """The ATen trace views the convolution's output as the fake tensors lay it out
    (contiguous); the CPU's convolution of one channel returns it channels-last, where no
    view of it exists. A view in a functional graph is a reshape (training/aten.py): the
    graph ran in torch before ("view size is not compatible")."""
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
        torch.nn.Linear(144, 4),
    )  # fmt: skip
    eager = copy.deepcopy(model)
    keep = KeepGraphs()
    x = torch.randn(8, 1, 6, 6)
    out = stage4_fx.compile(model, backend=keep)(x)
    torch.testing.assert_close(out, eager(x))
    out.square().sum().backward()
    eager(x).square().sum().backward()
    for ours, theirs in zip(model.parameters(), eager.parameters(), strict=True):
        torch.testing.assert_close(ours.grad, theirs.grad, rtol=1e-4, atol=1e-4)
    (graph,) = keep.graphs
    both_compiled(graph)


def rotate_half(x, w):
    """Llama's rotary embedding rotates halves: slices forward, slice_scatter backward."""
    h = x @ w
    half = h.shape[-1] // 2
    return h * 0.5 + torch.cat((-h[..., half:], h[..., :half]), dim=-1) * 2


def test_slices_and_their_backward_train_in_our_kernels():
    """The ATen trace writes a slice as aten.slice and its gradient as aten.slice_scatter:
    basic indexing and a pointwise lowering (training/aten.py), not calls into torch."""
    compiled = check_training(rotate_half, torch.randn(4, 6, requires_grad=True), torch.randn(6, 8))
    both_compiled(compiled)
    externs = [name for part in compiled.parts for name in part.last.extern_names]
    assert externs == ["mm", "mm"]  # the product, and x's gradient


def embed(ids, table, w):
    return F.embedding(ids, table) @ w


def test_an_embeddings_gradient_is_torchs_own_call_not_an_index_put():
    """Torch's decomposition of an embedding's backward accumulates with `index_put`,
    which the CPU runs on one thread: 1.3 ms of a BERT step where the op took 0.05. The
    forward's lookup is a kernel (a gather), as in inference."""
    ids = torch.tensor([[1, 5, 1, 0], [7, 5, 5, 2]])
    table, w = torch.randn(10, 6, requires_grad=True), torch.randn(6, 3)
    compiled = check_training(embed, ids, table, w)
    externs = [name for part in compiled.parts for name in part.last.extern_names]
    assert sorted(externs) == ["check_indices", "embedding_dense_backward.default", "mm", "mm"]


def write_first_row(h, v):
    h[0] = v  # wav2vec2's SpecAugment writes its mask's rows so, after a graph break
    return h * 2


def test_a_graph_that_writes_into_a_computed_input_runs_in_torch_and_says_why():
    """An input that autograd made (not a leaf) may be written in place, as eager allows;
    the first trace's stand-in for it was a leaf, and raised where eager did not."""
    x, v = torch.randn(4, 3, requires_grad=True), torch.randn(3)
    twin = x.detach().clone().requires_grad_()
    keep = KeepGraphs(compile_fx)
    actual = stage4_fx.compile(write_first_row, backend=keep)(x * 1, v)
    expected = write_first_row(twin * 1, v)
    torch.testing.assert_close(actual, expected)
    actual.sum().backward()
    expected.sum().backward()
    torch.testing.assert_close(x.grad, twin.grad)
    (graph,) = keep.graphs
    assert graph.torch_reasons == ["the graph writes into an input that requires grad"]
