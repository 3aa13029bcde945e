"""The loop-level IR: *what* is computed, separate from *where it lands* and *how it is emitted*.

A computation is a function of an index: `Pointwise.inner_fn(index)` returns the
value of one output element, `Reduction.inner_fn(index, rindex)` the value that is
folded over the reduction index. The functions do not compute anything themselves:
they call `ops.<name>(...)` and the current *handler* decides what that means —
the C++ codegen writes a line of C++, `OpsRecorder` records which buffers are
loaded. This is inductor's `V.ops` (torch/_inductor/virtualized.py) in a few lines.

Index expressions are affine (`4096*x0 + r0 + 3`): every view we lower (permute,
expand, slicing, size-1 reshapes) is affine, and a reshape that is not becomes a
reinterpretation of a contiguous buffer instead (inductor uses sympy for the
general case; affine keeps the IR printable and the codegen simple).

Two ops take more than values (inductor has both, under the same names):
`ops.indirect_indexing(value, size)` turns a loaded value into an index variable,
which an `Index` can then hold like `x0` (`weight[64*indirect(ids[x0]) + x1]`:
`embedding`, `gather`); `ops.masked(mask, body, other)` is `body()` where `mask`
holds and `other` elsewhere, without running `body`'s loads elsewhere (they may
point outside their tensor: `cat`, a pooling window over the padding). C++ writes
an `if`, Triton masks the loads.
"""

import contextlib
import dataclasses
import threading
from collections.abc import Callable

import torch
import torch.utils._pytree as pytree

from .symbolic.sizes import as_sizes, free_symbols, is_symbolic, operand, text

# ----------------------------------------------------------------------------- index math


@dataclasses.dataclass(frozen=True)
class Index:
    """`sum(coef * var) + offset`, with `terms` sorted by variable name.

    Coefficients and offset are ints, or sympy expressions of symbolic sizes (sizes.py)."""

    terms: tuple[tuple[str, int], ...] = ()
    offset: int = 0

    @staticmethod
    def var(name: str) -> "Index":
        return Index(((name, 1),))

    @staticmethod
    def const(value: int) -> "Index":
        return Index((), value if is_symbolic(value) else int(value))

    def __add__(self, other: "Index | int") -> "Index":
        if not isinstance(other, Index):
            return Index(self.terms, self.offset + other)
        coefs = dict(self.terms)
        for name, coef in other.terms:
            coefs[name] = coefs.get(name, 0) + coef
        terms = tuple(sorted((n, c) for n, c in coefs.items() if c != 0))
        return Index(terms, self.offset + other.offset)

    def __mul__(self, factor: int) -> "Index":
        if factor == 0:
            return Index()
        return Index(tuple((n, c * factor) for n, c in self.terms), self.offset * factor)

    def coefficient(self, name: str) -> int:
        return dict(self.terms).get(name, 0)

    def variables(self) -> set[str]:
        return {name for name, _ in self.terms}

    def symbols(self) -> set[str]:
        """The size symbols in the coefficients and offset (sizes.py)."""
        return free_symbols(self.offset, *[coef for _, coef in self.terms])

    def __str__(self) -> str:
        # outer variables (x) first, then inner ones (r): `4096*x0 + r0`
        terms = sorted(self.terms, key=lambda t: (not t[0].startswith("x"), t[0]))
        parts = [name if coef == 1 else f"{operand(coef)}*{name}" for name, coef in terms]
        if self.offset != 0 or not parts:
            parts.append(text(self.offset))
        return " + ".join(parts).replace("+ -", "- ")


