"""View lowerings: a view changes how an index is mapped, never copies (inductor's `View` IR).

`reindex` turns each into new index arithmetic over its input; a reshape that is
not affine (merging dims of a transposed tensor, say) reads a contiguous buffer.
"""

import dataclasses
import itertools
import math
import operator

import torch

from ..ir import (
    BufferView,
    ComputedBuffer,
    Index,
    InputBuffer,
    Layout,
    OpsRecorder,
    Pointwise,
    contiguous_strides,
    index_vars,
    ops,
    set_handler,
)
from ..lowering import (
    Fallback,
    _dim,
    as_pointwise,
    broadcast_shapes,
    is_tensor,
    loader_for,
    register,
    reindex,
)
from ..symbolic.sizes import decide, floordiv, is_symbolic, maximum, slice_indices
from .gather import index_with_tensors


def reshape_to(graph, x, ranges, *, view: bool = False):
    """`x` with new sizes: an index map when only size-1 dims change, a view of the same
    memory where torch's would be one, else contiguous storage.
    `view`: the op is `view`, whose result must share `x`'s memory (a reshape may copy)."""
    if [s for s in x.ranges if s != 1] == [s for s in ranges if s != 1]:
        return viewed(x, ranges, size1_reindex(x.ranges, ranges))
    if isinstance(x, BufferView) and (stride := viewed_strides(x.layout, ranges)):
        return BufferView(x.buffer, Layout(ranges, stride, x.dtype, x.layout.offset))
    if isinstance(x, Pointwise) and (reshaped := reshaped_value(graph, x, ranges)) is not None:
        return reshaped
    if not (isinstance(x, BufferView) and x.layout.is_contiguous()):
        # A view of an input must share its memory, and torch decides whether it can. A
        # computed buffer's layout is ours (a channels-last image): eager's view, valid on
        # the meta run, has the values of a copy.
        of_an_input = isinstance(x, BufferView) and isinstance(x.buffer, InputBuffer)
        if of_an_input and view:
            raise Fallback("view of a non-contiguous input: torch decides whether it is valid")
        # Copy into a contiguous buffer (what torch.reshape does for such a tensor too).
        x = graph.add_buffer(as_pointwise(x))
    return BufferView(
        x.buffer, Layout(ranges, contiguous_strides(ranges), x.dtype, x.layout.offset)
    )


def reshaped_value(graph, x: Pointwise, ranges) -> Pointwise | None:
    """`x`, not yet in memory, computed over new sizes `ranges` without storing it, or None.

    Indices are affine (ir.py), so a reshape cannot be a floor division of the new index
    as inductor's is. Splitting a dimension needs none: old = 512*i + j. Merging dims
    (`view(-1, 3072)` after a GELU, GPT-2's) is exact without one where every load of
    `x` reads the merged dims as one (the coefficient of each is the next one's times
    its size) and no index is used as a value (`index_expr`): then the old index
    (0, ..., 0, merged) loads the same addresses. Stored instead, GPT-2's GELU under
    autocast wrote its float32 result and a second kernel cast it for the product.
    Only a value that reads no kernel's buffer is so computed: one that reads a kernel's
    (an RMS norm's sum) fuses into that kernel over its old sizes, which the new ones
    would refuse (the scheduler's "iteration spaces differ")."""
    old, new = tuple(x.ranges), tuple(ranges)
    if any(map(is_symbolic, old + new)) or 0 in old + new or math.prod(old) != math.prod(new):
        return None
    groups, i, j = [], 0, 0  # (old dims, new dims) of equal products, in order
    while i < len(old) or j < len(new):
        olds, news = [i] if i < len(old) else [], [j] if j < len(new) else []
        i, j = i + len(olds), j + len(news)
        while math.prod(old[d] for d in olds) != math.prod(new[d] for d in news):
            if math.prod(old[d] for d in olds) < math.prod(new[d] for d in news):
                olds, i = [*olds, i], i + 1
            else:
                news, j = [*news, j], j + 1
        groups.append((olds, news))
    recorder = IndexUses()
    with set_handler(recorder):
        x.inner_fn(index_vars("x", len(old)))
    kernels = {b.name for b in graph.buffers if isinstance(b, ComputedBuffer)}
    if recorder.as_values or any(name in kernels for name, _ in recorder.loads):
        return None
    for olds, _ in groups:  # every load reads the group's dims of size > 1 as one
        moving = [d for d in olds if old[d] != 1]
        for _, index in recorder.loads:
            for a, b in itertools.pairwise(moving):
                if index.coefficient(f"x{a}") != index.coefficient(f"x{b}") * old[b]:
                    return None

    def old_index(idx):
        found = [Index()] * len(old)
        for olds, news in groups:
            flat = Index()
            for k in news:
                flat = flat + idx[k] * math.prod(new[d] for d in news[news.index(k) + 1 :])
            moving = [d for d in olds if old[d] != 1]
            if moving:
                found[moving[-1]] = flat
        return found

    load = x.inner_fn
    return Pointwise(x.dtype, new, lambda idx: load(old_index(idx)), x.cost)


