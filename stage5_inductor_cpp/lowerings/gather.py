"""Reads at positions that a tensor holds: `embedding`, `index_select`, `gather`, `x[idx]`.

The position is a loaded value (`ids[x0]`), which `ops.indirect_indexing` turns into
an index variable; the rest of the index stays affine:

    embedding(ids, weight)[x0, x1] = weight[64*indirect(ids[x0]) + x1]

torch checks every position before it reads, and raises; which error depends on the op
and even on its path (`index_select` raises an IndexError over dim 0 and a RuntimeError
over dim 1). Our kernels cannot raise, so a call into torch checks the positions first
(`checked`), and the kernels read them from what it returns: the same tensor. Where one
is out of range, the check runs torch's own op on zeros, which raises eager's error.
Inductor checks inside its kernels instead (a device assert on the GPU); on the GPU
ours asserts on the device as well (`torch._assert_async`), so that no call waits for it.
"""

import torch
import torch.nn.functional as F

from ..ir import BufferView, ExternKernel, Index, Layout, Pointwise, contiguous_strides, ops
from ..lowering import Fallback, broadcast_shapes, is_tensor, loader_for, register

INDEX_DTYPES = (torch.int64, torch.int32)


class IndexCheck:
    """Returns positions in `[-size, size)` (`[0, size)` if negative ones are errors too);
    for any other, runs eager's `op` (a name of `EAGER_OPS`, and its dim) on zeros like the
    input and the positions: torch raises its error. The check holds plain data only, so
    that a wrapper that calls it can be kept on disk (performance/graph_text.py)."""

    def __init__(self, size: int, negative_ok: bool, op: tuple[str, int], data):
        self.size, self.negative_ok, self.op = size, negative_ok, op
        layout = data.layout if isinstance(data, BufferView) else None
        self.data = (
            tuple(data.ranges),
            layout.stride if layout else contiguous_strides(data.ranges),
            data.dtype,
        )
        self.__name__ = "check_indices"

    def __call__(self, positions: torch.Tensor) -> torch.Tensor:
        low = -self.size if self.negative_ok else 0
        in_range = ((positions >= low) & (positions < self.size)).all()
        if positions.device.type != "cpu":
            # Eager's GPU kernels check on the device (a device-side assert), and so does this:
            # reading the answer here would make the CPU wait for the GPU on every call.
            torch._assert_async(in_range, "a position is out of range: index out of bounds")
            return positions
        if not bool(in_range):
            size, stride, dtype = self.data
            zeros = torch.zeros(size, dtype=dtype, device=positions.device)
            name, dim = self.op
            EAGER_OPS[name](
                torch.empty_strided(size, stride, dtype=dtype).copy_(zeros), dim, positions
            )
            raise IndexError(f"a position is out of range for a size of {self.size}")
        return positions


# The ops whose errors a check raises: (zeros like the input, the dim, the positions).
EAGER_OPS = {
    "embedding": lambda t, dim, p: F.embedding(p, t),
    "index_select": lambda t, dim, p: t.index_select(dim, p),
    "gather": lambda t, dim, p: t.gather(dim, p),
    "indexing": lambda t, dim, p: t[(slice(None),) * dim + (p,)],
}


def checked(graph, positions, check: IndexCheck) -> BufferView:
    """`positions`, as returned by a call of `check` that runs before any kernel reads them."""
    if positions.dtype not in INDEX_DTYPES:
        raise Fallback(f"positions of dtype {positions.dtype}: torch")
    positions = graph.realize(positions)
    layout = Layout(positions.layout.size, positions.layout.stride, positions.dtype)
    call = ExternKernel(graph.new_name(), layout, check, (positions,), may_alias=True)
    graph.buffers.append(call)
    return BufferView(call, layout)


def _read(x, ranges, source_fn, cost):
    """`out[idx] = x[source_fn(idx)]`, where `source_fn` may call `ops.indirect_indexing`."""
    load = x.loader()
    return Pointwise(x.dtype, tuple(ranges), lambda idx: load(source_fn(idx)), cost)


def _position(positions, ranges, size):
    """A function: index -> the index variable of `positions` (broadcast to `ranges`) there."""
    load = loader_for(positions, ranges, positions.dtype)
    return lambda idx: Index.var(ops.indirect_indexing(load(idx), size))


