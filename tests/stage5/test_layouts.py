"""Outputs as eager returns them: strides and memory format, and memory shared with inputs.

`check_traced` compares every output's strides with eager's (`assert_same_strides`);
`assert_same_sharing` checks which outputs are the memory of an input, in eager and here.
"""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from stage5_inductor_cpp import compile_fx
from stage5_inductor_cpp.graph_lowering import GraphLowering
from stage5_inductor_cpp.ir import ExternKernel, Layout
from stage5_inductor_cpp.performance.memory_plan import same_memory
from stage5_inductor_cpp.rules import CPU_RULES
from tests.stage5.helpers import check_lowered, check_torch_compile, check_traced, compile_traced

x = torch.randn(4, 5)
image = torch.randn(2, 3, 4, 5)
channels_last = image.to(memory_format=torch.channels_last)


def expensive(a):
    """Dear enough that a value read twice gets a buffer of its own (graph.REUSE_COST)."""
    for _ in range(25):
        a = a * 1.01
    return a


# name -> (function, arguments)
STRIDES = {
    "permute_of_computed": (lambda a: (a * 2).permute(1, 0), [x]),
    "transpose_then_clone": (lambda a: a.t().clone(), [x]),
    "clone_then_transpose": (lambda a: a.clone().t(), [x]),
    "pointwise_of_transposed": (lambda a: a.t() * 1, [x]),
    "slice_of_computed": (lambda a: (a * 2)[:, ::2], [x]),
    "expand_of_computed": (lambda a: (a[:1] * 2).expand(3, 5), [x]),
    "unsqueeze_of_input": (lambda a: a.unsqueeze(1), [x]),
    "output_and_its_view": (lambda a: ((a * 2), (a * 2).t()), [x]),
    "value_and_its_view": (lambda a: (lambda y: (y, y.t(), y[1:]))(a.exp()), [x]),
    "reused_and_returned": (lambda a: (lambda y: (y.t(), y.sum()))(expensive(a.t())), [x]),
    "channels_last_pointwise": (lambda a: a.sin() + 1, [channels_last]),
    "channels_last_and_contiguous": (lambda a, b: a * b, [channels_last, image]),
    "channels_last_reduction": (lambda a: a.sum(2), [channels_last]),
    "channels_last_softmax": (lambda a: a.softmax(1), [channels_last]),
    "to_channels_last": (lambda a: (a * 2).to(memory_format=torch.channels_last), [image]),
    "contiguous_channels_last": (
        lambda a: a.contiguous(memory_format=torch.channels_last) + 0,
        [image],
    ),
    "clone_channels_last": (lambda a: a.clone(memory_format=torch.channels_last), [image]),
    "channels_last_to_contiguous": (lambda a: a.contiguous(), [channels_last]),
    # eager's floor of integers copies (ours is the identity): the slice views new memory
    "slice_of_an_identity_op": (lambda a: a.floor()[::2], [torch.arange(4)]),
}


@pytest.mark.parametrize("name", STRIDES)
def test_outputs_have_eagers_strides(name):
    fn, args = STRIDES[name]
    check_lowered(fn, *args)


@pytest.mark.parametrize("name", ["permute_of_computed", "channels_last_pointwise"])
def test_outputs_have_eagers_strides_through_torch_compile(name):
    check_torch_compile(*STRIDES[name][:1], *STRIDES[name][1])


def outputs_sharing(fn, args) -> list[list[bool]]:
    """For each output tensor: whether it is in the memory of each argument."""
    result = fn(*args)
    outputs = result if isinstance(result, tuple) else (result,)
    return [
        [o.untyped_storage().data_ptr() == a.untyped_storage().data_ptr() for a in args]
        for o in outputs
    ]


def assert_same_sharing(fn, *args):
    run = compile_traced(fn)
    run(*args)  # compiles
    assert outputs_sharing(run, args) == outputs_sharing(fn, args)


# An output is an input's memory here exactly when it is in eager, and holds its values.
SHARING = {
    "to_same_dtype": lambda a: a.to(torch.float32),
    "to_copy": lambda a: a.to(torch.float32, copy=True),
    "to_copy_by_position": lambda a: a.to(torch.float32, False, True),
    "float_of_float": lambda a: a.float(),
    "contiguous_of_contiguous": lambda a: a.contiguous(),
    "clone": lambda a: a.clone(),
    "detach": lambda a: a.detach(),
    "view": lambda a: a.view(20),
    "to_channels_last": lambda a: a.view(1, 4, 5, 1).to(memory_format=torch.channels_last),
    "reshape_of_transposed": lambda a: a.t().reshape(20),
}