class IndexUses(OpsRecorder):
    """Loads, as OpsRecorder records them, and whether an index is used as a value."""

    as_values = False

    def index_expr(self, *args, **kwargs):
        self.as_values = True
        return "index_expr"


def viewed_strides(layout: Layout, ranges) -> tuple[int, ...] | None:
    """The strides of a view of `layout`'s memory with sizes `ranges`, as torch gives them
    (ATen's `computeStride`, asked of a meta tensor), or None where torch would copy: a
    head split of a column slice (nanoGPT's `q.view(B, T, heads, -1)` of `qkv.split`) is a
    view, as in eager, and the attention reads it in place."""
    sizes = (*layout.size, *layout.stride, *ranges)
    if layout.is_contiguous() or any(map(is_symbolic, sizes)):
        return None  # the contiguous case needs no meta call; symbols: copy, as before
    try:
        base = torch.empty_strided(layout.size, layout.stride, device="meta")
        return tuple(base.view(ranges).stride())
    except RuntimeError:
        return None


def size1_reindex(source_ranges, ranges):
    """The index map of a reshape that only adds or removes size-1 dimensions."""
    kept_out = [d for d, s in enumerate(ranges) if s != 1]

    def fn(idx):
        picks = iter(kept_out)
        return [Index() if s == 1 else idx[next(picks)] for s in source_ranges]

    return fn


@register("permute", same_dtype=True)
def permute(graph, out, x, *dims):
    dims = dims[0] if len(dims) == 1 and isinstance(dims[0], (list, tuple)) else dims
    rank = len(x.ranges)
    dims = [d % rank for d in dims]
    inverse = [dims.index(d) for d in range(rank)]
    if sorted(dims) != list(range(rank)):
        raise RuntimeError(f"permute({dims}): the dims must be a permutation of 0..{rank - 1}")
    ranges = tuple(x.ranges[d] for d in dims)

    def order(idx):
        return [idx[inverse[d]] for d in range(rank)]

    return viewed(x, ranges, order)


def viewed(x, ranges, reindex_fn):
    """`reindex(x, ranges, reindex_fn)`, which for a value not yet in memory also remembers
    what it views: a call into torch then stores the value as it is and takes the view of
    it, as inductor's ReinterpretView and ExpandView (like_eager/externs.py). Permuted,
    `mm(x, w.to(bf16).t())` writes the cast weight as the weight lies, not transposed,
    which reads it across rows; expanded, an attention mask of one (seq, seq) plane is
    passed with zero strides, as eager passes it, not written out for every batch and head."""
    if not isinstance(x, Pointwise):
        return reindex(x, ranges, reindex_fn)
    source, inner = x.view or (x, list)
    view = (source, lambda i: inner(reindex_fn(i)))
    return dataclasses.replace(reindex(x, ranges, reindex_fn), view=view)


@register("transpose", "swapaxes", same_dtype=True)
def transpose(graph, out, x, dim0, dim1):
    rank = len(x.ranges)
    order = list(range(rank))
    if rank:
        order[dim0 % rank], order[dim1 % rank] = order[dim1 % rank], order[dim0 % rank]
    return permute(graph, out, x, order)


