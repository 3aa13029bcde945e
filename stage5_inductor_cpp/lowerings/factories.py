"""Tensors made from sizes alone: `zeros`, `ones`, `full`, `arange` (and `*_like`, `new_*`).

Each element is a function of its index, so the value is a `Pointwise` that any kernel
reading it computes instead of loading: `x + torch.arange(n)` is one kernel with no
buffer for the `arange` (torch/_inductor/lowering.py lowers factories the same way).
Without tensor arguments, `graph_lowering.py` has already run the call once (it is shape
arithmetic as far as it knows), and `out` holds its result: its size, its dtype, and
for the filled ones the value.
"""

import torch
from torch._subclasses.fake_tensor import FakeTensor

from ..ir import Index, Pointwise, ops
from ..lowering import Fallback, register
from ..symbolic.sizes import as_sizes, is_symbolic


def _filled(out, ranges) -> Pointwise:
    """`ranges` of the one value every element of `out` holds."""
    if out.requires_grad:
        raise Fallback("a tensor that requires grad: autograd needs torch")
    if isinstance(out, FakeTensor):  # its sizes are symbols (sizes.py): no value to read
        raise Fallback("a filled tensor of symbolic size: torch makes it")
    value = out.reshape(-1)[0].item() if out.numel() else 0
    return Pointwise(out.dtype, tuple(ranges), lambda idx: ops.constant(value, out.dtype))


@register("zeros", "ones", "full", "scalar_tensor", "new_zeros", "new_ones", "new_full")
def filled(graph, out, *args, **kwargs):
    return _filled(out, as_sizes(out.shape))


@register("zeros_like", "ones_like", "full_like")
def filled_like(graph, out, x, *args, **kwargs):
    return _filled(out, x.ranges)  # `out` is the op on a stand-in of x: one element


@register(torch.tensor)
def tensor(graph, out, data, *args, **kwargs):
    """A tensor of one value is a constant of the kernels; a longer one is a graph constant."""
    if out.numel() == 1:
        return _filled(out, as_sizes(out.shape))
    return graph.constant(out)


@register("arange")
def arange(graph, out, *args, **kwargs):
    """`start + step * i`, computed in double for floats (torch's accumulation type on the
    CPU: its vectorized loop then adds `step` in float, within rounding of this)."""
    if out.requires_grad:
        raise Fallback("a tensor that requires grad: autograd needs torch")
    numbers = [a for a in args if isinstance(a, (int, float)) or is_symbolic(a)]
    start = numbers[0] if len(numbers) >= 2 else 0
    step = numbers[2] if len(numbers) == 3 else 1
    start, step = kwargs.get("start", start), kwargs.get("step", step)
    if is_symbolic(start) or is_symbolic(step):  # an end that is a symbol is only a size
        raise Fallback("an arange that starts or steps by a symbol: torch makes it")
    floating = out.dtype.is_floating_point
    if not floating and not all(float(v).is_integer() for v in (start, step)):
        raise Fallback("an integer arange of float bounds: torch rounds them its own way")
    compute = torch.float64 if floating else torch.int64

    def inner_fn(idx):
        i = ops.index_expr(idx[0] if idx else Index(), compute)
        value = ops.add(ops.mul(i, ops.constant(step, compute)), ops.constant(start, compute))
        return ops.to_dtype(value, out.dtype)

    return Pointwise(out.dtype, as_sizes(out.shape), inner_fn)