@pytest.mark.parametrize("name", SHARING)
def test_outputs_share_memory_with_inputs_as_in_eager(name):
    check_lowered(SHARING[name], x, externs=("detach",))
    assert_same_sharing(SHARING[name], x)


def test_a_buffer_an_extern_returns_is_not_reused():
    """`detach` returns its argument's memory: that buffer must not take another value."""

    def fn(a):
        y = a * 2
        d = y.detach()
        return d, d + 1

    compiled = check_lowered(fn, x, externs=("detach",))
    assert "# reuse" not in compiled.code


def test_dead_buffers_of_fresh_externs_are_still_reused():
    def fn(a):
        y = (a * 2).logcumsumexp(0)  # an extern with new memory: its input's buffer is free
        return (y.flip(0) + 1).logcumsumexp(1)  # not written over y: flip reads elsewhere

    assert "# reuse" in check_lowered(fn, x, externs=("logcumsumexp",)).code


def test_a_graph_whose_outputs_are_views_of_its_intermediates_through_compile_fx():
    """The base of a returned view lands with eager's strides, the view follows from them."""
    compiled = compile_fx(torch.fx.symbolic_trace(lambda a: (a * 2)[:, 1::2]), [x])
    assert "empty_strided((4, 5), (5, 1)" in compiled.code  # the whole base, then a view


def test_a_view_of_a_tensor_transposed_in_place_has_eagers_strides():
    def fn(a):
        m = a[:, :4] * 2
        m.t_()  # a square tensor: the same sizes, other strides
        return m[:, ::2]

    check_lowered(fn, x)


# --- channels-last images in graphs with convolutions (layouts.channels_last) -----------------

w1, w2, w3 = torch.randn(4, 3, 3, 3), torch.randn(5, 4, 3, 3), torch.randn(4, 4, 3, 3)


def conv3(a):
    return F.conv2d(a, w3, padding=1)


IMAGES = {
    "conv_relu_conv": lambda a: F.conv2d(torch.relu(F.conv2d(a, w1) * 2), w2),
    "returns_the_image": lambda a: torch.relu(F.conv2d(a, w1)),
    "image_and_its_views": lambda a: (lambda y: (y, y.permute(0, 2, 3, 1), y[:, 1]))(
        torch.relu(F.conv2d(a, w1))
    ),
    "view_of_a_reused_image": lambda a: (lambda y: (y.view(2, -1) + y.sum(), y.sum()))(
        torch.relu(F.conv2d(a, w1)) ** 2
    ),
    "residual_block": lambda a: (lambda y: torch.relu(conv3(torch.relu(conv3(y))) + y))(
        F.conv2d(a, w1)
    ),
    "pooled": lambda a: F.max_pool2d(torch.relu(F.conv2d(a, w1)), 2).flatten(1),
    "written_in_place": lambda a: torch.relu(F.conv2d(a, w1)).add_(1).flatten(1).sum(1),
    # eager's convolution of a channels-last image answers channels-last (its meta function
    # says NCHW: the meta run asks the device, meta_run.channels_last_convolution)
    "of_a_channels_last_image": lambda a: torch.relu(
        F.conv2d(a.contiguous(memory_format=torch.channels_last), w1)
    ),
    "of_an_nhwc_permute": lambda a: F.conv2d(
        a.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2), w1
    ),
    "then_viewed_as_eager_can": lambda a: (
        torch.relu(F.conv2d(a.contiguous(memory_format=torch.channels_last), w1))
        .permute(0, 2, 3, 1)
        .view(-1, 4)
    ),
}


@pytest.mark.parametrize("name", IMAGES)
def test_images_of_a_convolution_graph_are_channels_last_and_outputs_eagers(name):
    """The values and eager's strides for every output, whatever layout the images had."""
    check_lowered(IMAGES[name], torch.randn(2, 3, 8, 8), externs=("conv2d",), atol=1e-4, rtol=1e-4)