@register("t", same_dtype=True)
def t(graph, out, x):
    return transpose(graph, out, x, 0, 1) if len(x.ranges) == 2 else x


@register("expand", "expand_as", "broadcast_to", same_dtype=True)
def expand(graph, out, x, *sizes):
    sizes = sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (list, tuple)) else sizes
    sizes = sizes[0].ranges if len(sizes) == 1 and is_tensor(sizes[0]) else sizes
    skip = len(sizes) - len(x.ranges)
    ranges = tuple(x.ranges[d - skip] if s == -1 else s for d, s in enumerate(sizes))
    if skip < 0 or broadcast_shapes(x.ranges, ranges) != ranges:
        raise RuntimeError(f"cannot expand a tensor of size {list(x.ranges)} to {list(sizes)}")
    return viewed(
        x,
        ranges,
        lambda idx: [
            Index() if s == 1 and ranges[skip + d] != 1 else idx[skip + d]
            for d, s in enumerate(x.ranges)
        ],
    )


def _infer_size(shape, numel):
    """`view(2, -1)`'s sizes, with the error torch raises when they do not fit."""
    shape = list(shape[0] if len(shape) == 1 and isinstance(shape[0], (list, tuple)) else shape)
    known = math.prod([s for s in shape if s != -1])
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{shape}' is invalid for input of size {numel}")
        shape[shape.index(-1)] = numel // known
    if math.prod(shape) != numel:
        raise RuntimeError(f"shape '{shape}' is invalid for input of size {numel}")
    return tuple(shape)


RESHAPES = {
    "view": lambda x, *shape: _infer_size(shape, math.prod(x.ranges)),
    "reshape": lambda x, *shape: _infer_size(shape, math.prod(x.ranges)),
    "view_as": lambda x, other: other.ranges,
    "reshape_as": lambda x, other: other.ranges,
    "unsqueeze": lambda x, dim: _unsqueezed(x.ranges, _dim(dim, len(x.ranges) + 1)),
    "squeeze": lambda x, *dims: _squeezed(x.ranges, dims[0] if len(dims) == 1 else dims or None),
    "flatten": lambda x, start_dim=0, end_dim=-1: _flattened(x.ranges, start_dim, end_dim),
    "unflatten": lambda x, dim, sizes: _unflattened(x.ranges, _dim(dim, len(x.ranges)), sizes),
}


def _unsqueezed(ranges, dim):
    return (*ranges[:dim], 1, *ranges[dim:])


def _squeezed(ranges, dim):
    """`squeeze()`, `squeeze(d)`, and `squeeze((d0, d1))` or `squeeze(d0, d1)` (torch takes a
    list of dims as varargs too): each dim of size 1 goes, the others stay."""
    if dim is None:
        return tuple(s for s in ranges if s != 1)
    dims = {_dim(d, len(ranges)) for d in (dim if isinstance(dim, (list, tuple)) else [dim])}
    return tuple(s for d, s in enumerate(ranges) if not (d in dims and s == 1))


def _flattened(ranges, start, end):
    if not ranges:
        return (1,)
    start, end = _dim(start, len(ranges)), _dim(end, len(ranges))
    return (*ranges[:start], math.prod(ranges[start : end + 1]), *ranges[end + 1 :])


def _unflattened(ranges, dim, sizes):
    return ranges[:dim] + _infer_size(sizes, ranges[dim]) + ranges[dim + 1 :]


def reshape_lowering(new_sizes, view: bool):
    """The lowering of one op of `RESHAPES`, whose sizes `new_sizes(x, *args)` gives; `view`
    for `view`, whose result must share its input's memory."""

    def reshape(graph, out, x, *args, **kwargs):
        if args and isinstance(args[0], torch.dtype):
            raise Fallback("view as another dtype")
        return reshape_to(graph, x, tuple(new_sizes(x, *args, **kwargs)), view=view)

    return reshape


for _op, _new_sizes in RESHAPES.items():
    register(_op, same_dtype=True)(reshape_lowering(_new_sizes, view=_op == "view"))