@register(F.embedding, same_dtype=1)
def embedding(graph, out, ids, weight, padding_idx=None, max_norm=None, *args, **kwargs):
    if max_norm is not None or len(weight.ranges) != 2:
        raise Fallback("embedding with max_norm (it rescales the weight in place), or not 2-D")
    rows = weight.ranges[0]
    ids = checked(graph, ids, IndexCheck(rows, False, ("embedding", 0), weight))
    row = _position(ids, ids.ranges, rows)
    ranges = (*ids.ranges, weight.ranges[1])
    return _read(weight, ranges, lambda idx: [row(idx[:-1]), idx[-1]], 1 + ids.cost)


@register("index_select", same_dtype=True)
def index_select(graph, out, x, dim, index):
    if len(index.ranges) != 1 or not x.ranges:
        raise Fallback("index_select with an index that is not 1-D, or of a 0-d tensor")
    d = dim % len(x.ranges)
    check = IndexCheck(x.ranges[d], False, ("index_select", d), x)
    index = checked(graph, index, check)
    at = _position(index, index.ranges, x.ranges[d])
    ranges = (*x.ranges[:d], index.ranges[0], *x.ranges[d + 1 :])
    return _read(x, ranges, lambda idx: [*idx[:d], at([idx[d]]), *idx[d + 1 :]], 1)


@register("gather", same_dtype=True)
def gather(graph, out, x, dim, index, *, sparse_grad=False):
    if len(index.ranges) != len(x.ranges) or not x.ranges:
        raise Fallback("gather of a 0-d tensor, or with an index of another rank: torch")
    d = dim % len(x.ranges)
    index = checked(graph, index, IndexCheck(x.ranges[d], False, ("gather", d), x))
    at = _position(index, index.ranges, x.ranges[d])
    return _read(x, index.ranges, lambda idx: [*idx[:d], at(idx), *idx[d + 1 :]], 1)


def index_with_tensors(graph, x, index: tuple, basic_getitem):
    """`x[..., idx, ...]` with integer tensors among the indices, as torch does it: the ints,
    slices and Nones first (a view, `basic_getitem`), then the tensors, whose broadcast
    shape replaces their dims where they are (if next to each other) or goes first."""
    tensors = [i for i in index if is_tensor(i)]
    if any(t.dtype not in INDEX_DTYPES for t in tensors):
        raise Fallback("a boolean (or byte) mask: the result's size depends on its values")
    if Ellipsis in index:
        at = index.index(Ellipsis)
        fill = len(x.ranges) - sum(1 for i in index if i is not None and i is not Ellipsis)
        index = index[:at] + (slice(None),) * fill + index[at + 1 :]
    viewed = basic_getitem(tuple(slice(None) if is_tensor(i) else i for i in index))
    dims, position = [], 0  # where each tensor's dim is in `viewed`
    for item in index:
        if is_tensor(item):
            dims.append(position)
        if not isinstance(item, int):
            position += 1
    shape = broadcast_shapes(*[t.ranges for t in tensors])
    sizes = [viewed.ranges[d] for d in dims]
    tensors = [
        checked(graph, t, IndexCheck(n, True, ("indexing", d), viewed))
        for t, n, d in zip(tensors, sizes, dims, strict=True)
    ]
    positions = [_position(t, shape, n) for t, n in zip(tensors, sizes, strict=True)]
    together = dims == list(range(dims[0], dims[0] + len(dims)))
    first = dims[0] if together else 0
    rest = [d for d in range(len(viewed.ranges)) if d not in dims]
    ranges = [viewed.ranges[d] for d in rest]
    ranges[first:first] = shape

    def source(idx):
        broadcast, others = idx[first : first + len(shape)], idx[:first] + idx[first + len(shape) :]
        picked = dict(zip(rest, others, strict=True))
        picked.update({d: at(broadcast) for d, at in zip(dims, positions, strict=True)})
        return [picked[d] for d in range(len(viewed.ranges))]

    meta = torch.empty(x.ranges, device="meta")[_meta_index(index)]
    if tuple(meta.shape) != tuple(ranges):
        raise Fallback(f"indexing gives {list(meta.shape)} in torch, {ranges} here")
    return _read(viewed, ranges, source, 1 + sum(t.cost for t in tensors))


def _meta_index(index):
    return tuple(
        torch.zeros(i.ranges, dtype=i.dtype, device="meta") if is_tensor(i) else i for i in index
    )
