"""Images channels-last: in a graph with 2-D convolutions, the images between them are
stored (N, H, W, C) in memory, whatever eager's layout.

cuDNN's and oneDNN's convolutions are faster so, and a kernel between two of them (batch
norm, ReLU, a residual add) then reads and writes with C innermost. Inductor decides the
same ("layout optimization", `GraphLowering.decide_layout_opt` in torch/_inductor/graph.py).
Outputs still land with eager's strides (like_eager/layouts.py). The graph stores an image
so by `GraphLowering.realize_preferred`; the calls into torch that take images get them
channels-last (`extern_images`), a convolution's weight too: a weight the graph computes
(autocast's cast of it to bfloat16) is written so, a weight it is given is copied once it
stops changing.
"""

import weakref

import torch
import torch.fx

from ..ir import BufferView
from ..like_eager.layouts import in_memory_order, same_elements
from ..like_eager.meta_run import CONVOLUTIONS
from ..rules import Rules

# CONVOLUTIONS (meta_run.py): the 2-D convolutions of a graph.
# A training graph's backward (stage 4's training/aot.py) has its convolutions' backwards instead.
CONVOLUTION_BACKWARDS = (torch.ops.aten.convolution_backward.default,)
# The other calls into torch that take images, by how many leading arguments are images:
# given them channels-last, they answer channels-last. A training graph's max-pool is one
# (it returns the indices its backward reads): fed an NCHW image, the forward wrote its
# result and indices NCHW, and the backward, given a channels-last gradient, copied both
# and its input to one format (copies of a ResNet's stem's images at every step).
IMAGE_CALLS = {
    **dict.fromkeys(CONVOLUTION_BACKWARDS, 2),
    torch.ops.aten.max_pool2d_with_indices.default: 1,
    torch.ops.aten.max_pool2d_with_indices_backward.default: 2,
}


# With `Rules.few_convolutions_keep_eager_layout` (the GPU's), a graph with fewer
# convolutions than one per this many nodes keeps eager's layout (inductor's rule, "only a
# few conv"): a ViT's or Swin's one patch embedding.
NODES_PER_CONVOLUTION = 300


def prefers_channels_last(gm: torch.fx.GraphModule, rules: Rules) -> bool:
    """Whether the graph has 2-D convolutions to run channels-last: on a CPU with oneDNN; with
    `rules.few_convolutions_keep_eager_layout` (on the GPU), unless they are few among many
    other ops (inductor's tests too). There the conversions cost more than the one
    convolution gains, and cuDNN picks another algorithm for it than eager's: channels-last,
    a patch embedding (Swin's) runs on TF32 tensor cores (eager's default for convolutions),
    and its output is further from eager's than float32's rounding, where torch.compile's,
    in eager's layout, is not."""
    convolutions = CONVOLUTIONS + CONVOLUTION_BACKWARDS
    count = sum(n.op == "call_function" and n.target in convolutions for n in gm.graph.nodes)
    if not rules.few_convolutions_keep_eager_layout:
        return count > 0 and torch.backends.mkldnn.is_available()
    return count > 0 and len(gm.graph.nodes) < NODES_PER_CONVOLUTION * count


def conv2d_with_channels_last_weights():
    """`torch.conv2d` whose weight is in channels-last memory too, once the weight is seen
    not to change. Given an NCHW weight, oneDNN and cuDNN convert it on every call
    (a large part of a ResNet's convolutions' time on a CPU). Inductor's freezing
    (torch/_inductor/freezing.py) converts weights once, assuming they never change; here
    a weight is converted at a call that finds it as the last call left it (its version
    counter and memory), and its copy serves while it stays so. A weight that changes
    between calls (a training step's) is passed as it is, and the library converts it
    in C++, as for eager: a copy here would be the same work plus a launch from Python.
    The copies live as long as the compiled graph."""
    seen = {}  # id(weight) -> [weakref to the weight, (version, address), the copy or None]

    def conv2d(x, weight, *args, **kwargs):
        if weight.is_meta or (weight.requires_grad and torch.is_grad_enabled()):
            return torch.conv2d(x, weight, *args, **kwargs)  # a meta run, or autograd's call
        entry, state = seen.get(id(weight)), _state(weight)
        if entry is None or entry[0]() is not weight:  # first sight (or a reused id)
            entry = seen[id(weight)] = [weakref.ref(weight), None, None]
        # A CUDA graph (stage 6's mode="reduce-overhead") replays the copy it was recorded
        # with and never sees the weight's version again: a recording reads the weight.
        # (The C function, not `torch.cuda.is_current_stream_capturing`, which costs more.)
        if entry[1] != state or (weight.is_cuda and torch._C._cuda_isCurrentStreamCapturing()):
            entry[1:] = state, None  # new, changed since the last call, or recorded: as it is
            return torch.conv2d(x, weight, *args, **kwargs)
        if entry[2] is None:  # unchanged since the last call: from now on, its copy
            entry[2] = weight.contiguous(memory_format=torch.channels_last)
        return torch.conv2d(x, entry[2], *args, **kwargs)

    return conv2d


def _state(tensor) -> tuple[int, int]:
    return tensor._version, tensor.data_ptr()


def channels_last_strides(size) -> tuple[int, ...]:
    _, c, h, w = size
    return (h * w * c, 1, w * c, c)


def channels_last(graph, value) -> BufferView:
    """`value` (N, C, H, W) stored as (N, H, W, C): a kernel loops over the buffer in memory
    order, C innermost, and the result is a permuted view with channels-last strides."""
    want = channels_last_strides(tuple(value.ranges))
    if isinstance(value, BufferView) and same_elements(value.ranges, value.layout.stride, want):
        return value
    return in_memory_order(graph, value, want)


def extern_images(graph, target, args) -> tuple[object, tuple, bool]:
    """A call into torch with its images channels-last, in a graph that stores them so: the
    call, its arguments, and whether it is a convolution (its result is channels-last)."""
    if not graph.channels_last:
        return target, args, False
    if target in CONVOLUTIONS and len(args[0].ranges) == 4:
        # A weight computed here (not yet stored) is stored channels-last for free, where
        # the library would convert it on every call, as for eager's own casts, and the
        # call is torch's own: such a weight is new memory at each call, which the copies
        # of conv2d_with_channels_last_weights could never serve (a Python call per
        # convolution, ResNet-50's fifty under autocast, for nothing).
        weight = args[1]
        if not isinstance(weight, BufferView):
            args = (graph.realize_preferred(args[0]), graph.realize_preferred(weight), *args[2:])
            return target, args, True
        args = (graph.realize_preferred(args[0]), weight, *args[2:])
        return conv2d_with_channels_last_weights(), args, True
    if count := IMAGE_CALLS.get(target):  # images, as the kernels store them
        args = (*map(graph.realize_preferred, args[:count]), *args[count:])
    return target, args, False