@register(operator.getitem, same_dtype=True)
def getitem(graph, out, x, index):
    """Basic indexing (ints, slices, None, ...): a view; integer tensors among the indices
    read at their positions (gather.py)."""
    if not is_tensor(x):
        raise Fallback("getitem on a non-tensor")
    index = index if isinstance(index, tuple) else (index,)
    if any(is_tensor(i) for i in index):
        return index_with_tensors(graph, x, index, lambda basic: getitem(graph, out, x, basic))
    if not all(i is None or i is Ellipsis or isinstance(i, (int, slice)) for i in index):
        raise Fallback("advanced indexing")
    if Ellipsis in index:
        at = index.index(Ellipsis)
        fill = len(x.ranges) - sum(1 for i in index if i is not None and i is not Ellipsis)
        index = index[:at] + (slice(None),) * fill + index[at + 1 :]
    index = index + (slice(None),) * (len(x.ranges) - sum(1 for i in index if i is not None))
    # Each source dimension is a fixed int or start + step * (an output dimension).
    plan, ranges, out_dim, src_dim = [], [], 0, 0
    for item in index:
        if item is None:
            ranges.append(1)
            out_dim += 1
            continue
        if src_dim >= len(x.ranges):
            raise IndexError(f"too many indices for tensor of dimension {len(x.ranges)}")
        size = x.ranges[src_dim]
        if isinstance(item, int):
            if not (decide(operator.ge, item, -size) and decide(operator.lt, item, size)):
                raise IndexError(
                    f"index {item} is out of bounds for dimension {src_dim} with size {size}"
                )
            plan.append(("fixed", item + size if item < 0 else item))
        else:
            if item.step is not None and item.step <= 0:
                raise ValueError("step must be greater than zero")
            start, stop, step = slice_indices(item, size)
            plan.append(("slice", out_dim, start, step))
            ranges.append(maximum(0, floordiv(stop - start + step - 1, step)))
            out_dim += 1
        src_dim += 1

    def fn(idx):
        return [Index.const(p[1]) if p[0] == "fixed" else idx[p[1]] * p[3] + p[2] for p in plan]

    # Every element kept (only new size-1 dims, `mask[None, None]`): a view for torch too.
    # A slice that drops elements is not: torch would be given all of them to read a few.
    every = all(p[0] == "slice" and p[2:] == (0, 1) for p in plan)
    every = every and all(ranges[p[1]] == x.ranges[d] for d, p in enumerate(plan))
    return (viewed if every else reindex)(x, tuple(ranges), fn)


@register("select", same_dtype=True)
def select(graph, out, x, dim, index):
    rank = len(x.ranges)
    return getitem(graph, out, x, (slice(None),) * (dim % rank) + (index,))


@register("narrow", same_dtype=True)
def narrow(graph, out, x, dim, start, length):
    rank = len(x.ranges)
    return getitem(graph, out, x, (slice(None),) * (dim % rank) + (slice(start, start + length),))


# ----------------------------------------------------------------------------- pieces
# `split`, `chunk` and `unbind` return views of their input, so their pieces are narrow
# (or select) views here. Where the cuts fall, and eager's errors, come from torch itself:
# the same call on a meta tensor as long as the cut dimension.


def _cut_dim(x, dim) -> tuple[int, int]:
    """The dimension to cut and its length; a 0-d tensor has none (the extern's meta run
    then raises eager's error), a symbolic length is torch's to cut."""
    dim = _dim(dim, len(x.ranges))
    if not x.ranges:
        raise RuntimeError("a 0-d tensor has no dimension to cut")
    if is_symbolic(x.ranges[dim]):
        raise Fallback("the pieces of a symbolic size")
    return dim, x.ranges[dim]


def _pieces(graph, out, x, dim, cut):
    dim, length = _cut_dim(x, dim)
    sizes = [piece.shape[0] for piece in cut(torch.empty(length, device="meta"))]
    starts = itertools.accumulate(sizes, initial=0)
    return tuple(narrow(graph, out, x, dim, s, n) for s, n in zip(starts, sizes, strict=False))


