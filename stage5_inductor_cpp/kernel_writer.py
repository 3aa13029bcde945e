"""The kernel writer both code generators share: the ops handler that turns IR into text.

While a kernel is written, the writer is the handler that the IR's `inner_fn`s call
(ir.py's `ops`): every `ops.sin(x)` becomes one named temporary (`tmp3`), and an
expression already written in a visible scope is reused, not written again (inductor's
`CSE`, torch/_inductor/codegen/common.py). What an op reads like comes from a table:
`OpOverrides.FORMATS` holds the entries every language writes alike, and each backend's
subclass the rest (`CppOverrides` in codegen_cpp.py, stage 6's `TritonOverrides`), as
inductor's `OpOverrides` and tinygrad's `code_for_op` do.

A backend's writer (`CppKernel`, stage 6's `TritonKernel`) adds the ops that read
differently in its language (a constant, a masked load), how it declares a temporary
and stores a value, and its loop structure: C++ `for` loops, Triton blocks.
"""

import contextlib
import functools
import math
import typing

import torch

from .ir import result_dtype
from .scheduler import FusedKernel, SchedulerNode
from .symbolic.sizes import SymbolsCollector, free_symbols


class OpOverrides:
    """How each op of the IR reads: one format string per op. These entries read the same
    in C++ and in Triton; a backend's subclass adds its own (`{**OpOverrides.FORMATS, ...}`)."""

    FORMATS: typing.ClassVar[dict[str, str]] = {
        "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "truediv": "{0} / {1}",
        "reciprocal": "1 / {0}",
        "eq": "{0} == {1}", "ne": "{0} != {1}", "lt": "{0} < {1}", "le": "{0} <= {1}",
        "gt": "{0} > {1}", "ge": "{0} >= {1}", "logical_xor": "{0} != {1}",
    }  # fmt: skip

    @classmethod
    def format(cls, op: str, *args) -> str:
        return cls.FORMATS[op].format(*args)

    @classmethod
    def to_dtype(cls, x, dtype: torch.dtype) -> str:
        """`x` converted to `dtype`, as torch converts it."""
        raise NotImplementedError

    @classmethod
    def constant(cls, value, dtype: torch.dtype, shape: str = "[]") -> str:
        """`value` as a literal of `dtype`: the ladder every language climbs, each spelling
        its rungs (`boolean`, `integer`, `nan`, ...) in its subclass. `shape`: the block a
        Triton literal fills where a number alone would not do."""
        if dtype == torch.bool:
            return cls.boolean(bool(value))
        if dtype in (torch.float16, torch.bfloat16):  # as c10::Half(double): through float
            return cls.through_float32(cls.constant(value, torch.float32, shape), dtype, shape)
        if not dtype.is_floating_point:
            return cls.integer(value, dtype, shape)
        value = cls.rounded(float(value), dtype)
        if math.isnan(value):
            return cls.nan(dtype)
        if math.isinf(value):
            return cls.infinity(dtype, negative=value < 0)
        return cls.floating(value, dtype, shape)

    @staticmethod
    def rounded(value: float, dtype: torch.dtype) -> float:
        """The float a literal of `dtype` stands for (a backend may round it first)."""
        return value


# reduction type -> the value its accumulator starts from: "lowest" and "highest" are of
# the dtype it folds in (-inf and inf for floats), the first that any element beats.
REDUCTION_STARTS = {
    "sum": 0, "prod": 1, "max": "lowest", "min": "highest", "any": 0, "all": 1,
    "argmax": "lowest", "argmin": "highest",
}  # fmt: skip


def start_value(reduction_type: str, dtype: torch.dtype):
    """The number a reduction's accumulator of `dtype` starts from."""
    start = REDUCTION_STARTS[reduction_type]
    if start == "lowest":
        return -math.inf if dtype.is_floating_point else torch.iinfo(dtype).min
    if start == "highest":
        return math.inf if dtype.is_floating_point else torch.iinfo(dtype).max
    return start


class Value(str):
    """An expression of the kernel (usually a temporary's name) that knows its dtype.

    The rest is what one backend needs to know of a value. C++: `key`, the IR's text of
    what it computes (`exp(sub(arg0[4096*x0 + r0], buf0[x0]))`), by which a value stashed
    in a buffer is found again. Triton: `dims`, the block axes it varies along ({"x"} is
    `[XBLOCK, 1]`, {} a scalar), and `literal`, the Python number of a constant.
    """

    def __new__(cls, text, dtype, *, key=None, dims=frozenset(), literal=None):
        value = super().__new__(cls, text)
        value.dtype, value.key, value.dims, value.literal = dtype, key, frozenset(dims), literal
        return value