def test_a_conv2d_modules_result_of_a_channels_last_image_is_channels_last():
    """As the functions' cases above, through an `nn.Conv2d` that the graph calls as a module."""
    conv = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU()).eval()
    image = torch.randn(2, 3, 8, 8).contiguous(memory_format=torch.channels_last)
    compiled = compile_fx(torch.fx.symbolic_trace(conv), [image])
    with torch.no_grad():
        ours, eager = compiled(image), conv(image)
    torch.testing.assert_close(ours, eager, atol=1e-4, rtol=1e-4)
    assert ours.stride() == eager.stride() == (144, 1, 24, 4)


def test_the_kernels_between_convolutions_loop_over_channels_innermost():
    """Inductor's layout optimisation: both convolutions read channels-last images, and the
    ReLU between them is one kernel over (N, H, W, C), stored contiguously."""
    gm = torch.fx.symbolic_trace(IMAGES["conv_relu_conv"])
    lowered = GraphLowering(gm, [torch.randn(2, 3, 8, 8)]).run()
    convs = [b for b in lowered.buffers if isinstance(b, ExternKernel)]
    assert [conv.layout.stride for conv in convs] == [(144, 1, 24, 4), (80, 1, 20, 5)]
    assert [conv.args[0].layout.stride for conv in convs] == [(192, 1, 24, 3), (144, 1, 24, 4)]
    relu = convs[1].args[0].buffer
    assert relu.data.ranges == (2, 6, 6, 4) and relu.layout.stride == (144, 24, 4, 1)


def test_an_output_that_eager_lays_out_permuted_is_written_in_memory_order():
    """A weight's gradient in bfloat16 autocast training is channels-last, and so its cast to
    float32: `[O, I, kh, kw]` laid out `[O, kh, kw, I]`. Its kernel loops over the buffer
    as memory has it, `I` innermost, where the dims' own order made an inner loop of `kw`,
    3 elements far apart (ResNet-18's step spent 4 ms in such casts on 2 cores)."""

    def cast(w):
        return (w * 2).to(torch.bfloat16)

    weight = torch.randn(16, 32, 3, 3).to(memory_format=torch.channels_last)
    check_traced(cast, weight)  # eager's values and strides
    (out,) = GraphLowering(torch.fx.symbolic_trace(cast), [weight]).run().buffers
    assert out.data.ranges == (16, 3, 3, 32) and out.layout.stride == (288, 96, 32, 1)


POINTWISE_STEPS = {
    "double": lambda t: t * 2,
    "sin": torch.sin,
    "to_bfloat16": lambda t: t.to(torch.bfloat16),
    "relu": torch.relu,
    # Bounded: exp(exp(x)) before a sin turned one float ulp between two exps into another
    # answer, which says nothing of the layouts under test.
    "tanh_to_double": lambda t: t.tanh().to(torch.float64),
}


@st.composite
def permuted_inputs(draw):
    """A tensor whose memory holds its dims in a random order (a permuted view of a
    contiguous one), of rank 2 to 4, sizes 1 to 5 (1s: dims whose stride is free)."""
    shape = draw(st.lists(st.integers(1, 5), min_size=2, max_size=4))
    order = draw(st.permutations(range(len(shape))))  # memory's dims, outermost first
    seed = draw(st.integers(0, 2**16))  # drawn, so that hypothesis replays the tensor
    base = torch.randn([shape[d] for d in order], generator=torch.Generator().manual_seed(seed))
    return base.permute([order.index(d) for d in range(len(shape))])


@given(
    permuted_inputs(), st.lists(st.sampled_from(sorted(POINTWISE_STEPS)), min_size=1, max_size=3)
)
def test_pointwise_steps_of_a_permuted_input_have_eagers_values_and_strides(x, steps):
    """Each output lands with eager's strides (the input's order), written by a kernel that
    loops over its memory in order (`in_memory_order`)."""

    def fn(a):
        for step in steps:
            a = POINTWISE_STEPS[step](a)
        return a, a * 3

    check_traced(fn, x, atol=1e-2, rtol=1e-2)


