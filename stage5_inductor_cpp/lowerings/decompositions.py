"""Composite ops written with the lowering's building blocks (torch/_decomp does the same).

Softmax is `amax`, `sub`, `exp`, `sum`, `div`: five ops that the scheduler turns
into one kernel. Each decomposition says which torch function it mirrors.
"""

import math

import torch
import torch.nn.functional as F

from ..ir import Reduction, ops
from ..lowering import (
    LOWERINGS,
    Fallback,
    _dim,
    _dims,
    is_tensor,
    loader_for,
    make_pointwise,
    make_reduction,
    reduced_dims,
    reduction_of,
    register,
    reindex,
    upcast,
)
from ..performance.split_reductions import splits
from ..symbolic.sizes import is_symbolic, maximum
from .views import reshape_to


@register("sigmoid")
def sigmoid(graph, out, x):
    return make_pointwise(lambda v: ops.sigmoid(v), x, dtype=out.dtype)


@register("silu")
def silu(graph, out, x):
    return make_pointwise(lambda v: ops.mul(v, ops.sigmoid(v)), x, dtype=out.dtype)


@register("gelu")
def gelu(graph, out, x, approximate="none"):
    dtype = upcast(out.dtype)  # the constants too: float16's sqrt(0.5) is 0.70703

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

    return make_pointwise(fn, x, dtype=out.dtype)


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
        acc = upcast(out.dtype)  # as torch's kernels take the slope: in float for float16
        zero = ops.constant(0, acc)
        return ops.where(ops.gt(v, zero), v, ops.mul(v, ops.constant(negative_slope, acc)))

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
    count = math.prod([x.ranges[d] for d in dims])
    acc = upcast(out.dtype)  # a float16 sum may overflow where the mean does not
    total = make_reduction(graph, x, dims, keepdim, "sum", acc, acc)
    return make_pointwise(ops.truediv, total, as_float(count), dtype=out.dtype)


def _variance(graph, x, dims, correction, keepdim, dtype):
    """The variance and the mean. Torch folds Welford's running mean and sum of squared
    deviations, in double on the CPU and in float on CUDA
    (aten/src/ATen/native/SharedReduceOps.h); inductor too, in float.

    Two passes, the mean and then the squared deviations (`_two_passes`), are exact
    enough in float and read the data twice: free where one kernel holds each row (a
    program per row, which reads it again from its registers or cache). There they are
    taken in float, as CUDA's eager computes (`Rules.float_variance_of_rows`: a double
    sum costs a GPU's row kernel its place at the copy limit). Double data takes them
    too: its square may overflow. Elsewhere float data (float32, float16, bfloat16) takes
    one pass: the sums of `x`, of `x - k` and of `(x - k) ** 2` in double, where `k` is
    the row's first element, share one loop (and one split, performance/
    split_reductions.py: a batch norm's statistics in training, which two passes would
    read in two more kernels). Then `var = (sum((x - k)**2) - sum(x - k)**2 / n) /
    (n - correction)`. The shift keeps the difference from cancelling (the "shifted
    data" algorithm): a row far from 0 loses no digits, since `k` is one of its own
    values. And a float's square cannot overflow a double."""
    dims = reduced_dims(x, dims)
    count = math.prod([x.ranges[d] for d in dims])
    divisor = as_float(maximum(count - correction, 0))
    acc = upcast(dtype)
    on_rows = graph.rules.float_variance_of_rows and not splits(
        graph, reduction_of(x, dims, "sum", acc, acc)
    )
    if acc == torch.float64 or on_rows:
        mu, total = _two_passes(graph, x, dims, acc)
        variance = make_pointwise(ops.truediv, total, divisor, dtype=acc)
    else:
        variance, mu = _shifted_one_pass(graph, x, dims, divisor)
    if keepdim:
        return variance, mu
    return reshape_to(graph, variance, _kept(x, dims)), reshape_to(graph, mu, _kept(x, dims))


def _two_passes(graph, x, dims, acc):
    """The mean over `dims` and the sum of the squared deviations from it, both with `dims`
    kept (size 1), in the dtype `acc`."""
    count = as_float(math.prod([x.ranges[d] for d in dims]))
    mean = make_pointwise(
        ops.truediv, make_reduction(graph, x, dims, True, "sum", acc, acc), count, dtype=acc
    )
    deviation = make_pointwise(ops.sub, x, mean, dtype=acc)
    squares = make_pointwise(lambda d: ops.mul(d, d), deviation, dtype=acc)
    return mean, make_reduction(graph, squares, dims, True, "sum", acc, acc)


