"""Lowering: one function per FX op, each building IR (torch/_inductor/lowering.py).

`LOWERINGS` maps a target — a torch function, an `operator` function, or the
name of a Tensor method — to a function `(graph, out, *args, **kwargs) -> value`,
where `out` is the op's result on one-element stand-ins (its dtype is the one
torch's type promotion picks) and args are IR values (`Pointwise`, `BufferView`) or plain
Python values. A lowering that meets a case it does not handle raises `Fallback`,
and the node becomes an `ExternKernel` that calls torch: every graph still runs.

Pointwise values are not materialised: a consumer's `inner_fn` calls its
producer's `inner_fn`, so a chain of pointwise ops is one expression, later one
kernel (inductor inlines the same way). Reductions always write a buffer.

This file is the core table: the elementwise ops of `UNARY` and `BINARY`, and the
reductions, with the building blocks every lowering uses (`make_pointwise`,
`make_reduction`, `reindex`). The breadth of ops (views, casts and copies, composite ops,
pooling, gathers, factories) is registered into the same table by lowerings/.
"""

import operator

import torch

from .ir import BufferView, Index, Layout, Pointwise, Reduction, ops
from .performance.split_reductions import split_reduction
from .symbolic.sizes import is_symbolic


class Fallback(Exception):
    """This lowering does not handle these arguments: call torch instead (the reason says why)."""


class EagerOnly(Exception):
    """Run the graph in torch: eager rejects it (and must raise its own error, in order),
    torch has no meta function for one of its ops, or the kernels cannot run it."""


LOWERINGS: dict = {}
# Lowerings whose result has an input's dtype (views, layer_norm, gather): the position of
# that input among the tensor arguments. Their dtype is not asked of stand-ins, which
# cannot answer ops that depend on sizes or values (a pooling window, an index).
SAME_DTYPE: dict = {}

SUPPORTED_DTYPES = (
    torch.float32, torch.float64, torch.float16, torch.bfloat16,
    torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool,
)  # fmt: skip