def test_an_image_read_only_as_channels_last_is_allocated_so():
    """The ReLU's buffer is (N, H, W, C) in memory and the second convolution reads it as an
    (N, C, H, W) view with channels-last strides: the wrapper allocates it with the view's
    sizes and strides and passes it as it is, with no view made at each call. (The first
    convolution's result is returned, so the ReLU cannot write over it in place.)"""

    def fn(a):
        y = F.conv2d(a, w1)
        return F.conv2d(torch.relu(y * 2), w2), y

    compiled = check_lowered(fn, torch.randn(2, 3, 8, 8), externs=("conv2d",), atol=1e-4, rtol=1e-4)
    source = compiled.last.wrapper_source
    assert "reinterpret(" not in source
    assert "empty_strided((2, 4, 6, 6), (144, 1, 24, 4)" in source


def relu_backward_sums(x, w, g):  # a training batch norm's backward after a ReLU
    y = F.conv2d(x, w)
    masked = torch.where(y <= 0, 0.0, g)  # the ReLU's gradient: read by three nodes
    centred = y - y.mean((0, 2, 3), keepdim=True)
    return masked.sum((0, 2, 3)), (masked * centred).sum((0, 2, 3)), masked * centred * 2


@pytest.mark.parametrize("recomputed", [False, True])
def test_an_image_only_kernels_read_is_computed_again_on_the_gpu(monkeypatch, recomputed):
    """An image read by several kernels and nothing else is computed again in each (the
    GPU's rule: fewer bytes), or stored once, channels-last (the CPU's: its reduction
    loops that select ran slower than a store and a reload)."""
    monkeypatch.setattr(CPU_RULES, "recompute_images", recomputed)
    args = torch.randn(2, 3, 8, 8), torch.randn(4, 3, 3, 3), torch.randn(2, 4, 6, 6)
    gm = torch.fx.symbolic_trace(relu_backward_sums)
    buffers = GraphLowering(gm, list(args)).run().buffers
    masks = [b for b in buffers if str(getattr(b, "data", "")).startswith("Pointwise(where(")]
    assert len(masks) == (0 if recomputed else 1)
    check_traced(relu_backward_sums, *args, atol=1e-4, rtol=1e-4)


NHWC = ((2, 6, 6, 4), (144, 24, 4, 1))  # a kernel's (N, H, W, C) buffer


@pytest.mark.parametrize(
    "view, buffer, same",
    [
        (((2, 4, 6, 6), (144, 1, 24, 4)), NHWC, True),  # its channels-last (N, C, H, W) view
        (((2, 4, 6, 6), (144, 36, 6, 1)), NHWC, False),  # the same sizes, another memory order
        (((2, 3, 6, 6), (144, 1, 24, 4)), NHWC, False),  # three of its four channels
        (((2, 1, 6, 6), (36, 99, 6, 1)), ((2, 6, 6, 1), (36, 6, 1, 1)), True),  # a size-1 dim
    ],
)
def test_same_memory_is_another_order_of_the_same_addresses(view, buffer, same):
    as_layout = lambda pair: Layout(*pair, torch.float32)  # noqa: E731
    assert same_memory(as_layout(view), as_layout(buffer)) is same


def test_a_graph_without_convolutions_keeps_eagers_layouts():
    gm = torch.fx.symbolic_trace(lambda a: (lambda y: y + y.sum())(expensive(a)))
    lowered = GraphLowering(gm, [image]).run()
    assert not lowered.channels_last
    images = [b for b in lowered.buffers if len(b.layout.size) == 4]
    assert images and all(b.layout.stride == (60, 20, 5, 1) for b in images)


def test_a_weight_is_converted_again_when_it_changes():
    """The channels-last copy of a weight follows the weight: written in place (its version
    counter moves) or given new memory (`.data =`), the next call converts it again."""
    weight, a = torch.randn(4, 3, 3, 3), torch.randn(2, 3, 8, 8)
    compiled = compile_fx(torch.fx.symbolic_trace(lambda a, w: F.conv2d(a, w)), [a, weight])
    changes = (lambda: weight.mul_(2), lambda: setattr(weight, "data", -weight))
    for change in (lambda: None, lambda: None, *changes, lambda: None, lambda: None):
        with torch.no_grad():
            change()
        torch.testing.assert_close(compiled(a, weight), F.conv2d(a, weight))