def _shifted_one_pass(graph, x, dims, divisor):
    """The variance and the mean (dims kept) of float data, in one pass in double."""
    acc, count = torch.float64, as_float(math.prod([x.ranges[d] for d in dims]))
    total = make_reduction(graph, x, dims, True, "sum", acc, acc)
    mu = make_pointwise(ops.truediv, total, count, dtype=acc)
    # The row's first element: x at index 0 of each reduced dim (a view, size 1 there).
    first = reindex(x, tuple(1 if d in dims else s for d, s in enumerate(x.ranges)), lambda i: i)
    shifted = make_pointwise(ops.sub, x, first, dtype=acc)
    squares = make_pointwise(lambda d: ops.mul(d, d), shifted, dtype=acc)
    sums = [make_reduction(graph, v, dims, True, "sum", acc, acc) for v in (shifted, squares)]

    def of_sums(sum_shifted, sum_squares, count, divisor):  # at least 0, not -1e-17
        spread = ops.sub(sum_squares, ops.truediv(ops.mul(sum_shifted, sum_shifted), count))
        zero = ops.constant(0.0, acc)
        return ops.truediv(ops.where(ops.lt(spread, zero), zero, spread), divisor)

    # Stored, as inference's batch_norm stores its terms: divisions in double once per
    # row, not once per element of each reader (a batch norm's every pixel).
    variance = make_pointwise(of_sums, *sums, count, divisor, dtype=acc)
    return graph.realize(variance), graph.realize(mu)


def _kept(x, dims) -> tuple:
    return tuple(s for d, s in enumerate(x.ranges) if d not in dims)


def _correction(unbiased, correction):
    if correction is not None:
        return correction
    return 1 if unbiased in (None, True) else 0


def _variance_of(graph, out, x, dim, unbiased, keepdim, correction):
    if not x.dtype.is_floating_point:  # var_mean skips the stand-ins that would say so
        raise Fallback(f"variance of {x.dtype}: torch raises")
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    correction = _correction(unbiased, correction)
    return _variance(graph, x, _dims(dim), correction, keepdim, out.dtype)


def _rounded(value, dtype, fn=lambda v: v):
    return make_pointwise(fn, value, dtype=dtype, compute=value.dtype)


