"""Casts and copies: `x.float()`, `x.to(...)`, `clone`, `contiguous`. torch returns the tensor
itself where nothing changes, and so do these."""

import dataclasses

import torch

from ..ir import BufferView
from ..lowering import make_pointwise, register
from ..symbolic.sizes import as_symints


def copy_of(x):
    """A new tensor with `x`'s values (its layout is the output's or the kernels' choice)."""
    return make_pointwise(lambda v: v, x, dtype=x.dtype)


def is_contiguous_as(x, memory_format) -> bool:
    """Whether `x` is in memory as `memory_format` asks: then `contiguous` returns it."""
    if not isinstance(x, BufferView) or memory_format in (None, torch.preserve_format):
        return True  # a value not in memory yet lands wherever its readers want it
    if memory_format == torch.contiguous_format:
        return x.layout.is_contiguous()
    layout = x.layout  # a stride-only meta tensor answers for channels_last(_3d), and the
    # ShapeEnv guards its answer where the sizes are symbols (symbolic/sizes.py)
    size, stride = as_symints(layout.size), as_symints(layout.stride)
    probe = torch.empty_strided(size, stride, dtype=layout.dtype, device="meta")
    return bool(probe.is_contiguous(memory_format=memory_format))


# torch.Tensor.to's `copy` and `memory_format`, by position: `x.to(dtype, non_blocking,
# copy, memory_format)`, `x.to(device, dtype, ...)`, `x.to(other, non_blocking, ...)`.
def _to_flags(args, copy, memory_format):
    at = 3 if args and isinstance(args[0], (str, torch.device)) else 2
    copy = bool(args[at]) if len(args) > at else copy
    memory_format = args[at + 1] if len(args) > at + 1 else memory_format
    return copy, memory_format


@register(
    "type", "type_as", "float", "double", "half", "bfloat16", "long", "int", "short", "char",
    "byte", "bool",
)  # fmt: skip
def to_dtype(graph, out, x, *args, copy=False, memory_format=None, **kwargs):
    """A cast; torch returns `x` itself when nothing changes and no copy is asked for."""
    if out.dtype != x.dtype:
        return make_pointwise(lambda v: v, x, dtype=out.dtype, compute=x.dtype)
    if copy or not is_contiguous_as(x, memory_format):
        return copy_of(x)
    return x


@register("to")
def to(graph, out, x, *args, copy=False, memory_format=None, **kwargs):
    """`x.to(...)`: a cast whose `copy` and `memory_format` may also come by position."""
    copy, memory_format = _to_flags(args, copy, memory_format)
    return to_dtype(graph, out, x, copy=copy, memory_format=memory_format)


@register("clone", same_dtype=True)
def clone(graph, out, x, *, memory_format=None):
    return copy_of(x)


@register("contiguous", same_dtype=True)
def contiguous(graph, out, x, memory_format=torch.contiguous_format):
    if not is_contiguous_as(x, memory_format):
        return copy_of(x)
    # A value not in memory yet that views another (views.py's `viewed`) is stored whole
    # for a call into torch, as asked, not as a permuted or zero-stride view of its source.
    return dataclasses.replace(x, view=None) if getattr(x, "view", None) else x