def test_a_weight_is_converted_once_it_stops_changing(monkeypatch):
    """A weight that changes between calls (a training step's) goes to the convolution as it
    is; one found as the last call left it is converted, once, and its copy serves."""
    conversions = []
    contiguous = torch.Tensor.contiguous

    def counted(tensor, *args, **kwargs):
        conversions.append(kwargs.get("memory_format"))
        return contiguous(tensor, *args, **kwargs)

    weight, a = torch.randn(4, 3, 3, 3), torch.randn(2, 3, 8, 8)
    compiled = compile_fx(torch.fx.symbolic_trace(lambda a, w: F.conv2d(a, w)), [a, weight])
    monkeypatch.setattr(torch.Tensor, "contiguous", counted)
    for _ in range(3):  # changed before each call: never converted
        with torch.no_grad():
            weight.add_(1)
        compiled(a, weight)
    assert torch.channels_last not in conversions
    for _ in range(3):  # unchanged: converted at the first of these calls only
        compiled(a, weight)
    assert conversions.count(torch.channels_last) == 1


def test_an_attention_result_is_declared_with_the_strides_the_device_returns():
    """The CPU's flash attention returns (B, T, H, D) memory where its meta function says
    (B, H, T, D): the extern's layout comes from one call at compile time, so no call copies
    its result, and the usual `transpose(1, 2).reshape` after it is a view, not a kernel."""

    def attention(a):
        q = a.view(2, 16, 4, 8).transpose(1, 2)
        out = F.scaled_dot_product_attention(q, q * 2, q + 1)
        return out.transpose(1, 2).reshape(2, 16, 32)

    a = torch.randn(2, 16, 32)
    lowered = GraphLowering(torch.fx.symbolic_trace(attention), [a]).run()
    [sdpa] = [b for b in lowered.buffers if isinstance(b, ExternKernel)]
    q = a.view(2, 16, 4, 8).transpose(1, 2)
    assert sdpa.layout.stride == F.scaled_dot_product_attention(q, q, q).stride()
    check_lowered(attention, a, externs=("scaled_dot_product_attention",))


@pytest.mark.parametrize("index", ["expand", "none_then_expand", "unsqueeze_then_expand"])
def test_an_expanded_mask_is_passed_to_torch_as_a_view_of_one_plane(index):
    """An attention mask computed for one (T, T) plane and expanded over batch and heads is
    stored once, at its own size, and the attention takes the expanded view (stride 0), as
    eager passes it and as inductor's ExpandView is realized, not written out for every batch
    and head."""
    spell = {
        "expand": lambda m: m,
        "none_then_expand": lambda m: m[0, 0][None, None],
        "unsqueeze_then_expand": lambda m: m[0, 0].unsqueeze(0).unsqueeze(0),
    }[index]

    def attention(q):
        t = torch.arange(q.shape[2])
        mask = torch.where(t[None, None, None, :] <= t[None, None, :, None], 0.0, -1e9)
        mask = spell(mask).expand(q.shape[0], q.shape[1], -1, -1)
        return F.scaled_dot_product_attention(q, q * 2, q + 1, attn_mask=mask)

    q = torch.randn(2, 4, 16, 8)
    lowered = GraphLowering(torch.fx.symbolic_trace(attention), [q]).run()
    [sdpa] = [b for b in lowered.buffers if isinstance(b, ExternKernel)]
    [mask] = [a for a in (*sdpa.args, *sdpa.kwargs.values()) if a.layout.size[-1] == 16]
    assert (mask.layout.size, mask.layout.stride) == ((2, 4, 16, 16), (0, 0, 16, 1))
    assert mask.buffer.layout.size in ((1, 1, 16, 16), (16, 16))
    check_lowered(attention, q, externs=("scaled_dot_product_attention",))


def test_a_slice_passed_to_torch_is_not_a_view_of_everything_it_drops():
    """A value sliced before a call into torch is stored as the slice: storing all of it
    and passing a strided view would compute the dropped elements too."""

    def fn(a):
        return torch.mm((a * 2)[:, ::2], a.t()[::2])

    a = torch.randn(8, 8)
    lowered = GraphLowering(torch.fx.symbolic_trace(fn), [a]).run()
    [mm] = [b for b in lowered.buffers if isinstance(b, ExternKernel)]
    assert mm.args[0].layout.size == mm.args[0].buffer.layout.size == (8, 4)
    check_lowered(fn, a, externs=("mm",))
