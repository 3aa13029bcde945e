"""Pooling: one reduction per output element, over its window.

Window element `(kh, kw)` of output `(oh, ow)` is input
`(oh*stride - padding + kh*dilation, ...)`: affine in the output index and the reduction
index, so pooling is a `Reduction` like `amax` (`max_pool2d`) or `sum` (`avg_pool2d`),
whose loads `ops.masked` keeps inside the input where the window hangs over the padding.
Inductor unrolls the window's loads instead (torch/_inductor/lowering.py); a reduction
keeps the kernel's size independent of the window's.

Adaptive pooling's windows (`adaptive_avg_pool2d(x, (7, 7))`) start where the kernel
computes they do, per output, since `floor(i*n/o)` is no affine index; their loads go
through an index variable, as a gather's do (`_adaptive_window`).

The output's size (with `ceil_mode`) and the errors of bad arguments are torch's own:
the op runs on a meta tensor first.
"""

import operator

import torch
import torch.nn.functional as F

from ..ir import Index, Pointwise, Reduction, ops
from ..lowering import Fallback, loader_for, register, upcast
from ..symbolic.sizes import as_sizes, as_symint, as_symints, decide, floordiv, is_symbolic


def _pair(value):
    return (value, value) if isinstance(value, int) else tuple(value) * (3 - len(value))


def _output_ranges(fn, x, *args) -> tuple[int, ...]:
    """Eager's output size, from the op on a meta tensor (which raises eager's error); with
    symbolic sizes, the ShapeEnv's (`(s0 - 1)//2 + 1`, a computed size: symbolic/computed.py)."""
    meta = torch.empty(as_symints(x.ranges), dtype=x.dtype, device="meta")
    return as_sizes(fn(meta, *args).shape)


def _window(graph, x, ranges, kernel, stride, padding, dilation, padded_with):
    """`inner_fn(idx, ridx)` of a reduction over windows: the input under window element
    `ridx` of output `idx`, or `padded_with` outside the input.

    A computed input is stored first (inductor's pooling lowerings realize it too): windows
    overlap, and each output reads kernel-many inputs, so an inlined batch norm and ReLU
    would run once per element of every window of a pool (a ResNet's stem)."""
    x = graph.realize_preferred(x) if isinstance(x, Pointwise) else x
    load = loader_for(x, x.ranges, upcast(x.dtype))
    sizes = x.ranges[-2:]
    last = [
        (o - 1) * s + (k - 1) * d  # the last input element a window reaches
        for o, s, k, d in zip(ranges[-2:], stride, kernel, dilation, strict=True)
    ]
    inside_always = padding == (0, 0) and all(
        decide(operator.lt, r, n) for r, n in zip(last, sizes, strict=True)
    )

    def inner_fn(idx, ridx):
        source = [
            o * s + r * d + -p
            for o, r, s, d, p in zip(idx[-2:], ridx, stride, dilation, padding, strict=True)
        ]
        if inside_always:
            return load([*idx[:-2], *source])
        inside = None
        for i, n in zip(source, sizes, strict=True):
            position = ops.index_expr(i, torch.int64)
            low = ops.ge(position, _int(0))
            both = ops.logical_and(low, ops.lt(position, _int(n)))
            inside = both if inside is None else ops.logical_and(inside, both)
        return ops.masked(inside, lambda: load([*idx[:-2], *source]), padded_with)

    return inner_fn


def _arguments(kernel_size, stride, padding, dilation=1):
    kernel = _pair(kernel_size)
    stride = _pair(stride) if stride not in (None, [], ()) else kernel
    return kernel, stride, _pair(padding), _pair(dilation)


@register("max_pool2d", same_dtype=True)
def max_pool2d(
    graph, out, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
    return_indices=False,
):  # fmt: skip
    """NaN wins, as in torch's kernel (`val > max || isnan(val)`): our max reductions agree."""
    if return_indices or x.dtype == torch.bool:
        raise Fallback("max_pool2d with indices, or of bools: torch")
    if not x.dtype.is_floating_point and graph.device.type == "cuda":  # CUDA's torch refuses
        raise Fallback("max_pool2d of integers on CUDA: torch, which raises eager's error")
    ranges = _output_ranges(F.max_pool2d, x, kernel_size, stride, padding, dilation, ceil_mode)
    kernel, stride, padding, dilation = _arguments(kernel_size, stride, padding, dilation)
    acc = upcast(x.dtype)
    lowest = -float("inf") if acc.is_floating_point else torch.iinfo(acc).min
    window = _window(graph, x, ranges, kernel, stride, padding, dilation, lowest)
    return graph.realize_preferred(Reduction(x.dtype, ranges, kernel, "max", window, acc))