def contiguous_strides(size) -> tuple[int, ...]:
    strides, running = [], 1
    for s in reversed(tuple(size)):
        strides.append(running)
        running *= s if is_symbolic(s) else max(s, 1)  # a symbol is never 0 (torch's rule)
    return tuple(reversed(strides))


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where a tensor's elements live in a buffer: sizes, strides (in elements), offset."""

    size: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: torch.dtype
    offset: int = 0

    @staticmethod
    def of(tensor: torch.Tensor, offset=0) -> "Layout":
        """A tensor's layout (a FakeTensor's sizes may be symbols: sizes.py)."""
        return Layout(as_sizes(tensor.shape), as_sizes(tensor.stride()), tensor.dtype, offset)

    def index(self, idx) -> Index:
        total = Index.const(self.offset)
        for i, stride in zip(idx, self.stride, strict=True):
            total = total + i * stride
        return total

    def is_contiguous(self) -> bool:
        pairs = [(sz, st) for sz, st in zip(self.size, self.stride, strict=True) if sz != 1]
        return all(
            st == want
            for (_, st), want in zip(pairs, contiguous_strides([s for s, _ in pairs]), strict=True)
        )

    @property
    def short(self) -> str:
        """`float32[64, 128]`: the dtype and the size."""
        return str(self.dtype).removeprefix("torch.") + str(list(self.size))

    def __str__(self) -> str:
        offset = f", offset={self.offset}" if self.offset else ""
        return f"{self.short} stride={list(self.stride)}{offset}"


# ----------------------------------------------------------------------------- the ops handler


class _OpsProxy(threading.local):
    """`ops.sin(x)` forwards to whichever handler is installed (inductor's `V.ops`).

    The handler is per thread: two threads compiling at once each write their own kernel
    (inductor's `V` is thread-local for the same reason)."""

    handler = None

    def __getattr__(self, name):
        # Resolved at call time, so `ops.sin` can be stored in a lowering before any handler.
        if name == "constant":
            return _constant
        return lambda *args: getattr(ops.handler, name)(*args)


def _constant(value, dtype):
    """`ops.constant`: a size that is a symbol (sizes.py) is no literal; the kernel computes
    it from its argument, as an index (`cat` compares positions with `s77`)."""
    if is_symbolic(value):
        return ops.handler.index_expr(Index.const(value), dtype)
    return ops.handler.constant(value, dtype)


ops = _OpsProxy()


@contextlib.contextmanager
def set_handler(handler):
    previous, ops.handler = ops.handler, handler
    try:
        yield handler
    finally:
        ops.handler = previous


class OpsRecorder:
    """A handler that records what a function does instead of computing it: every
    `load(name, index)` (`loads`: fusion compares them), and the names of the ops it calls,
    in order (`names`: kernel names come from them)."""

    UNNAMED = ("constant", "to_dtype", "index_expr", "indirect_indexing")  # not in a name

    def __init__(self):
        self.loads: list[tuple[str, Index]] = []
        self.names: list[str] = []

    def load(self, name, index):
        self.loads.append((name, index))
        return name

    def masked(self, mask, body, other):
        return body()

    def __getattr__(self, name):
        def record(*args, **kwargs):
            if name not in self.UNNAMED:
                self.names.append(name)
            return name

        return record


def loads_of(data: "Pointwise") -> list[tuple[str, Index]]:
    """What computing `data` loads: (buffer, index) over the variables x0, x1, ..."""
    recorder = OpsRecorder()
    with set_handler(recorder):
        data.inner_fn(index_vars("x", len(data.ranges)))
    return recorder.loads


# ----------------------------------------------------------------------------- what is computed


@dataclasses.dataclass(frozen=True)
class Pointwise:
    """`out[index] = inner_fn(index)` for every index in `ranges`."""

    dtype: torch.dtype
    ranges: tuple[int, ...]
    inner_fn: Callable
    cost: int = 1  # ops inlined so far; decides when a reused value is worth a buffer
    view: tuple | None = None  # a view of a value: (value, reindex_fn) (views.py's viewed)

    def loader(self):
        return self.inner_fn

    def __str__(self) -> str:
        return f"Pointwise({describe(self.inner_fn, len(self.ranges))}, ranges={list(self.ranges)})"


@dataclasses.dataclass(frozen=True)
class Reduction:
    """`out[index] = reduce(inner_fn(index, rindex) for rindex in reduction_ranges)`."""

    dtype: torch.dtype
    ranges: tuple[int, ...]
    reduction_ranges: tuple[int, ...]
    reduction_type: str  # sum, prod, max, min, any, all, argmax, argmin
    inner_fn: Callable
    src_dtype: torch.dtype

    def __str__(self) -> str:
        body = describe(self.inner_fn, len(self.ranges), len(self.reduction_ranges))
        return (
            f"Reduction({self.reduction_type}: {body}, ranges={list(self.ranges)}, "
            f"reduction_ranges={list(self.reduction_ranges)})"
        )


def index_vars(prefix: str, n: int) -> list[Index]:
    return [Index.var(f"{prefix}{i}") for i in range(n)]


