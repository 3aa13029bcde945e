"""Elementwise ops beyond the core table: `where`, rounding to decimals, bitwise ops on bools,
`rsub`, and powers with the exponents torch computes otherwise."""

import math
import operator

import torch

from ..ir import Pointwise, ops
from ..lowering import (
    LOWERINGS,
    Fallback,
    _unary,
    broadcast_shapes,
    is_tensor,
    loader_for,
    make_pointwise,
    register,
    upcast,
)


@register("where")
def where(graph, out, cond, a, b):
    """`torch.where(cond, a, b)`: three inputs broadcast together, the condition read as bool."""

    def fn(c, x, y):
        return ops.where(c, x, y)

    cond = make_pointwise(lambda c: c, cond, dtype=torch.bool) if is_tensor(cond) else bool(cond)
    ranges = broadcast_shapes(*[v.ranges for v in (cond, a, b) if is_tensor(v)])
    loaders = [loader_for(cond, ranges, torch.bool)] + [
        loader_for(v, ranges, out.dtype) for v in (a, b)
    ]
    cost = 1 + sum(v.cost for v in (cond, a, b) if is_tensor(v))
    return Pointwise(out.dtype, ranges, lambda idx: fn(*[ld(idx) for ld in loaders]), cost)


@register("round")
def round_decimals(graph, out, x, *, decimals=0):
    """`round(x)`, or to `decimals` digits as torch's kernel rounds (`round_decimals_kernel`,
    aten/src/ATen/native/cpu/UnaryOpsKernel.cpp): `nearbyint(x * 10**d) / 10**d`, and
    `nearbyint(x / 10**-d) * 10**-d` for negative `d`, with `10**d` a double cast to the
    dtype computed in (inf past a double's range)."""
    if decimals == 0:
        return _unary("round", "round")(graph, out, x)
    compute = upcast(out.dtype)
    scale = float(10 ** abs(decimals)) if abs(decimals) <= 308 else math.inf

    def fn(v):
        factor = ops.constant(scale, compute)
        if decimals < 0:
            return ops.mul(ops.round(ops.truediv(v, factor)), factor)
        return ops.truediv(ops.round(ops.mul(v, factor)), factor)

    return make_pointwise(fn, x, dtype=out.dtype)


def _bitwise(logical):
    def lower(graph, out, *args):
        if out.dtype != torch.bool:
            raise Fallback("bitwise ops on integers")
        return make_pointwise(getattr(ops, logical), *args, dtype=torch.bool)

    return lower


for _targets, _logical in [
    (("bitwise_and", operator.and_), "logical_and"),
    (("bitwise_or", operator.or_), "logical_or"),
    (("bitwise_xor", operator.xor), "logical_xor"),
    (("bitwise_not", operator.invert), "logical_not"),
]:
    register(*_targets)(_bitwise(_logical))


@register("rsub")
def rsub(graph, out, a, b, *, alpha=1):
    return LOWERINGS["sub"](graph, out, b, a, alpha=None if alpha == 1 else alpha)


@register("pow", operator.pow)
def power(graph, out, a, b):
    if not out.dtype.is_floating_point:
        raise Fallback("integer pow")
    if is_tensor(b):
        return make_pointwise(ops.pow, a, b, dtype=out.dtype)
    # torch special-cases these exponents (aten/src/ATen/native/cpu/PowKernel.cpp): match it.
    # Its kernel multiplies in the tensor's dtype, so a bfloat16 square is rounded before
    # the next step, as a float16 one is on CUDA; the CPU's float16 calls std::pow instead,
    # and rounds once.
    rounded = out.dtype == torch.bfloat16 or (
        out.dtype == torch.float16 and graph.device.type == "cuda"
    )

    def square(x):  # rounded to the dtype, then computed on in float32
        product = ops.mul(x, x)
        if not rounded:
            return product
        return ops.to_dtype(ops.to_dtype(product, out.dtype), upcast(out.dtype))

    special = {
        2: lambda x: ops.mul(x, x),
        3: lambda x: ops.mul(square(x), x),
        0.5: ops.sqrt,
        -0.5: ops.rsqrt,
        -1: ops.reciprocal,
        -2: lambda x: ops.reciprocal(square(x)),
    }
    if is_tensor(a) and b in special:
        return make_pointwise(special[b], a, dtype=out.dtype)
    return make_pointwise(ops.pow, a, b, dtype=out.dtype)