def upcast(dtype: torch.dtype) -> torch.dtype:
    """The dtype a value is computed in: float16 and bfloat16 values are loaded into float32,
    computed there, and rounded when stored, as torch's CPU kernels and inductor do."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def register(*targets, same_dtype: bool | int = False):
    """Register a lowering for torch functions, operator functions, and Tensor method names.

    A string registers the method name plus `torch.<name>` and `torch.nn.functional.<name>`
    when they exist, so `x.sin()`, `torch.sin(x)` and `F.relu(x)` all find it.
    `same_dtype=True` (or the position of the tensor argument, `1` for `F.embedding`'s
    weight) says that the result has that argument's dtype.
    """

    def decorate(fn):
        if same_dtype is not False:
            SAME_DTYPE[fn] = 0 if same_dtype is True else same_dtype
        for target in targets:
            LOWERINGS[target] = fn
            if isinstance(target, str):
                for module in (torch, torch.nn.functional, torch.special):
                    if hasattr(module, target):
                        LOWERINGS[getattr(module, target)] = fn
        return fn

    return decorate


def is_tensor(value) -> bool:
    return isinstance(value, (Pointwise, BufferView))


# ----------------------------------------------------------------------------- building blocks


def broadcast_shapes(*shapes) -> tuple[int, ...]:
    """torch.broadcast_shapes without its sympy import (slow, once per process)."""
    rank = max((len(s) for s in shapes), default=0)
    result = [1] * rank
    for shape in shapes:
        for d, size in enumerate(shape, start=rank - len(shape)):
            if size != 1 and result[d] not in (1, size):
                raise RuntimeError(
                    f"The size of tensor a ({result[d]}) must match the size of tensor b ({size}) "
                    f"at non-singleton dimension {d}"
                )
            result[d] = size if size != 1 else result[d]
    return tuple(result)


def loader_for(value, ranges, dtype):
    """A function `index -> value` for `value` broadcast to `ranges` and cast to `dtype`."""
    if not is_tensor(value):
        if is_symbolic(value):  # a size that is a symbol (sizes.py): the kernel's argument
            return lambda idx: ops.index_expr(Index.const(value), dtype)
        value = number_as(value, dtype)
        return lambda idx: ops.constant(value, dtype)
    load, source_ranges = value.loader(), value.ranges
    skip = len(ranges) - len(source_ranges)

    def broadcast(idx):
        return [
            Index() if size == 1 and ranges[skip + d] != 1 else idx[skip + d]
            for d, size in enumerate(source_ranges)
        ]

    if value.dtype == dtype:
        return lambda idx: load(broadcast(idx))
    return lambda idx: ops.to_dtype(load(broadcast(idx)), dtype)


def number_as(value, dtype):
    """A Python number as torch casts it to an op's dtype: `uint8_tensor < 300` compares with
    44, as 300 wraps around to it."""
    if dtype.is_floating_point or dtype == torch.bool or isinstance(value, bool):
        return value
    return torch.tensor(value).to(dtype).item()


def make_pointwise(fn, *args, dtype, compute=None):
    """`fn` applied elementwise to broadcast `args`, computed in `compute` (upcast), stored
    as `dtype`."""
    compute = upcast(compute or dtype)
    ranges = broadcast_shapes(*[a.ranges for a in args if is_tensor(a)])
    loaders = [loader_for(a, ranges, compute) for a in args]

    def inner_fn(idx):
        result = fn(*[load(idx) for load in loaders])
        return result if compute == dtype else ops.to_dtype(result, dtype)

    cost = 1 + sum(a.cost for a in args if is_tensor(a))
    return Pointwise(dtype, ranges, inner_fn, cost)


def as_pointwise(value) -> Pointwise:
    """A tensor value as a computation that loads it (a buffer) or computes it (a Pointwise)."""
    if isinstance(value, Pointwise):
        return value
    return Pointwise(value.dtype, tuple(value.ranges), value.loader(), value.cost)


def reindex(value, ranges, reindex_fn):
    """A view: `out[idx] = value[reindex_fn(idx)]`; buffers keep a (new) layout, no copy."""
    if isinstance(value, BufferView):
        probe = [Index.var(f"v{i}") for i in range(len(ranges))]
        flat = value.layout.index(reindex_fn(probe))
        stride = tuple(flat.coefficient(f"v{i}") for i in range(len(ranges)))
        layout = Layout(tuple(ranges), stride, value.dtype, flat.offset)
        return BufferView(value.buffer, layout)
    load = value.loader()
    return Pointwise(value.dtype, tuple(ranges), lambda idx: load(reindex_fn(idx)), value.cost)


def make_reduction(graph, x, dims, keepdim, reduction_type, dtype, compute=None):
    """Reduce `x` over `dims` into a new buffer (a keepdim result is a view of it)."""
    reduction = reduction_of(x, dims, reduction_type, dtype, compute)
    result = graph.add_buffer(split_reduction(graph, reduction))
    if not keepdim:
        return result
    dims, rank = reduced_dims(x, dims), len(x.ranges)
    out_ranges = tuple(1 if d in dims else x.ranges[d] for d in range(rank))
    return reindex(result, out_ranges, lambda idx: [idx[d] for d in range(rank) if d not in dims])


def reduction_of(x, dims, reduction_type, dtype, compute=None) -> Reduction:
    """The reduction of `x` over `dims`, before it is a buffer (or two: split_reductions.py)."""
    rank, dims = len(x.ranges), reduced_dims(x, dims)
    kept = [d for d in range(rank) if d not in dims]
    compute = upcast(compute or x.dtype)
    load = loader_for(x, x.ranges, compute)

    def inner_fn(idx, ridx):  # the kept dims' indices and the reduced ones', in place
        at = dict(zip(kept, idx, strict=True)) | dict(zip(dims, ridx, strict=True))
        return load([at[d] for d in range(rank)])

    ranges, reduced = tuple(x.ranges[d] for d in kept), tuple(x.ranges[d] for d in dims)
    return Reduction(dtype, ranges, reduced, reduction_type, inner_fn, compute)


def reduced_dims(x, dims) -> list[int]:
    """`dims` made non-negative and sorted; none means all (a 0-d tensor has none to reduce)."""
    rank = len(x.ranges)
    if not dims:
        return list(range(rank))
    return sorted({_dim(d, rank) for d in dims} - {rank})


def _dim(dim, rank):
    if not -max(rank, 1) <= dim < max(rank, 1):
        raise IndexError(
            f"Dimension out of range (expected to be in range of "
            f"[{-max(rank, 1)}, {max(rank, 1) - 1}], but got {dim})"
        )
    return dim % max(rank, 1)


# ----------------------------------------------------------------------------- pointwise ops

# name -> ops name; unary ops compute in the output dtype (int inputs of sin become float).
UNARY = {
    "abs": "abs", "neg": "neg", "sin": "sin", "cos": "cos", "tan": "tan", "exp": "exp",
    "log": "log", "log2": "log2", "log1p": "log1p", "expm1": "expm1", "sqrt": "sqrt",
    "rsqrt": "rsqrt", "tanh": "tanh", "erf": "erf", "atan": "atan", "relu": "relu",
    "reciprocal": "reciprocal", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
    "round": "round", "isnan": "isnan", "logical_not": "logical_not",
}  # fmt: skip
ROUNDING = {"floor", "ceil", "trunc", "round"}  # identity on integers, as in torch

# name -> (ops name, compute in the inputs' promoted type (True) or in the output type)
BINARY = {
    "add": ("add", False), "sub": ("sub", False), "mul": ("mul", False),
    "div": ("truediv", False), "true_divide": ("truediv", False),
    "maximum": ("maximum", False), "minimum": ("minimum", False),
    "atan2": ("atan2", False), "remainder": ("remainder", False),
    "eq": ("eq", True), "ne": ("ne", True), "lt": ("lt", True), "le": ("le", True),
    "gt": ("gt", True), "ge": ("ge", True), "logical_and": ("logical_and", None),
    "logical_or": ("logical_or", None), "logical_xor": ("logical_xor", None),
}  # fmt: skip
# What arithmetic means on bools in torch: add is "or", mul and minimum are "and".
BOOLEAN = {
    "add": "logical_or",
    "mul": "logical_and",
    "maximum": "logical_or",
    "minimum": "logical_and",
}
OPERATORS = {
    operator.add: "add", operator.sub: "sub", operator.mul: "mul", operator.truediv: "div",
    operator.eq: "eq", operator.ne: "ne", operator.lt: "lt", operator.le: "le",
    operator.gt: "gt", operator.ge: "ge", operator.neg: "neg", operator.abs: "abs",
    operator.mod: "remainder", operator.pow: "pow",
}  # fmt: skip


def _unary(name, op):
    def lower(graph, out, x):
        if name in ROUNDING and not out.dtype.is_floating_point:
            return x
        compute = x.dtype if op == "isnan" else out.dtype
        return make_pointwise(getattr(ops, op), x, dtype=out.dtype, compute=compute)

    return lower


def _binary(name, op, promoted):
    def lower(graph, out, a, b, *, alpha=None, rounding_mode=None):
        if rounding_mode is not None:
            raise Fallback(f"{name} with rounding_mode={rounding_mode!r}")
        if promoted is None:
            compute = torch.bool
        elif promoted:
            compute = torch.result_type(meta_of(a), meta_of(b))
        else:
            compute = out.dtype
        if alpha is not None and compute.is_floating_point:
            return _add_scaled(a, b, alpha if op == "add" else -alpha, out.dtype)
        if alpha is not None:
            b = make_pointwise(ops.mul, b, alpha, dtype=out.dtype)
        if op == "remainder" and not compute.is_floating_point:
            raise Fallback("integer remainder: C++ '%' differs from torch and traps on 0")
        # True + True is True in torch; a 1-bit add (Triton's) wraps to False
        kind = BOOLEAN.get(op, op) if compute == torch.bool else op
        return make_pointwise(getattr(ops, kind), a, b, dtype=out.dtype, compute=compute)

    return lower


def _add_scaled(a, b, alpha, dtype):
    """`a + alpha * b` rounded once, as torch computes it (`vec::fmadd` in
    aten/src/ATen/native/ufunc/add.h): `3e38 + 2 * -3e38` is -3e38 there, not -inf."""
    return make_pointwise(lambda x, y: ops.fma(y, ops.constant(alpha, dtype), x), a, b, dtype=dtype)


def meta_of(value):
    """What `torch.result_type` needs: a meta tensor of the right rank and dtype, or the scalar."""
    if is_tensor(value):
        return torch.empty((0,) * min(len(value.ranges), 1), dtype=value.dtype, device="meta")
    return value


for _name, _op in UNARY.items():
    register(_name)(_unary(_name, _op))
for _name, (_op, _promoted) in BINARY.items():
    register(_name)(_binary(_name, _op, _promoted))
for _target, _name in OPERATORS.items():
    if _name in LOWERINGS:
        LOWERINGS[_target] = LOWERINGS[_name]


# ----------------------------------------------------------------------------- reductions


def _dims(dim):
    if dim is None:
        return []
    return list(dim) if isinstance(dim, (list, tuple)) else [dim]


def _check_not_empty(x, dims, kind):
    """max/min/argmax of nothing is an error in torch, which its meta functions do not all
    see: torch (the extern) raises it, with its own message."""
    if 0 in [x.ranges[d] for d in reduced_dims(x, dims)]:
        raise Fallback(f"{kind}() of nothing: torch raises")


def _reduction(reduction_type):
    def lower(graph, out, x, dim=None, keepdim=False, *, dtype=None):
        if reduction_type in ("max", "min"):
            _check_not_empty(x, _dims(dim), reduction_type)
        compute = out.dtype if reduction_type in ("sum", "prod") else x.dtype
        return make_reduction(graph, x, _dims(dim), keepdim, reduction_type, out.dtype, compute)

    return lower


register("sum")(_reduction("sum"))
register("prod")(_reduction("prod"))
register("amax")(_reduction("max"))
register("amin")(_reduction("min"))
register("any")(_reduction("any"))
register("all")(_reduction("all"))
