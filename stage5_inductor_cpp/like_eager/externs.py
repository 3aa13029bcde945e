"""A call into torch (an extern), laid out and aliased as eager's result is.

A node that no lowering handles becomes an `ExternKernel` that calls torch at run time
(graph_lowering.py). The kernels after it index its result, so its layout must be known
now: the call runs on meta tensors with our layouts, which gives eager's sizes and strides
(or eager's error: then the graph runs in torch). The result may share memory with an
argument (a view, `detach`, `contiguous` of a contiguous tensor): the meta run says so by
its storage, and then the wrapper keeps the argument's buffer alive and never hands it to
another kernel. A result that is not a tensor (the tuple of `torch.max(x, 0)`, a storage)
is an `ExternValue`, whose methods are calls into torch too (`MethodOf`). At run time
the wrapper checks each result against the strides the meta run promised (`with_layout`).
"""

import dataclasses
import math

import torch
import torch.utils._pytree as pytree

from ..ir import BufferView, ExternKernel, Layout, Pointwise
from ..lowering import EagerOnly, reindex
from ..performance import channels_last
from ..performance.linear import into_planned_memory
from ..symbolic.sizes import as_sizes, as_symint, as_symints, is_symbolic
from .meta_run import device_strides, on_meta_device, storage_id, tensors_in


@dataclasses.dataclass(frozen=True)
class ExternValue:
    """A non-tensor result of an extern call (the tuple of `torch.max(x, 0)`, say)."""

    buffer: ExternKernel
    meta: object  # the result on meta tensors, for the externs that consume it


class MethodOf:
    """`value.name(...)` for a value that torch made and that is not a tensor (a storage, a
    named tuple): a call into torch at run time, as a Tensor method's is."""

    def __init__(self, name: str):
        self.name = self.__name__ = name

    def __call__(self, value, *args, **kwargs):
        return getattr(value, self.name)(*args, **kwargs)


def with_layout(tensor, size, stride):
    """Kernels index with the strides the meta functions promised; copy in the rare other case."""
    if tensor.stride() == stride or math.prod(size) <= 1:
        return tensor
    return torch.empty_strided(size, stride, dtype=tensor.dtype, device=tensor.device).copy_(tensor)


def to_meta(value):
    """An extern's argument as the meta run takes it."""
    if isinstance(value, BufferView):
        size, stride = as_symints(value.layout.size), as_symints(value.layout.stride)
        return torch.empty_strided(size, stride, dtype=value.layout.dtype, device="meta")
    if isinstance(value, ExternValue):
        return value.meta
    if is_symbolic(value):  # a size argument (`interpolate(x, size=(ps0, ps1))`): a SymInt
        return as_symint(value)
    return value


def extern(graph, node, op: str, target, args, kwargs):
    """Call torch at run time; a meta run now gives the result's layout (or eager's error)."""
    target, args, images = channels_last.extern_images(graph, target, args)

    def realized(value):  # torch reads tensors, not IR; a view, as a view (views.py's viewed)
        if isinstance(value, Pointwise) and value.view:
            source, order = value.view
            return reindex(graph.realize(source), value.ranges, order)
        return graph.realize(value) if isinstance(value, Pointwise) else value

    args, kwargs = pytree.tree_map(realized, (args, kwargs))
    meta_args, meta_kwargs = pytree.tree_map(to_meta, (args, kwargs))
    meta_kwargs = on_meta_device(meta_kwargs)
    meta_target = graph.meta.module(target) if op == "call_module" else target
    try:
        out = meta_target(*meta_args, **meta_kwargs)
    except Exception as error:  # a bad graph, or no meta function: eager will tell
        raise EagerOnly(f"{node.name}: on meta tensors torch raises {error!r}") from error
    if not isinstance(out, torch.Tensor):
        buffer = ExternKernel(
            graph.new_name(), None, target, tuple(args), dict(kwargs), is_tensor=False
        )
        graph.buffers.append(buffer)
        return ExternValue(buffer, out)
    if images:  # oneDNN returns channels-last as cuDNN does; the CPU meta function not
        stride = channels_last.channels_last_strides(out.shape)
    else:
        stride = device_strides(target, out, graph.device, meta_args, meta_kwargs)
    layout = Layout(as_sizes(out.shape), as_sizes(stride), out.dtype)
    arguments = pytree.tree_leaves((meta_args, meta_kwargs))
    may_alias = storage_id(out) in {storage_id(a) for a in tensors_in(arguments)}
    target, into_out = into_planned_memory(target, layout, may_alias)
    buffer = ExternKernel(
        graph.new_name(), layout, target, tuple(args), dict(kwargs),
        may_alias=may_alias, out=into_out,
    )  # fmt: skip
    graph.buffers.append(buffer)
    return BufferView(buffer, layout)