@register("split", "split_with_sizes", same_dtype=True)
def split(graph, out, x, sizes=None, dim=0, **named):
    """`x.split(size or sizes, dim)`, `torch.split(x, split_size_or_sections)`,
    `x.split_with_sizes(split_sizes)`: the sizes may come by any of those names."""
    sizes = named.popitem()[1] if sizes is None and len(named) == 1 else sizes
    return _pieces(graph, out, x, dim, lambda t: t.split(sizes))


@register("chunk", same_dtype=True)
def chunk(graph, out, x, chunks, dim=0):
    return _pieces(graph, out, x, dim, lambda t: t.chunk(chunks))


@register("unbind", same_dtype=True)
def unbind(graph, out, x, dim=0):
    dim, length = _cut_dim(x, dim)
    return tuple(select(graph, out, x, dim, i) for i in range(length))


# ----------------------------------------------------------------------------- copies by index maps
# Each element of the result is one element of an input: new memory in eager, so these
# are `Pointwise` values (never views: a flipped view would need a negative stride).


@register("flip", same_dtype=True)
def flip(graph, out, x, *dims):
    dims = dims[0] if len(dims) == 1 and isinstance(dims[0], (list, tuple)) else dims
    rank, load = len(x.ranges), x.loader()
    flipped = {_dim(d, rank) for d in dims}
    ends = [size - 1 for size in x.ranges]

    def fn(idx):
        return [i * -1 + ends[d] if d in flipped else i for d, i in enumerate(idx)]

    return Pointwise(x.dtype, tuple(x.ranges), lambda idx: load(fn(idx)), x.cost)


@register("repeat", same_dtype=True)
def repeat(graph, out, x, *sizes):
    """`x` seen as `(1, s0, 1, s1, ...)`, expanded to `(r0, s0, r1, s1, ...)` and laid out in
    memory, is `(r0 * s0, r1 * s1, ...)`: the repeated tensor, as a reshape of that buffer."""
    sizes = tuple(sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (list, tuple)) else sizes)
    if len(sizes) < len(x.ranges):
        raise Fallback("repeat with fewer sizes than dims: torch raises")
    pad = len(sizes) - len(x.ranges)
    source = (1,) * pad + tuple(x.ranges)
    pairs = tuple(v for r, s in zip(sizes, source, strict=True) for v in (r, s))
    expanded = reindex(x, pairs, lambda idx: [idx[2 * d + 1] for d in range(pad, len(source))])
    if isinstance(expanded, BufferView):  # a view of x with zero strides: copy it
        expanded = Pointwise(x.dtype, pairs, expanded.loader(), x.cost)
    ranges = tuple(r * s for r, s in zip(sizes, source, strict=True))
    return reshape_to(graph, graph.realize(expanded), ranges)


# More inputs than this: a chain of selections per element costs more than the copies
# (inductor's `max_pointwise_cat_inputs`).
MAX_CAT_INPUTS = 8


@register("cat", "concat", "concatenate", same_dtype=True)
def cat(graph, out, tensors, dim=0):
    """Each element comes from the input whose slice of `dim` holds it: a chain of
    `where`s, each load masked (`ops.masked`) so that it never reads outside its input.
    (`same_dtype`: one-element stand-ins cannot answer for the 1-D empty tensors that torch
    skips, so inputs of several dtypes, which torch promotes, are torch's.)"""
    if not all(is_tensor(t) for t in tensors):
        raise Fallback("cat of something that is not a tensor")
    if len({t.dtype for t in tensors}) > 1:
        raise Fallback("cat of tensors of several dtypes")
    rank = max(len(t.ranges) for t in tensors)
    d = _dim(dim, rank)
    # torch skips the 1-D empty tensors (legacy), and the others without elements add none
    parts = [t for t in tensors if len(t.ranges) == rank and t.ranges[d] != 0] or [tensors[0]]
    if len(parts) > MAX_CAT_INPUTS:
        raise Fallback(f"cat of {len(parts)} tensors: copies cost less than the selections")
    starts = [sum(p.ranges[d] for p in parts[:k]) for k in range(len(parts) + 1)]
    ranges = list(parts[0].ranges)
    ranges[d] = starts[-1]
    loaders = [loader_for(p, p.ranges, out.dtype) for p in parts]

    def inner_fn(idx):
        position = ops.index_expr(idx[d], torch.int64)
        result = None
        for k in reversed(range(len(parts))):
            shifted = [*idx[:d], idx[d] + -starts[k], *idx[d + 1 :]]
            inside = _between(position, starts[k] if k else None, starts[k + 1] if result else None)
            if inside is None:
                return loaders[k](shifted)  # a single part
            value = ops.masked(inside, lambda k=k, shifted=shifted: loaders[k](shifted), 0)
            result = value if result is None else ops.where(inside, value, result)
        return result

    return Pointwise(out.dtype, tuple(ranges), inner_fn, 1 + sum(p.cost for p in parts))


