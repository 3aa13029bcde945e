"""Composite ops written with the lowering's building blocks (torch/_decomp does the same).

Softmax is `amax`, `sub`, `exp`, `sum`, `div`: five ops that the scheduler turns
into one kernel. Each decomposition says which torch function it mirrors.
"""

import math

import torch

from .ir import ops
from .lowering import (
    LOWERINGS,
    Fallback,
    _dims,
    _numel,
    is_tensor,
    make_pointwise,
    make_reduction,
    reduced_dims,
    register,
)


@register("sigmoid")
def sigmoid(graph, out, x):
    return make_pointwise(lambda v: ops.sigmoid(v), x, dtype=out.dtype)


@register("silu")
def silu(graph, out, x):
    return make_pointwise(lambda v: ops.mul(v, ops.sigmoid(v)), x, dtype=out.dtype)


@register("gelu")
def gelu(graph, out, x, approximate="none"):
    dtype = out.dtype

    def c(value):
        return ops.constant(value, dtype)

    if approximate == "tanh":  # torch: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))

        def fn(v):
            inner = ops.mul(
                c(math.sqrt(2 / math.pi)),
                ops.add(v, ops.mul(c(0.044715), ops.mul(v, ops.mul(v, v)))),
            )
            return ops.mul(ops.mul(c(0.5), v), ops.add(c(1.0), ops.tanh(inner)))
    else:  # torch: x * 0.5 * (1 + erf(x / sqrt(2)))

        def fn(v):
            return ops.mul(
                ops.mul(v, c(0.5)), ops.add(c(1.0), ops.erf(ops.mul(v, c(math.sqrt(0.5)))))
            )

    return make_pointwise(fn, x, dtype=dtype)


@register("clamp", "clip")
def clamp(graph, out, x, min=None, max=None):
    if min is None and max is None:
        raise Fallback("clamp without bounds raises in torch")
    result = x
    if min is not None:
        result = _limit(result, min, out.dtype, ops.lt, ops.maximum)
    if max is not None:
        result = _limit(result, max, out.dtype, ops.gt, ops.minimum)
    return result


# A NaN bound gives NaN from torch 2.13 on; torch 2.11 kept x (`std::max(x, nan)` is x).
NAN_BOUND_GIVES_NAN = bool(torch.clamp(torch.zeros(1), min=math.nan).isnan())


def _limit(x, bound, dtype, beyond, extreme):
    """One side of clamp. A number bound replaces only the values `beyond` it, as torch's
    `std::min(std::max(x, min), max)` (aten/src/ATen/native/cpu/TensorCompareKernel.cpp):
    `clamp(0.0, max=-0.0)` keeps 0.0, NaN stays NaN. A tensor bound is torch's
    clamp_min/clamp_max of tensors: `maximum`/`minimum`, NaN from either side."""
    if is_tensor(bound) or (math.isnan(bound) and NAN_BOUND_GIVES_NAN):
        return make_pointwise(extreme, x, bound, dtype=dtype)
    return make_pointwise(lambda v, b: ops.where(beyond(v, b), b, v), x, bound, dtype=dtype)


@register("clamp_min")
def clamp_min(graph, out, x, min):
    return clamp(graph, out, x, min=min)


@register("clamp_max")
def clamp_max(graph, out, x, max):
    return clamp(graph, out, x, max=max)


@register("hardtanh")
def hardtanh(graph, out, x, min_val=-1.0, max_val=1.0):
    return clamp(graph, out, x, min_val, max_val)


@register("leaky_relu")
def leaky_relu(graph, out, x, negative_slope=0.01):
    def fn(v):
        zero = ops.constant(0, out.dtype)
        return ops.where(ops.gt(v, zero), v, ops.mul(v, ops.constant(negative_slope, out.dtype)))

    return make_pointwise(fn, x, dtype=out.dtype)


@register("square")
def square(graph, out, x):
    return make_pointwise(lambda v: ops.mul(v, v), x, dtype=out.dtype)


@register("masked_fill")
def masked_fill(graph, out, x, mask, value):
    return LOWERINGS["where"](graph, out, mask, value, x)


@register("mean")
def mean(graph, out, x, dim=None, keepdim=False, *, dtype=None):
    dims = reduced_dims(x, _dims(dim))
    count = _numel([x.ranges[d] for d in dims])
    total = make_reduction(graph, x, dims, keepdim, "sum", out.dtype, out.dtype)
    return make_pointwise(ops.truediv, total, float(count), dtype=out.dtype)


def _variance(graph, x, dims, correction, keepdim, dtype):
    """Two passes, mean then squared deviations (torch uses Welford; both are stable), in
    torch's accumulation type: double for float32 on the CPU (`at::acc_type<float, false>`,
    aten/src/ATen/native/cpu/ReduceOpsKernel.cpp's `std_var_kernel_impl`), where the
    square of 1e20 or of a denormal still has a value; CUDA's is float.
    The result stays in that type: `std` takes its square root before rounding."""
    if dtype == torch.float32 and graph.device.type == "cpu":
        dtype = torch.float64
    dims = reduced_dims(x, dims)
    count = _numel([x.ranges[d] for d in dims])
    mu = make_pointwise(
        ops.truediv,
        make_reduction(graph, x, dims, True, "sum", dtype, dtype),
        float(count),
        dtype=dtype,
    )
    deviation = make_pointwise(ops.sub, x, mu, dtype=dtype)
    squares = make_pointwise(lambda d: ops.mul(d, d), deviation, dtype=dtype)
    total = make_reduction(graph, squares, dims, keepdim, "sum", dtype, dtype)
    return make_pointwise(ops.truediv, total, float(max(count - correction, 0)), dtype=dtype)