@register("avg_pool2d", same_dtype=True)
def avg_pool2d(
    graph, out, x, kernel_size, stride=None, padding=0, ceil_mode=False,
    count_include_pad=True, divisor_override=None,
):  # fmt: skip
    if not x.dtype.is_floating_point:
        raise Fallback("avg_pool2d of integers divides with truncation: torch")
    args = (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
    ranges = _output_ranges(F.avg_pool2d, x, *args)
    kernel, stride, padding, _ = _arguments(kernel_size, stride, padding)
    return _average(graph, out, x, ranges, kernel, stride, padding, count_include_pad,
                    divisor_override)  # fmt: skip


def _average(graph, out, x, ranges, kernel, stride, padding, count_include_pad, divisor_override):
    acc = upcast(x.dtype)
    window = _window(graph, x, ranges, kernel, stride, padding, (1, 1), 0.0)
    total = graph.add_buffer(Reduction(acc, ranges, kernel, "sum", window, acc)).loader()
    # Every window lies inside the input (and its padding, where that counts): each divides
    # by its size. With constant sizes the C++ compiler finds this out itself from the
    # `min`s of `_window_count`; with symbolic ones it cannot, and computed the count and
    # divided by it for every output (3.5x the static kernel's time for a 2x2 pool).
    whole = (count_include_pad or padding == (0, 0)) and all(
        decide(operator.le, (o - 1) * s - p + k, n + p)
        for o, n, k, s, p in zip(ranges[-2:], x.ranges[-2:], kernel, stride, padding, strict=True)
    )

    def divisor(idx):
        if divisor_override:
            return ops.constant(divisor_override, acc)
        if whole:
            return ops.to_dtype(_int(kernel[0] * kernel[1]), acc)
        h, w = [
            _window_count(o, n, k, s, p, count_include_pad)
            for o, n, k, s, p in zip(idx[-2:], x.ranges[-2:], kernel, stride, padding, strict=True)
        ]
        return ops.to_dtype(ops.mul(h, w), acc)

    def inner_fn(idx):
        return ops.to_dtype(ops.truediv(total(idx), divisor(idx)), out.dtype)

    return Pointwise(out.dtype, ranges, inner_fn)


def _int(value):
    """An int64 value: a literal, or a size that is a symbol (the kernel's argument)."""
    if is_symbolic(value):
        return ops.index_expr(Index.const(value), torch.int64)
    return ops.constant(value, torch.int64)


def _window_count(o, size, kernel, stride, padding, count_padding):
    """How many elements of one dim torch divides by (aten/src/ATen/native/cpu/AvgPoolKernel.cpp):
    the window cut at the padding's end, or also at the input's when the padding does not
    count."""
    c = _int
    start = ops.index_expr(o * stride + -padding, torch.int64)
    end = ops.minimum(ops.add(start, c(kernel)), c(size + padding))
    if count_padding:
        return ops.sub(end, start)
    return ops.sub(ops.minimum(end, c(size)), ops.maximum(start, c(0)))


# ----------------------------------------------------------------------------- adaptive


def _adaptive_ranges(fn, x, output_size, dims: int):
    """Eager's output size, and the input's and output's spatial sizes (the last `dims`)."""
    if not x.dtype.is_floating_point:
        raise Fallback(f"{fn.__name__} of {x.dtype}: torch")
    if isinstance(output_size, (tuple, list)):  # `(x.size(2) // 2, 3)`: sizes as torch takes them
        output_size = as_symints(output_size)
    ranges = _output_ranges(fn, x, as_symint(output_size))
    sizes, outputs = x.ranges[-dims:], ranges[-dims:]
    if 0 in outputs:
        raise Fallback(f"{fn.__name__} to an empty output: torch")
    return ranges, sizes, outputs


def _evenly(sizes, outputs) -> bool:
    """Whether every window has one size and stride (`n/o`): `o` divides `n`, or is 1."""
    return all(
        o == 1 or (not (is_symbolic(n) or is_symbolic(o)) and n % o == 0)
        for n, o in zip(sizes, outputs, strict=True)
    )


def _adaptive_window(graph, x, ranges, dims: int, padded_with):
    """`inner_fn(idx, ridx)` of a reduction over adaptive windows, the window's largest size
    per dim (the reduction's ranges), and `bounds(i, n, o)`.

    Output `i` of `o` pools input `floor(i*n/o)` up to `ceil((i+1)*n/o)`, a window of at most
    `ceil((n + o - 1)/o)` (inductor's `h_kernel_max`): for `n < o` too, where windows of one
    or two inputs repeat. Its start is no affine index: the kernel computes it (`truncdiv`,
    which is floor division for these non-negative numbers) and loads at it through an index
    variable, as a gather does; window elements past its end are masked. With symbolic sizes
    the largest window is a computed size, so one kernel serves every size; inductor asks for
    the sizes' values instead (`guard_int`), and compiles once per size."""
    x = graph.realize_preferred(x) if isinstance(x, Pointwise) else x
    load = loader_for(x, x.ranges, upcast(x.dtype))
    sizes, outputs = x.ranges[-dims:], ranges[-dims:]
    kernel = tuple(floordiv(n + 2 * o - 2, o) for n, o in zip(sizes, outputs, strict=True))

    def bounds(i, n, o):
        start = ops.truncdiv(ops.index_expr(i * n, torch.int64), _int(o))
        end = ops.truncdiv(ops.index_expr(i * n + (n + o - 1), torch.int64), _int(o))
        return start, end

    def inner_fn(idx, ridx):
        source, inside = [], None
        for i, r, n, o in zip(idx[-dims:], ridx, sizes, outputs, strict=True):
            start, end = bounds(i, n, o)
            within = ops.lt(ops.add(start, ops.index_expr(r, torch.int64)), end)
            inside = within if inside is None else ops.logical_and(inside, within)
            source.append(Index.var(ops.indirect_indexing(start, n)) + r)
        return ops.masked(inside, lambda: load([*idx[:-dims], *source]), padded_with)

    return inner_fn, kernel, bounds


def _adaptive_avg_pool(dims: int):
    fn = getattr(F, f"adaptive_avg_pool{dims}d")

    def adaptive_avg_pool(graph, out, x, output_size):
        """Windows of one size (`o` divides `n`: a ResNet's head, to 1x1, for every size) are
        an `avg_pool2d`; the rest sum their adaptive window and divide by its size, per dim
        as eager's kernel does (`sum / kh / kw`)."""
        ranges, sizes, outputs = _adaptive_ranges(fn, x, output_size, dims)
        if dims == 2 and _evenly(sizes, outputs):
            kernel = tuple(n if o == 1 else n // o for n, o in zip(sizes, outputs, strict=True))
            return _average(graph, out, x, ranges, kernel, kernel, (0, 0), True, None)
        acc = upcast(x.dtype)
        window, kernel, bounds = _adaptive_window(graph, x, ranges, dims, 0.0)
        total = graph.add_buffer(Reduction(acc, ranges, kernel, "sum", window, acc)).loader()

        def inner_fn(idx):
            value = total(idx)
            for i, n, o in zip(idx[-dims:], sizes, outputs, strict=True):
                start, end = bounds(i, n, o)
                value = ops.truediv(value, ops.to_dtype(ops.sub(end, start), acc))
            return ops.to_dtype(value, out.dtype)

        return Pointwise(out.dtype, ranges, inner_fn)

    return adaptive_avg_pool


def _adaptive_max_pool(dims: int):
    fn = getattr(F, f"adaptive_max_pool{dims}d")

    def adaptive_max_pool(graph, out, x, output_size, return_indices=False):
        """NaN wins, as in eager's kernel (`val > max || isnan(val)`)."""
        if return_indices:
            raise Fallback(f"{fn.__name__} with indices: torch")
        ranges, sizes, outputs = _adaptive_ranges(fn, x, output_size, dims)
        acc = upcast(x.dtype)
        if dims == 2 and _evenly(sizes, outputs):
            kernel = tuple(n if o == 1 else n // o for n, o in zip(sizes, outputs, strict=True))
            window = _window(graph, x, ranges, kernel, kernel, (0, 0), (1, 1), -float("inf"))
        else:
            window, kernel, _ = _adaptive_window(graph, x, ranges, dims, -float("inf"))
        return graph.realize_preferred(Reduction(x.dtype, ranges, kernel, "max", window, acc))

    return adaptive_max_pool


# torch.adaptive_max_pool1d returns the indices too: only torch.nn.functional's are these.
for _dims in (1, 2, 3):
    register(f"adaptive_avg_pool{_dims}d", same_dtype=True)(_adaptive_avg_pool(_dims))
    register(getattr(F, f"adaptive_max_pool{_dims}d"), same_dtype=True)(_adaptive_max_pool(_dims))