def _between(position, start, end):
    """`start <= position < end` as an op (either bound may be None: no bound)."""
    checks = [ops.ge(position, ops.constant(start, torch.int64))] if start is not None else []
    if end is not None:
        checks.append(ops.lt(position, ops.constant(end, torch.int64)))
    if not checks:
        return None
    return checks[0] if len(checks) == 1 else ops.logical_and(*checks)


@register("slice_scatter", same_dtype=True)
def slice_scatter(graph, out, base, src, dim=0, start=None, end=None, step=1):
    """`base` with its slice `start:end:step` of `dim` replaced by `src`: the backward of a
    slice, as the ATen trace writes it (inductor lowers it the same way). One pointwise
    value: inside the slice, `src` (a masked load); outside, `base`."""
    if not (is_tensor(base) and is_tensor(src)) or base.dtype != src.dtype:
        raise Fallback("slice_scatter of non-tensors, or of two dtypes")
    d = _dim(dim, len(base.ranges))
    first, stop, step = slice_indices(slice(start, end, step), base.ranges[d])
    want = list(base.ranges)
    want[d] = maximum(0, floordiv(stop - first + step - 1, step))
    if step != 1 or list(src.ranges) != want:
        raise Fallback("slice_scatter with a step, or a source of another size than the slice")
    load_base, load_src = (loader_for(t, t.ranges, out.dtype) for t in (base, src))

    def inner_fn(idx):
        inside = _between(ops.index_expr(idx[d], torch.int64), first, stop)
        shifted = [*idx[:d], idx[d] + -first, *idx[d + 1 :]]
        if inside is None:  # the whole of `dim`
            return load_src(shifted)
        return ops.where(inside, ops.masked(inside, lambda: load_src(shifted), 0), load_base(idx))

    return Pointwise(out.dtype, tuple(base.ranges), inner_fn, 1 + base.cost + src.cost)


@register("stack", same_dtype=True)
def stack(graph, out, tensors, dim=0):
    if not all(is_tensor(t) for t in tensors):
        raise Fallback("stack of something that is not a tensor")
    d = _dim(dim, len(tensors[0].ranges) + 1)
    return cat(graph, out, [reshape_to(graph, t, _unsqueezed(t.ranges, d)) for t in tensors], d)


# ----------------------------------------------------------------------------- sizes


@register("size", getattr, same_dtype=True)
def size(graph, out, x, what=None):
    """`x.size()`, `x.size(1)`, `x.shape`, `x.ndim`, `x.dtype`, `x.device` in a graph made by
    `symbolic_trace` (Dynamo makes them constants): the code is specialised to them. And
    `x.T` and `x.mT`, views."""
    known = {
        "ndim": lambda: len(x.ranges),
        "dtype": lambda: x.dtype,
        "device": lambda: graph.device,
        "T": lambda: permute(graph, out, x, list(reversed(range(len(x.ranges))))),  # a view
        "mT": lambda: transpose(graph, out, x, -2, -1),
    }
    if not is_tensor(x) or (isinstance(what, str) and what not in (*known, "shape")):
        raise Fallback(f"getattr {what!r}")
    if what == "mT" and len(x.ranges) < 2:
        raise Fallback("mT of a tensor of fewer than 2 dims: torch raises")
    if what in known:
        return known[what]()
    if isinstance(what, int):
        return x.ranges[_dim(what, len(x.ranges))]
    return torch.Size(x.ranges)