class KernelWriter:
    """Writes one `FusedKernel`; the ops handler while it runs. A backend subclasses it with
    its `overrides` table, `declare`, `store` and `facts`, and its loop structure."""

    overrides: typing.ClassVar[type[OpOverrides]] = OpOverrides
    language: typing.ClassVar[str] = ""  # "C++", "Triton": named when an op has no entry
    unsupported: typing.ClassVar[type[Exception]] = AttributeError  # raised then

    def __init__(self, kernel: FusedKernel, dtypes: dict[str, torch.dtype]):
        self.kernel = kernel
        self.n = len(kernel.outer)  # the outer loops' variables are x0 .. x{n-1}
        self.dtypes = dtypes  # buffer name -> dtype
        self.args: dict[str, str] = {}  # buffer name -> "in" | "out", in order of first use
        self.scopes: list[dict] = [{}]  # per block of code: expression or buffer -> Value
        self.lines: list[str] = []
        self.count = 0

    # ------------------------------------------------------------------ what a backend says

    def declare(self, name: Value, expr: str) -> str:
        """The line that defines temporary `name` as `expr`."""
        raise NotImplementedError

    def store(self, node: SchedulerNode, value: Value):
        """Write the lines that store `node`'s value into its buffer."""
        raise NotImplementedError

    def facts(self, op: str, *args) -> dict:
        """What a value that `op` makes of `args` carries besides its dtype (see `Value`)."""
        return {}

    # ------------------------------------------------------------------ the ops handler

    def temporary(self, dtype, **facts) -> Value:
        name = Value(f"tmp{self.count}", dtype, **facts)
        self.count += 1
        return name

    def emit(self, expr: str, dtype, **facts) -> Value:
        """`expr` as a temporary: a new one, or the one a visible scope already has."""
        for scope in reversed(self.scopes):
            if expr in scope:
                return scope[expr]
        name = self.temporary(dtype, **facts)
        self.lines.append(self.declare(name, expr))
        self.scopes[-1][expr] = name
        return name

    def load(self, name: str, index) -> Value:
        """A buffer's element: the value an earlier loop of the kernel left in a register,
        or `read` from memory."""
        for scope in reversed(self.scopes):
            if ("local", name) in scope:
                return scope[("local", name)]
        memory = self.kernel.in_place.get(name, name)  # an output written over an input
        self.args.setdefault(memory, "in")
        return self.read(memory, index)

    def read(self, name: str, index) -> Value:
        """`name[index]` read from memory."""
        raise NotImplementedError

    def to_dtype(self, x: Value, dtype) -> Value:
        if x.dtype == dtype:
            return x
        expr = self.overrides.to_dtype(x, dtype)
        return self.emit(expr, dtype, **self.facts("to_dtype", x, dtype))

    def indirect_indexing(self, value: Value, size: int) -> Value:
        """A loaded index as an index variable; a negative one counts from the end (`x[-1]`).
        The values are in range: the wrapper checked them before (`gather.checked`). Only
        addresses read it, as 64 bits: an int32 position times a stride may not fit 32 (C++
        would widen it where it declares it; Triton computes in the position's type)."""
        value = self.to_dtype(value, torch.int64)
        expr = self.overrides.format("indirect_indexing", value, size)
        return self.emit(expr, torch.int64, **self.facts("indirect_indexing", value, size))

    def __getattr__(self, op: str):
        if op.startswith("__"):  # copy, pickle and friends probe for these
            raise AttributeError(op)
        if op not in self.overrides.FORMATS:
            raise self.unsupported(f"no {self.language} translation of ops.{op}")
        return functools.partial(self.write, op)

    def write(self, op: str, *args) -> Value:
        """`ops.<op>(*args)` for an op of the table."""
        expr = self.overrides.format(op, *args)
        return self.emit(expr, result_dtype(op, args), **self.facts(op, *args))

    # ------------------------------------------------------------------ structure

    @contextlib.contextmanager
    def block(self):
        """A block of code (C++'s `{ ... }`, a Triton loop's body): its lines are collected
        apart, and the temporaries made inside are visible only inside."""
        outer_lines, self.lines = self.lines, []
        self.scopes.append({})
        try:
            yield self.lines
        finally:
            self.scopes.pop()
            self.lines = outer_lines

    @staticmethod
    def shares_loop(group: list[SchedulerNode], node: SchedulerNode) -> bool:
        """Whether reduction `node` can fold in the loop of the reductions `group`: the same
        reduction ranges, and none of them read by it. A batch norm's backward sums the
        gradient and the gradient times the centred input: one loop reads their common
        inputs once (inductor's looped reductions share their loop the same way)."""
        ranges = group[0].buffer.data.reduction_ranges
        reads = node.reads()
        return node.buffer.data.reduction_ranges == ranges and not any(
            g.name in reads for g in group
        )

    def size_args(self) -> list[str]:
        """The size symbols (sizes.py) the kernel's loops and indices use: its int arguments,
        after the buffers, so that one kernel serves every value of them."""
        names = free_symbols(self.kernel.outer)
        for node in self.kernel.nodes:
            collector = SymbolsCollector()
            node.call_inner_fn(collector, self.n)
            names |= collector.names | node.store_index(self.n).symbols()
            names |= free_symbols(node.ranges, node.inner_ranges(self.n))
        return sorted(names)

    def define(self, node: SchedulerNode, value: Value):
        """Make `node`'s value visible to later loads, and store it unless it stays local."""
        self.scopes[-1][("local", node.name)] = value
        if node.name not in self.kernel.local:
            self.args[self.kernel.in_place.get(node.name, node.name)] = "out"
            self.store(node, value)