class Printer:
    """A handler that rebuilds an expression as text, for `__str__` and the logs.

    The text names every load and op, so two values with the same text are the same
    value: the scheduler and the C++ codegen use it as a key to find a recomputation.
    """

    def load(self, name, index):
        return f"{name}[{index}]"

    def constant(self, value, dtype):
        return repr(value)

    def to_dtype(self, x, dtype):
        return f"{x}.to({str(dtype).removeprefix('torch.')})"

    def masked(self, mask, body, other):
        return f"masked({mask}, {body()}, {other!r})"

    def indirect_indexing(self, value, size):
        return f"indirect({value})"

    def __getattr__(self, name):
        return lambda *args: f"{name}({', '.join(str(a) for a in args)})"


def describe(fn, n_index: int, n_rindex: int | None = None) -> str:
    with set_handler(Printer()):
        if n_rindex is None:
            return str(fn(index_vars("x", n_index)))
        return str(fn(index_vars("x", n_index), index_vars("r", n_rindex)))


# ----------------------------------------------------------------------------- where it lands


@dataclasses.dataclass(frozen=True, eq=False)
class Buffer:
    """A named allocation; `layout` says how the tensor that owns it is laid out."""

    name: str
    layout: Layout


@dataclasses.dataclass(frozen=True, eq=False)
class InputBuffer(Buffer):
    """A graph input (or a constant tensor of the module): the wrapper receives it."""

    def __str__(self) -> str:
        return f"{self.name} = input {self.layout}"


@dataclasses.dataclass(frozen=True, eq=False)
class ComputedBuffer(Buffer):
    """A buffer filled by a kernel from a `Pointwise` or a `Reduction`."""

    data: Pointwise | Reduction = None

    def __str__(self) -> str:
        return f"{self.name}: {self.layout} = {self.data}"


@dataclasses.dataclass(frozen=True, eq=False)
class ExternKernel(Buffer):
    """A call into torch for what the IR does not cover (matmul, conv, unknown ops).

    `args`/`kwargs` hold `BufferView`s and plain Python values; the result may be any
    Python object (a tensor, or a tuple that `operator.getitem` externs pick apart).
    """

    target: Callable = None
    args: tuple = ()
    kwargs: dict = dataclasses.field(default_factory=dict)
    is_tensor: bool = True
    may_alias: bool = True  # may return a view of an argument (then its buffers stay alive)
    out: bool = False  # writes into memory the wrapper plans (`out=`), as kernels do

    def inputs(self) -> list["BufferView"]:
        """The tensors it reads, wherever they sit in its arguments (`torch.cat([a, b])`)."""
        leaves = pytree.tree_leaves((self.args, self.kwargs))
        return [leaf for leaf in leaves if isinstance(leaf, BufferView)]

    @property
    def op_name(self) -> str:
        """What the call is named after in printouts: `matmul`, `addmm`, `Conv2d`."""
        return getattr(self.target, "__name__", type(self.target).__name__)

    def __str__(self) -> str:
        return f"{self.name}: {self.layout if self.is_tensor else 'object'} = extern {self.op_name}"


@dataclasses.dataclass(frozen=True)
class BufferView:
    """A realized tensor: a buffer seen through a layout (views change only the layout)."""

    buffer: Buffer
    layout: Layout

    @property
    def dtype(self):
        return self.layout.dtype

    @property
    def ranges(self):
        return self.layout.size

    cost = 1

    def loader(self):
        name, layout = self.buffer.name, self.layout
        return lambda idx: ops.load(name, layout.index(idx))

    def is_whole_buffer(self) -> bool:
        return self.layout == self.buffer.layout

    def __str__(self) -> str:
        return self.buffer.name if self.is_whole_buffer() else f"{self.buffer.name}<{self.layout}>"


# Ops whose result is bool whatever their inputs; every other op keeps its first
# tensor argument's dtype (lowering casts operands to one dtype first). Codegens
# use this to declare each temporary with its type.
BOOL_OPS = frozenset(
    {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
     "logical_not", "isnan"}
)  # fmt: skip


def result_dtype(op: str, args) -> torch.dtype:
    if op in BOOL_OPS:
        return torch.bool
    if op == "where":
        return args[1].dtype
    return args[0].dtype