def _correction(unbiased, correction):
    if correction is not None:
        return correction
    return 1 if unbiased in (None, True) else 0


def _variance_of(graph, out, x, dim, unbiased, keepdim, correction):
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    correction = _correction(unbiased, correction)
    return _variance(graph, x, _dims(dim), correction, keepdim, out.dtype)


@register("var")
def var(graph, out, x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    variance = _variance_of(graph, out, x, dim, unbiased, keepdim, correction)
    return make_pointwise(lambda v: v, variance, dtype=out.dtype, compute=variance.dtype)


@register("std")
def std(graph, out, x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    variance = _variance_of(graph, out, x, dim, unbiased, keepdim, correction)
    return make_pointwise(ops.sqrt, variance, dtype=out.dtype, compute=variance.dtype)


def _softmax_parts(graph, x, dim, dtype):
    """`x - max(x)` and `sum(exp(x - max(x)))` over `dim`, the shared part of both softmaxes."""
    if dtype is not None and dtype != x.dtype:
        x = make_pointwise(lambda v: v, x, dtype=dtype, compute=x.dtype)
    biggest = make_reduction(graph, x, [dim], True, "max", x.dtype)
    shifted = make_pointwise(ops.sub, x, biggest, dtype=x.dtype)
    total = make_reduction(
        graph, make_pointwise(ops.exp, shifted, dtype=x.dtype), [dim], True, "sum", x.dtype
    )
    return shifted, total


@register("softmax", "_softmax")
def softmax(graph, out, x, dim=None, _stacklevel=3, dtype=None):
    if dim is None or not is_tensor(x):
        raise Fallback("softmax without dim")
    shifted, total = _softmax_parts(graph, x, dim, dtype)
    return make_pointwise(lambda s, t: ops.truediv(ops.exp(s), t), shifted, total, dtype=out.dtype)


@register("log_softmax")
def log_softmax(graph, out, x, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        raise Fallback("log_softmax without dim")
    shifted, total = _softmax_parts(graph, x, dim, dtype)
    return make_pointwise(lambda s, t: ops.sub(s, ops.log(t)), shifted, total, dtype=out.dtype)


@register("layer_norm", same_dtype=True)
def layer_norm(graph, out, x, normalized_shape, weight=None, bias=None, eps=1e-5, *args):
    # `same_dtype` skips the stand-in run that would reject these: torch (the extern) must.
    if not x.dtype.is_floating_point:
        raise Fallback(f"layer_norm of {x.dtype}: torch raises")
    shape = tuple(normalized_shape)
    if not shape or tuple(x.ranges[-len(shape) :]) != shape:
        raise Fallback(f"layer_norm over {shape} of a {list(x.ranges)} tensor: torch raises")
    for param in (weight, bias):
        if param is not None and (param.dtype != x.dtype or tuple(param.ranges) != shape):
            raise Fallback("layer_norm's weight or bias does not match the input: torch decides")
    dims = list(range(len(x.ranges) - len(shape), len(x.ranges)))
    dtype = out.dtype
    count = float(_numel(shape))
    mu = make_pointwise(
        ops.truediv, make_reduction(graph, x, dims, True, "sum", dtype, dtype), count, dtype=dtype
    )
    deviation = make_pointwise(ops.sub, x, mu, dtype=dtype)
    squares = make_pointwise(lambda d: ops.mul(d, d), deviation, dtype=dtype)
    variance = make_pointwise(
        ops.truediv,
        make_reduction(graph, squares, dims, True, "sum", dtype, dtype),
        count,
        dtype=dtype,
    )
    scale = make_pointwise(
        lambda v: ops.rsqrt(ops.add(v, ops.constant(eps, dtype))), variance, dtype=dtype
    )
    result = make_pointwise(ops.mul, deviation, scale, dtype=dtype)
    if weight is not None:
        result = make_pointwise(ops.mul, result, weight, dtype=dtype)
    if bias is not None:
        result = make_pointwise(ops.add, result, bias, dtype=dtype)
    return result


@register("dropout")
def dropout(graph, out, x, p=0.5, training=True):
    if training and p > 0:
        raise Fallback("dropout in training mode draws random numbers")
    return x


@register("softplus")
def softplus(graph, out, x, beta=1.0, threshold=20.0):
    def fn(v):
        scaled = ops.mul(v, ops.constant(beta, out.dtype))
        soft = ops.truediv(ops.log1p(ops.exp(scaled)), ops.constant(beta, out.dtype))
        return ops.where(ops.gt(scaled, ops.constant(threshold, out.dtype)), v, soft)

    return make_pointwise(fn, x, dtype=out.dtype)