@register("var")
def var(graph, out, x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    variance, _ = _variance_of(graph, out, x, dim, unbiased, keepdim, correction)
    return _rounded(variance, out.dtype)


@register("std")
def std(graph, out, x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    variance, _ = _variance_of(graph, out, x, dim, unbiased, keepdim, correction)
    return _rounded(variance, out.dtype, ops.sqrt)


@register("var_mean", same_dtype=True)
def var_mean(graph, out, x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    variance, mean = _variance_of(graph, out, x, dim, unbiased, keepdim, correction)
    return _rounded(variance, out.dtype), _rounded(mean, out.dtype)


@register("std_mean", same_dtype=True)
def std_mean(graph, out, x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    variance, mean = _variance_of(graph, out, x, dim, unbiased, keepdim, correction)
    return _rounded(variance, out.dtype, ops.sqrt), _rounded(mean, out.dtype)


# A scan over more elements than this stays a call into torch (see `cumsum`).
SCAN_LIMIT = 1024


def _scan(reduction_type, neutral):
    """`cumsum` (or `cumprod`) as a reduction per output element: element j of a row folds the
    row's elements up to j (the others count as `neutral`). That is n steps per element where
    a scan takes one: fine for the short rows models scan (position ids, masks), which it
    fuses with what comes before and after. Inductor has a scan node (ir.Scan, Triton's
    `tl.associative_scan`), which needs a kernel whose stores happen inside its loop."""

    def lower(graph, out, x, dim, *, dtype=None):
        rank = len(x.ranges)
        d = _dim(dim, rank)
        if rank == 0:
            return make_pointwise(lambda v: v, x, dtype=out.dtype, compute=x.dtype)
        n = x.ranges[d]
        if n > SCAN_LIMIT:
            raise Fallback(f"a scan over {n} elements: {n} steps per element is too slow")
        acc = upcast(out.dtype)
        load = loader_for(x, x.ranges, acc)

        def inner_fn(idx, ridx):
            source = [*idx[:d], ridx[0], *idx[d + 1 :]]
            after = ops.index_expr(ridx[0] + idx[d] * -1, torch.int64)  # r - j
            keep = ops.le(after, ops.constant(0, torch.int64))
            return ops.where(keep, load(source), ops.constant(neutral, acc))

        scan = Reduction(out.dtype, tuple(x.ranges), (n,), reduction_type, inner_fn, acc)
        return graph.add_buffer(scan)

    return lower


register("cumsum")(_scan("sum", 0))
register("cumprod")(_scan("prod", 1))


@register("nan_to_num")
def nan_to_num(graph, out, x, nan=0.0, posinf=None, neginf=None):
    """NaN, inf and -inf replaced (by default by 0 and the dtype's extremes); other values and
    integer tensors kept as they are. None asks for the default, as ATen's optional
    arguments do (`nan.value_or(0.)`, aten/src/ATen/native/UnaryOps.cpp)."""
    if not out.dtype.is_floating_point:
        return make_pointwise(lambda v: v, x, dtype=out.dtype)
    info, acc = torch.finfo(out.dtype), upcast(out.dtype)
    nan = 0.0 if nan is None else nan
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf

    def fn(v):
        def c(value):
            return ops.constant(float(value), acc)

        infinite = ops.where(ops.eq(v, c(math.inf)), c(posinf), c(neginf))
        finite = ops.where(ops.eq(ops.abs(v), c(math.inf)), infinite, v)
        return ops.where(ops.isnan(v), c(nan), finite)

    return make_pointwise(fn, x, dtype=out.dtype)


@register("hardswish")
def hardswish(graph, out, x):
    """torch's `x * min(max(x + 3, 0), 6) / 6` (aten/src/ATen/native/cpu/Activation.cpp)."""
    acc = upcast(out.dtype)

    def fn(v):
        def c(value):
            return ops.constant(value, acc)

        gate = ops.minimum(ops.maximum(ops.add(v, c(3.0)), c(0.0)), c(6.0))
        return ops.truediv(ops.mul(v, gate), c(6.0))

    return make_pointwise(fn, x, dtype=out.dtype)


def _softmax_parts(graph, x, dim, dtype):
    """`x - max(x)` and `sum(exp(x - max(x)))` over `dim`, the shared part of both softmaxes,
    with `x` cast to `dtype` first, as torch casts it."""
    if dtype != x.dtype:
        x = make_pointwise(lambda v: v, x, dtype=dtype, compute=x.dtype)
    acc = upcast(x.dtype)  # float16 rows are computed in float32 and rounded once
    biggest = make_reduction(graph, x, [dim], True, "max", acc)
    shifted = make_pointwise(ops.sub, x, biggest, dtype=acc)
    total = make_reduction(
        graph, make_pointwise(ops.exp, shifted, dtype=acc), [dim], True, "sum", acc
    )
    return shifted, total


# The softmaxes' result dtype is torch's answer (`out.dtype`), however a spelling asks for
# it: `dtype=`, or by position (third in `torch.softmax`, fourth in `F.softmax`, after
# `_stacklevel`), or `_softmax`'s `half_to_float`. The lowerings read it there, not from
# the arguments (`dtype_args`).


@register("softmax", "_softmax")
def softmax(graph, out, x, dim=None, *dtype_args, **dtype_kwargs):
    if dim is None or not is_tensor(x):
        raise Fallback("softmax without dim")
    shifted, total = _softmax_parts(graph, x, dim, out.dtype)
    return make_pointwise(lambda s, t: ops.truediv(ops.exp(s), t), shifted, total, dtype=out.dtype)


@register("log_softmax")
def log_softmax(graph, out, x, dim=None, *dtype_args, **dtype_kwargs):
    if dim is None:
        raise Fallback("log_softmax without dim")
    shifted, total = _softmax_parts(graph, x, dim, out.dtype)
    return make_pointwise(lambda s, t: ops.sub(s, ops.log(t)), shifted, total, dtype=out.dtype)


@register("logsumexp")
def logsumexp(graph, out, x, dim, keepdim=False):
    """`log(sum(exp(x - m))) + m` with `m` the row's max, set to 0 where it is infinite, as
    aten/src/ATen/native/ReduceOps.cpp computes it (a row of -inf gives -inf, not NaN)."""
    if 0 in x.ranges:
        raise Fallback("logsumexp of nothing")
    dims, acc = reduced_dims(x, _dims(dim)), upcast(out.dtype)

    def finite(m):
        return ops.where(ops.eq(ops.abs(m), ops.constant(math.inf, acc)), ops.constant(0, acc), m)

    shift = make_pointwise(finite, make_reduction(graph, x, dims, True, "max", acc), dtype=acc)
    exps = make_pointwise(lambda v, m: ops.exp(ops.sub(v, m)), x, shift, dtype=acc)
    total = make_reduction(graph, exps, dims, True, "sum", acc, acc)
    result = make_pointwise(lambda t, m: ops.add(ops.log(t), m), total, shift, dtype=out.dtype)
    if keepdim:
        return result
    return reshape_to(graph, result, _kept(x, dims))


def _normalized(graph, x, dims, eps, acc):
    """`(x - mean) / sqrt(var + eps)` over `dims`, in the dtype `acc`: the two passes of
    `_variance`, with the biased variance, as every norm uses."""
    mean, total = _two_passes(graph, x, dims, acc)
    count = as_float(math.prod([x.ranges[d] for d in dims]))
    variance = make_pointwise(ops.truediv, total, count, dtype=acc)
    deviation = make_pointwise(ops.sub, x, mean, dtype=acc)
    scale = make_pointwise(
        lambda v: ops.rsqrt(ops.add(v, ops.constant(eps, acc))), variance, dtype=acc
    )
    return make_pointwise(ops.mul, deviation, scale, dtype=acc)


def _affine(x, weight, bias, dtype):
    """`x * weight + bias` (each if given), rounded to `dtype` once at the end."""
    if weight is not None:
        x = make_pointwise(ops.mul, x, weight, dtype=x.dtype)
    if bias is not None:
        x = make_pointwise(ops.add, x, bias, dtype=x.dtype)
    return x if x.dtype == dtype else make_pointwise(lambda v: v, x, dtype=dtype, compute=x.dtype)


def _check_params(name, x, params, shape):
    """Our kernels take parameters of the input's dtype and of `shape`; torch decides the rest
    (mixed dtypes that it accepts, and the errors of those it rejects)."""
    if not x.dtype.is_floating_point:
        raise Fallback(f"{name} of {x.dtype}: torch raises")
    for param in params:
        if param is not None and (param.dtype != x.dtype or tuple(param.ranges) != shape):
            raise Fallback(f"{name}'s parameters do not match the input: torch decides")


@register("layer_norm", same_dtype=True)
def layer_norm(graph, out, x, normalized_shape, weight=None, bias=None, eps=1e-5, *args):
    # `same_dtype` skips the stand-in run that would reject these: torch (the extern) must.
    shape = tuple(normalized_shape)
    if not shape or tuple(x.ranges[-len(shape) :]) != shape:
        raise Fallback(f"layer_norm over {shape} of a {list(x.ranges)} tensor: torch raises")
    _check_params("layer_norm", x, (weight, bias), shape)
    dims = list(range(len(x.ranges) - len(shape), len(x.ranges)))
    result = _normalized(graph, x, dims, eps, upcast(out.dtype))
    return _affine(result, weight, bias, out.dtype)


@register("group_norm", same_dtype=True)
def group_norm(graph, out, x, num_groups, weight=None, bias=None, eps=1e-5, *args):
    """Normalized over each group of channels (and every position): seen as
    `(N, groups, channels per group, ...)`, an index map of `(N, C, ...)`, it is a norm over
    the dims after the second. Mapping back needs `c // size`, which is not affine, so the
    result lands in memory laid out as `(N, C, ...)` and is read from there."""
    if len(x.ranges) < 2 or x.ranges[1] % num_groups:
        raise Fallback(f"group_norm of {num_groups} groups of a {list(x.ranges)} tensor")
    n, channels, *rest = x.ranges
    _check_params("group_norm", x, (weight, bias), (channels,))
    size = channels // num_groups
    grouped = (n, num_groups, size, *rest)
    x = reindex(x, grouped, lambda idx: [idx[0], idx[1] * size + idx[2], *idx[3:]])
    result = _normalized(graph, x, list(range(2, len(grouped))), eps, upcast(out.dtype))

    def per_channel(param):  # weight[c] as `(groups, size, 1, ...)`, to broadcast
        if param is None:
            return None
        return reindex(param, (num_groups, size, *[1] * len(rest)), lambda i: [i[0] * size + i[1]])

    result = _affine(result, per_channel(weight), per_channel(bias), out.dtype)
    return reshape_to(graph, result, (n, channels, *rest))


@register(F.batch_norm, same_dtype=True)
def batch_norm(
    graph, out, x, running_mean, running_var, weight=None, bias=None, training=False,
    momentum=0.1, eps=1e-5,
):  # fmt: skip
    """Inference: each channel is `x * alpha + beta`, with torch's own terms
    (aten/src/ATen/native/batch_norm.cpp, `batch_norm_cpu_collect_linear_and_constant_terms`):
    `alpha = weight / sqrt(var + eps)`, `beta = bias - mean * alpha`, computed in the
    accumulation type (double for float32 on the CPU: a huge mean times alpha is no inf)."""
    if training or running_mean is None or running_var is None:
        raise Fallback("batch_norm in training mode: batch statistics, running ones updated")
    if len(x.ranges) < 2:
        raise Fallback(f"batch_norm of a {list(x.ranges)} tensor: torch raises")
    channels = x.ranges[1]
    params = [p for p in (running_mean, running_var, weight, bias) if p is not None]
    _check_params("batch_norm", x, params, (channels,))
    acc = upcast(out.dtype)
    terms = torch.float64 if acc == torch.float32 and graph.device.type == "cpu" else acc

    def alpha_of(mean, var, *affine):  # the parameters are loaded as `terms`
        inverse = ops.truediv(
            ops.constant(1.0, terms), ops.sqrt(ops.add(var, ops.constant(eps, terms)))
        )
        return inverse if weight is None else ops.mul(inverse, affine[0])

    def beta_of(mean, var, *affine):
        b = affine[-1] if bias is not None else ops.constant(0.0, terms)
        return ops.sub(b, ops.mul(mean, alpha_of(mean, var, *affine)))

    alpha = make_pointwise(alpha_of, *params, dtype=acc, compute=terms)
    beta = make_pointwise(beta_of, *params, dtype=acc, compute=terms)
    if terms != acc:  # in double, a sqrt and two divisions: once per channel, not per element
        alpha, beta = graph.realize(alpha), graph.realize(beta)
    channel = (channels, *[1] * (len(x.ranges) - 2))  # broadcasts along dim 1
    alpha, beta = (reindex(t, channel, lambda idx: [idx[0]]) for t in (alpha, beta))
    return make_pointwise(
        lambda v, a, b: ops.add(ops.mul(v, a), b), x, alpha, beta, dtype=out.dtype
    )


@register("rms_norm", same_dtype=True)
def rms_norm(graph, out, x, normalized_shape, weight=None, eps=None):
    """torch's own decomposition (torch/_decomp/decompositions.py, `_fused_rms_norm`):
    `x * rsqrt(mean(x ** 2) + eps) * weight`, computed in float32 for float16 and bfloat16,
    with the epsilon of that dtype when none is given."""
    shape = tuple(normalized_shape)
    if not shape or tuple(x.ranges[-len(shape) :]) != shape:
        raise Fallback(f"rms_norm over {shape} of a {list(x.ranges)} tensor: torch raises")
    _check_params("rms_norm", x, (weight,), shape)
    acc = upcast(out.dtype)
    eps = torch.finfo(acc).eps if eps is None else eps
    dims = list(range(len(x.ranges) - len(shape), len(x.ranges)))
    squares = make_pointwise(lambda v: ops.mul(v, v), x, dtype=acc)
    total = make_reduction(graph, squares, dims, True, "sum", acc, acc)
    mean = make_pointwise(ops.truediv, total, as_float(math.prod(shape)), dtype=acc)
    scale = make_pointwise(lambda m: ops.rsqrt(ops.add(m, ops.constant(eps, acc))), mean, dtype=acc)
    return _affine(make_pointwise(ops.mul, x, scale, dtype=acc), weight, None, out.dtype)


@register("dropout")
def dropout(graph, out, x, p=0.5, training=True):
    if training and p > 0:
        raise Fallback("dropout in training mode draws random numbers")
    return x


@register("softplus")
def softplus(graph, out, x, beta=1.0, threshold=20.0):
    def fn(v):
        acc = upcast(out.dtype)
        scaled = ops.mul(v, ops.constant(beta, acc))
        soft = ops.truediv(ops.log1p(ops.exp(scaled)), ops.constant(beta, acc))
        return ops.where(ops.gt(scaled, ops.constant(threshold, acc)), v, soft)

    return make_pointwise(fn, x, dtype=out.dtype)


def as_float(count):
    """A count (`numel`) as a float operand: a symbolic one stays a size (sizes.py)."""
    return count if is_symbolic(count) else float(count)
