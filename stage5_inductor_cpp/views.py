"""View lowerings: a view changes how an index is mapped, never copies (inductor's `View` IR).

`reindex` turns each into new index arithmetic over its input; a reshape that is
not affine (merging dims of a transposed tensor, say) reads a contiguous buffer.
"""

import operator

import torch

from .ir import Index
from .lowering import (
    Fallback,
    _dim,
    _numel,
    broadcast_shapes,
    is_tensor,
    register,
    reindex,
    reshape_to,
)


@register("permute", same_dtype=True)
def permute(graph, out, x, *dims):
    dims = dims[0] if len(dims) == 1 and isinstance(dims[0], (list, tuple)) else dims
    rank = len(x.ranges)
    dims = [d % rank for d in dims]
    inverse = [dims.index(d) for d in range(rank)]
    if sorted(dims) != list(range(rank)):
        raise RuntimeError(f"permute({dims}): the dims must be a permutation of 0..{rank - 1}")
    ranges = tuple(x.ranges[d] for d in dims)
    return reindex(x, ranges, lambda idx: [idx[inverse[d]] for d in range(rank)])


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
    return reindex(
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
    known = _numel([s for s in shape if s != -1])
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{shape}' is invalid for input of size {numel}")
        shape[shape.index(-1)] = numel // known
    if _numel(shape) != numel:
        raise RuntimeError(f"shape '{shape}' is invalid for input of size {numel}")
    return tuple(shape)


RESHAPES = {
    "view": lambda x, *shape: _infer_size(shape, _numel(x.ranges)),
    "reshape": lambda x, *shape: _infer_size(shape, _numel(x.ranges)),
    "view_as": lambda x, other: other.ranges,
    "reshape_as": lambda x, other: other.ranges,
    "unsqueeze": lambda x, dim: _unsqueezed(x.ranges, _dim(dim, len(x.ranges) + 1)),
    "squeeze": lambda x, dim=None: _squeezed(x.ranges, dim),
    "flatten": lambda x, start_dim=0, end_dim=-1: _flattened(x.ranges, start_dim, end_dim),
    "unflatten": lambda x, dim, sizes: _unflattened(x.ranges, _dim(dim, len(x.ranges)), sizes),
}


def _unsqueezed(ranges, dim):
    return (*ranges[:dim], 1, *ranges[dim:])


def _squeezed(ranges, dim):
    if dim is None:
        return tuple(s for s in ranges if s != 1)
    dims = {_dim(d, len(ranges)) for d in (dim if isinstance(dim, (list, tuple)) else [dim])}
    return tuple(s for d, s in enumerate(ranges) if not (d in dims and s == 1))


def _flattened(ranges, start, end):
    if not ranges:
        return (1,)
    start, end = _dim(start, len(ranges)), _dim(end, len(ranges))
    return (*ranges[:start], _numel(ranges[start : end + 1]), *ranges[end + 1 :])


def _unflattened(ranges, dim, sizes):
    return ranges[:dim] + _infer_size(sizes, ranges[dim]) + ranges[dim + 1 :]


@register(*RESHAPES, same_dtype=True)
def reshape(graph, out, x, *args, **kwargs):
    if args and isinstance(args[0], torch.dtype):
        raise Fallback("view as another dtype")
    return reshape_to(graph, x, tuple(RESHAPES[graph.current_target](x, *args, **kwargs)))


@register(operator.getitem, same_dtype=True)
def getitem(graph, out, x, index):
    """Basic indexing (ints, slices, None, ...): a view; tensors as indices go to torch."""
    if not is_tensor(x):
        raise Fallback("getitem on a non-tensor")
    index = index if isinstance(index, tuple) else (index,)
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
            if not -size <= item < size:
                raise IndexError(
                    f"index {item} is out of bounds for dimension {src_dim} with size {size}"
                )
            plan.append(("fixed", item % size))
        else:
            if item.step is not None and item.step <= 0:
                raise ValueError("step must be greater than zero")
            start, stop, step = item.indices(size)
            plan.append(("slice", out_dim, start, step))
            ranges.append(max(0, (stop - start + step - 1) // step))
            out_dim += 1
        src_dim += 1

    def fn(idx):
        return [Index.const(p[1]) if p[0] == "fixed" else idx[p[1]] * p[3] + p[2] for p in plan]

    return reindex(x, tuple(ranges), fn)


@register("select", same_dtype=True)
def select(graph, out, x, dim, index):
    rank = len(x.ranges)
    return getitem(graph, out, x, (slice(None),) * (dim % rank) + (index,))


@register("narrow", same_dtype=True)
def narrow(graph, out, x, dim, start, length):
    rank = len(x.ranges)
    return getitem(graph, out, x, (slice(None),) * (dim % rank) + (slice(start, start + length),))
