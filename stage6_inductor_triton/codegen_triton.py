"""Triton code generation: the same IR as stage 5, a different table and kernel template.

torch/_inductor/codegen/triton.py is the original. `TritonOverrides` is the op ->
Triton table and `TritonKernel` the kernel writer, both built on stage 5's
kernel_writer.py as `CppOverrides` and `CppKernel` are: every op becomes one named
temporary, identical expressions are emitted once. Here are only the `tl.*` entries of
the table, Triton's constants and casts, its masked loads, and its loop structure.

What changes is the loop structure. C++ writes `for` loops; a Triton kernel is one
*program* per block of the outer loop, and works on whole blocks of indices at once:

    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)     # XBLOCK outer elements
    xmask = xindex < 67108864                                      # the last block is partial

A kernel with a reduction works on a 2-D block, `XBLOCK` rows by `RBLOCK` reduction
elements. It is *persistent* when a whole row fits in one block (`RBLOCK >= rnumel`):
each row is loaded once and stays in registers for every loop of the kernel (softmax's
max, sum and division all reuse one load). Otherwise each loop of the kernel becomes a
`for roffset in range(0, rnumel, RBLOCK)` loop that accumulates a block-sized partial
result and reduces it once at the end; a row read again by a later loop is asked to
stay in the L2 cache (`eviction_policy`). When a row fits, both variants are written
and the autotuner picks (autotune.py): neither wins everywhere.

Views and broadcasting are only index math, as in C++: a load's address is the
affine index of stage 5's IR, written over `xindex` and `rindex` (indexing.py).
"""

import contextlib
import dataclasses
import math
import operator
import re
from typing import ClassVar

import torch

from stage5_inductor_cpp.ir import Index, result_dtype
from stage5_inductor_cpp.kernel_writer import KernelWriter, OpOverrides, Value, start_value
from stage5_inductor_cpp.lowering import EagerOnly
from stage5_inductor_cpp.scheduler import FusedKernel, SchedulerNode
from stage5_inductor_cpp.symbolic import sizes

from .indexing import index_text

# Rows up to LOOPED_ALSO_ABOVE elements get only a persistent kernel (inductor's default
# threshold); longer ones that still fit get a looped variant too, and the autotuner picks.
LOOPED_ALSO_ABOVE = 1024
# A row of up to this many elements can be kept in registers (a persistent reduction):
# 8192 floats over 256-1024 threads is 8-32 registers each.
PERSISTENT_RBLOCK_MAX = 8192


class TritonUnsupported(EagerOnly):
    """This kernel cannot be written in Triton (yet): the graph runs in torch instead."""


TL_DTYPES = {
    torch.float32: "tl.float32",
    torch.float64: "tl.float64",
    torch.float16: "tl.float16",
    torch.bfloat16: "tl.bfloat16",
    torch.int64: "tl.int64",
    torch.int32: "tl.int32",
    torch.int16: "tl.int16",
    torch.int8: "tl.int8",
    torch.uint8: "tl.uint8",
    torch.bool: "tl.int1",
}
# Integers narrower than Triton's literals (int32): arithmetic on them is cast back, so
# that it wraps around as torch's does (`uint8(250) + 10` is 4, and stays 4 when compared).
NARROW_INTS = (torch.int16, torch.int8, torch.uint8)
FLOAT32_NORMAL = (2.0**-126, float(torch.finfo(torch.float32).max))
NEGATIVE_ZERO_BITS = {torch.float32: (-(2**31), "tl.int32"), torch.float64: (-(2**63), "tl.int64")}


class TritonOverrides(OpOverrides):
    """How each op of the IR reads in Triton (inductor's `TritonOverrides`): the shared
    table's entries, these, and methods for the rest."""

    # `neg` multiplies by -1: Triton's `-x` is `0 - x`, which is 0.0 for 0.0 (torch: -0.0).
    FORMATS: ClassVar[dict[str, str]] = {
        **OpOverrides.FORMATS,
        "neg": "{0} * -1", "abs": "tl.abs({0})",
        "sin": "tl.sin({0})", "cos": "tl.cos({0})", "tan": "libdevice.tan({0})",
        "exp": "tl.exp({0})", "expm1": "libdevice.expm1({0})", "log": "tl.log({0})",
        "log2": "tl.log2({0})", "log1p": "libdevice.log1p({0})", "sqrt": "libdevice.sqrt({0})",
        "rsqrt": "libdevice.rsqrt({0})", "tanh": "libdevice.tanh({0})", "erf": "tl.erf({0})",
        "atan": "libdevice.atan({0})", "atan2": "libdevice.atan2({0}, {1})",
        "pow": "libdevice.pow({0}, {1})", "sigmoid": "1 / (1 + tl.exp(-{0}))",
        "relu": "tl.where({0} < 0, 0, {0})", "floor": "tl.floor({0})", "ceil": "tl.ceil({0})",
        "trunc": "libdevice.trunc({0})", "round": "libdevice.nearbyint({0})",
        "isnan": "{0} != {0}", "maximum": "elementwise_maximum({0}, {1})",
        "minimum": "elementwise_minimum({0}, {1})",
        "remainder": "remainder({0}, {1})", "truncdiv": "{0} // {1}",  # ints: C's division
        "logical_and": "{0} & {1}", "logical_or": "{0} | {1}", "logical_not": "{0} == 0",
        "where": "tl.where({0}, {1}, {2})", "fma": "libdevice.fma({0}, {1}, {2})",
        "indirect_indexing": "tl.where({0} < 0, {0} + {1}, {0})",
    }  # fmt: skip

    @staticmethod
    def tl_dtype(dtype: torch.dtype) -> str:
        if dtype not in TL_DTYPES:
            raise TritonUnsupported(f"no Triton type for {dtype}")
        return TL_DTYPES[dtype]

    # The rungs of the shared `constant` ladder, spelled in Triton: a literal that Triton
    # reads as this value of `dtype` beside a tensor operand (`TritonKernel.typed_operands`
    # says where else it may stand), `tl.full` where it would not.
    @staticmethod
    def boolean(value: bool) -> str:
        return "True" if value else "False"

    @classmethod
    def through_float32(cls, text: str, dtype, shape: str) -> str:
        if not text.startswith("tl.full("):
            text = f"tl.full({shape}, {text}, tl.float32)"
        return cls.to_dtype(text, dtype)

    @classmethod
    def integer(cls, value, dtype, shape: str) -> str:
        if dtype in NARROW_INTS:
            return f"tl.full({shape}, {value!r}, {cls.tl_dtype(dtype)})"  # a literal is wider
        return str(int(value)) if int(value) >= 0 else f"({int(value)})"

    @staticmethod
    def rounded(value: float, dtype) -> float:
        if dtype == torch.float32:
            return torch.tensor(value, dtype=torch.float32).item()  # what torch would use
        return value

    @staticmethod
    def nan(dtype) -> str:
        return 'float("nan")'

    @staticmethod
    def infinity(dtype, negative: bool) -> str:
        return '(-float("inf"))' if negative else 'float("inf")'

    @classmethod
    def floating(cls, value: float, dtype, shape: str) -> str:
        if value == 0 and math.copysign(1.0, value) < 0:
            # Triton makes every literal or `tl.full` equal to 0 a +0.0 (`scalar_constant`),
            # and `-x` is `0 - x`: only -0.0's bits give -0.0, whose 1 / x is -inf.
            bits, int_dtype = NEGATIVE_ZERO_BITS[dtype]
            return f"tl.full({shape}, {bits}, {int_dtype}).to({cls.tl_dtype(dtype)}, bitcast=True)"
        # Triton types a Python float as float32 when it is a normal float32 value: a
        # float64 constant that float32 cannot hold exactly must name its type.
        fits = torch.tensor(value, dtype=torch.float32).item() == value
        if not (fits and triton_types_as_float32(value)):
            return f"tl.full({shape}, {value!r}, {cls.tl_dtype(dtype)})"
        text = shortest_float32_text(value) if dtype == torch.float32 else repr(value)
        return f"({text})" if value < 0 else text

    @classmethod
    def to_dtype(cls, x, dtype: torch.dtype) -> str:
        """A cast. bfloat16 goes through float32 both ways, by the prelude's `to_bfloat16` and
        `from_bfloat16`: the interpreter's own casts truncate, lose denormals, and know no
        other float type."""
        text, source = str(x), getattr(x, "dtype", None)
        if source == torch.bfloat16:
            text, source = f"from_bfloat16({text})", torch.float32
            if dtype == torch.float32:
                return text
        if dtype == torch.bfloat16:
            return f"to_bfloat16({text if source == torch.float32 else text + '.to(tl.float32)'})"
        if dtype == torch.uint8 and source is not None and source.is_floating_point:
            return f"{text}.to(tl.int64).to(tl.uint8)"  # -1.0 is 255, as c10 converts it
        return f"{text}.to({cls.tl_dtype(dtype)})"

    # float32 division rounded correctly, as IEEE's and torch's CUDA `/` are: Triton's `/` is
    # the GPU's approximate one (`div.full.f32`, 2 ulp off). float64's `/` rounds correctly.
    FLOAT32_DIVISION: ClassVar[dict[str, str]] = {
        "truediv": "tl.div_rn(*tl.broadcast({0}, {1}))",
        "reciprocal": "tl.div_rn(tl.full({0}.shape, 1.0, tl.float32), {0})",
    }

    # The ops written as Python operators (and `tl.where`), where a number beside a tensor
    # takes the tensor's type (`TritonKernel.typed_operands`).
    OPERATORS = frozenset(
        {"add", "sub", "mul", "truediv", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
         "logical_or", "logical_xor", "where"}
    )  # fmt: skip

    @classmethod
    def is_operator(cls, op: str, args) -> bool:
        return op in cls.OPERATORS and not cls.divides_float32(op, args)

    @classmethod
    def divides_float32(cls, op: str, args) -> bool:
        return op in cls.FLOAT32_DIVISION and all(a.dtype == torch.float32 for a in args)

    @classmethod
    def format(cls, op: str, *args) -> str:
        if cls.divides_float32(op, args):
            expr = cls.FLOAT32_DIVISION[op].format(*args)
        elif op == "neg" and not args[0].dtype.is_floating_point:
            expr = f"-{args[0]}"  # `x * -1` is refused for unsigned x (no -0 in ints)
        else:
            expr = super().format(op, *args)
        dtype = result_dtype(op, args)
        if dtype in NARROW_INTS and op != "indirect_indexing":  # an index is not cast back
            return f"({expr}).to({cls.tl_dtype(dtype)})"
        return expr


def triton_types_as_float32(value: float) -> bool:
    """Whether Triton types the Python float `value` as float32 (`to_tensor` in
    triton/language/semantic.py): 0, inf, NaN and float32's normal range; any other float
    is a float64, which makes float64 whatever it meets without a tensor beside it."""
    return (
        value == 0
        or not math.isfinite(value)
        or FLOAT32_NORMAL[0] <= abs(value) <= FLOAT32_NORMAL[1]
    )


def shortest_float32_text(value: float) -> str:
    """`1e-05` rather than `9.999999747378752e-06`: the shortest text of the same float32
    that Triton still types as float32. float32's largest value is 3.4028234663852886e+38;
    its shortest text `3.4028235e+38` reads as a larger float, which Triton makes a float64."""
    for digits in range(1, 10):
        text = repr(float(f"{value:.{digits}g}"))
        same = torch.tensor(float(text), dtype=torch.float32).item() == value
        if same and triton_types_as_float32(float(text)):
            return text
    return repr(value)


# reduction type -> (combine function for two partial results, dtype it runs in); each
# starts from kernel_writer's `start_value`. `None` as dtype: the source dtype. any/all
# reduce 0/1 integers, as stage 5's C++ does.
REDUCTIONS = {
    "sum": ("add", None),
    "prod": ("multiply", None),
    "max": ("maximum", None),
    "min": ("minimum", None),
    "any": ("maximum", torch.int32),
    "all": ("minimum", torch.int32),
    # (value, index) pairs: the start value's index must lose every tie
    "argmax": ("argmax_combine", None),
    "argmin": ("argmin_combine", None),
}
NO_INDEX = 2**31 - 1
TEMPORARY = re.compile(r"\btmp\d+\b")  # a value the kernel computes (the shared writer's names)


@dataclasses.dataclass
class KernelShape:
    """What the launcher needs to know: the flat outer size, and the reduction's row size."""

    xnumel: int
    rnumel: int | None  # None: a pointwise kernel (1-D blocks)
    persistent: bool  # this variant keeps whole rows in registers
    # A reduction whose rows lie side by side in memory: its loads walk them with stride 1
    # and stride over each row (a channels-last image's per-channel sums), none along one.
    across_rows: bool = False


class TritonKernel(KernelWriter):
    """Writes one `FusedKernel` as a `@triton.jit` function: one program per block of outer
    elements around the shared writer's temporaries (`tmp3 = tl.sin(tmp1)`)."""

    overrides = TritonOverrides
    language, unsupported = "Triton", TritonUnsupported

    def __init__(self, kernel: FusedKernel, dtypes: dict[str, torch.dtype], looped=False):
        """`looped=True` writes reduction loops even where a whole row would fit."""
        super().__init__(kernel, dtypes)
        self.name = kernel.name + ("_looped" if looped else "")
        self.stored: set[str] = set()
        self.reaches = []  # the largest address of each index (for int32 or int64)
        # The inner ranges of the kernel's loops: every reduction's, and pointwise ones if any.
        inner = {
            tuple(node.inner_ranges(self.n))
            for node in kernel.nodes
            if node.is_reduction or node.inner_ranges(self.n)
        }
        self.rsizes: tuple[int, ...] = ()  # the inner ranges of the loop being written
        # symbolic sizes (sizes.py) compare by this call's values: the launcher's block sizes
        rnumel = max((math.prod(r) for r in inner), default=None, key=sizes.hint)
        persistent = rnumel is not None and len(inner) == 1 and not sizes.is_symbolic(rnumel)
        persistent = persistent and triton_next_power_of_2(rnumel) <= PERSISTENT_RBLOCK_MAX
        self.shape = KernelShape(math.prod(kernel.outer), rnumel, persistent and not looped)
        self.loops = self.sharing(kernel.loops())
        self.later_reads: set[str] = set()  # what the loops after the current one load
        self.order: TritonKernel | None = None  # the variant whose argument order this keeps
        self.load_masks: list = []  # the masks of the `ops.masked` bodies being written
        self.indirect_sizes: dict[str, int] = {}  # index variable -> the size it indexes
        self.walked: set[str] = set()  # how its loads in loops walk memory (`walks`)
        self.declared: dict[str, torch.dtype] = {}  # temporary -> its dtype (typecheck.py)
        self.loads_at = 0  # the line of the current block where its next load goes (`read`)

    def walks(self, index: Index) -> str | None:
        """How a load in a loop walks memory: "along" a row (stride 1 along it), "across" rows
        (stride 1 from row to row, more along one: neighbouring lanes of a block read
        neighbouring memory only when the block is wide across rows), or neither."""
        moving = [d for d, size in enumerate(self.kernel.outer) if size != 1]
        along = [index.coefficient(f"r{d}") for d in range(len(self.rsizes))]
        if 1 in along:
            return "along"
        if any(along) and moving and index.coefficient(f"x{moving[-1]}") == 1:
            return "across"
        return None

    def block_shape(self, dims) -> str:
        """The shape of a value that varies along `dims`: `[XBLOCK]`, `[XBLOCK, 1]`, ..."""
        if self.shape.rnumel is None:
            return "[XBLOCK]"
        return f"[{'XBLOCK' if 'x' in dims else 1}, {'RBLOCK' if 'r' in dims else 1}]"

    def mask(self, dims) -> str | None:
        masks = [f"{axis}mask" for axis in ("r", "x") if axis in dims]
        return " & ".join(masks) or None

    # ------------------------------------------------------------------ the ops handler

    def declare(self, name: Value, expr: str) -> str:
        if name.dtype is not None:  # None: an argmax's (value, index) pair, a tuple
            self.declared[name] = name.dtype
        return f"{name} = {expr}"

    def facts(self, op: str, *args) -> dict:
        return {"dims": frozenset().union(*[a.dims for a in args if isinstance(a, Value)])}

    def emit(self, expr: str, dtype, dims=frozenset()) -> Value:
        """The shared `emit`, with the block axes the value varies along (see `Value`)."""
        return super().emit(expr, dtype, dims=dims)

    def read(self, name: str, index: Index) -> Value:
        if name not in self.dtypes:
            raise TritonUnsupported(f"load of unknown buffer {name}")
        if self.rsizes and (walk := self.walks(index)):
            self.walked.add(walk)
            self.shape.across_rows = self.walked == {"across"}
        text, dims = self.address(index)
        pointer = f"{name} + ({text})"
        masks = frozenset().union(*[m.dims for m in self.load_masks])
        if not masks <= dims:  # a mask wider than the addresses: widen them
            dims = dims | masks
            pointer = f"tl.broadcast_to({pointer}, {self.block_shape(dims)})"
        mask = " & ".join(filter(None, [self.mask(dims), *self.load_masks])) or None
        hint = ", other=0" if self.load_masks else ""
        if "r" in dims and "x" not in dims and sizes.hint(self.shape.xnumel) > 1:  # a symbol is > 1
            # Every program reads these (a layer_norm's weight): keep them in L2.
            hint += ", eviction_policy='evict_last'"
        elif self.rsizes and self.shape.rnumel is not None and not self.shape.persistent:
            # Keep in L2 what a later loop reads again; let the rest go first (as inductor).
            keep = name in self.later_reads
            hint += f", eviction_policy='{'evict_last' if keep else 'evict_first'}'"
        expr = f"tl.load({pointer}{', ' + mask if mask else ''}{hint})"
        if not dims:  # one element for every lane: a block, as inductor does
            expr, dims = f"tl.broadcast_to({expr}, {self.block_shape({'x'})})", {"x"}
        lines = len(self.lines)
        value = self.emit(expr, self.dtypes[name], dims)
        written = {self.kernel.in_place.get(s, s) for s in self.stored}
        if len(self.lines) > lines and not TEMPORARY.search(expr) and name not in written:
            # Loads first, as inductor writes them: a load written after a function with a
            # branch (sin's slow path for large arguments) waits for it, and fewer reads
            # are in flight. Not one whose address or mask is computed, nor one of a
            # buffer this kernel stores (it reads what the store wrote).
            self.lines.insert(self.loads_at, self.lines.pop())
            self.loads_at += 1
        return value

    def constant(self, value, dtype) -> Value:
        text = self.overrides.constant(value, dtype, self.block_shape({"x"}))
        if text.startswith(("tl.full(", "to_bfloat16(")):
            return self.emit(text, dtype, {"x"})
        return Value(text, dtype, literal=value)

    def to_dtype(self, x: Value, dtype) -> Value:
        """A constant is converted here, to a constant of `dtype`."""
        if x.dtype == dtype:
            return x
        if x.literal is not None and math.isfinite(x.literal):
            return self.constant(torch.tensor(x.literal, dtype=x.dtype).to(dtype).item(), dtype)
        return super().to_dtype(self.as_tensor(x), dtype)

    def index_expr(self, index: Index, dtype) -> Value:
        text, dims = self.address(index)
        if not dims and sizes.is_symbolic(index.offset):  # a size (sizes.py): the int argument
            full = f"tl.full({self.block_shape({'x'})}, {text}, {self.overrides.tl_dtype(dtype)})"
            return self.emit(full, dtype, {"x"})
        if not dims:
            return self.constant(index.offset, dtype)
        return self.emit(f"({text}).to({self.overrides.tl_dtype(dtype)})", dtype, dims)

    def indirect_indexing(self, value: Value, size: int) -> Value:
        """The shared one, remembering `size` for the addresses it takes part in."""
        name = super().indirect_indexing(self.as_tensor(value), size)
        self.indirect_sizes[name] = size
        return name

    def masked(self, mask: Value, body, other) -> Value:
        """`body()` where `mask` holds, else `other`: its loads are masked by `mask` too."""
        mask = self.as_tensor(mask)
        self.load_masks.append(mask)
        self.scopes.append({})  # what the body loads under its mask is its own
        try:
            result = body()
        finally:
            self.scopes.pop()
            self.load_masks.pop()
        other = self.constant(other, result.dtype)
        dims = mask.dims | result.dims
        return self.emit(f"tl.where({mask}, {result}, {other})", result.dtype, dims)

    def address(self, index: Index) -> tuple[str, frozenset]:
        """`index_text` of `index`, remembering the largest address (for int32 or int64)."""
        sizes = dict(zip([f"x{d}" for d in range(self.n)], self.kernel.outer, strict=True))
        sizes.update({f"r{d}": size for d, size in enumerate(self.rsizes)})
        sizes.update(self.indirect_sizes)
        reach = sum(abs(coef) * (sizes.get(name, 1) - 1) for name, coef in index.terms)
        self.reaches.append(reach + abs(index.offset))
        return index_text(index, self.kernel.outer, self.rsizes)

    def write(self, op: str, *args) -> Value:
        return super().write(op, *self.typed_operands(op, args))

    def typed_operands(self, op: str, args) -> list[Value]:
        """`args`, with the Python numbers among them made blocks of their dtype where Triton
        would type them itself. Beside a tensor operand of an operator (`tmp0 * 0.5`, and
        `tl.where`'s two values), a number takes the tensor's type, as a scalar does in
        torch. Elsewhere Triton types it by its value, whatever the op's dtype: an argument
        of a function (a prelude helper, libdevice's functions, which take no numbers at
        all) is a float32 or an int32, and so is an op of numbers alone
        (`tl.where(mask, 0.0, 1e-300)` is a float64 block)."""
        args = list(args)
        numbers = [i for i, a in enumerate(args) if a.literal is not None]
        if not numbers:
            return args
        operands = range(1, 3) if op == "where" else range(len(args))
        if self.overrides.is_operator(op, args):
            numbers = numbers[-1:] if set(operands) <= set(numbers) else []
        for i in numbers:
            args[i] = self.as_tensor(args[i])
        return args

    def as_tensor(self, value: Value) -> Value:
        """A Python number as a block (the interpreter mishandles 0-d tensors next to blocks)."""
        if value.literal is None:
            return value
        tl_dtype = self.overrides.tl_dtype(value.dtype)
        return self.emit(
            f"tl.full({self.block_shape({'x'})}, {value}, {tl_dtype})", value.dtype, {"x"}
        )

    # ------------------------------------------------------------------ structure

    def define(self, node: SchedulerNode, value: Value):
        """The value, converted to the node's dtype first."""
        super().define(node, self.to_dtype(value, node.buffer.layout.dtype))

    def store(self, node: SchedulerNode, value: Value):
        self.stored.add(node.name)
        text, dims = self.address(node.store_index(self.n))
        pointer = f"{self.kernel.in_place.get(node.name, node.name)} + ({text})"
        if not value.dims <= dims:  # the value is wider than its addresses: widen them
            dims = dims | value.dims
            pointer = f"tl.broadcast_to({pointer}, {self.block_shape(dims)})"
        mask = self.mask(dims)
        self.lines.append(f"tl.store({pointer}, {value}{', ' + mask if mask else ''})")

    def reduction_input(self, node: SchedulerNode) -> tuple[Value, str, str, object, torch.dtype]:
        """The value to fold (masked lanes hold the start value), and how to fold it."""
        data = node.buffer.data
        if data.reduction_type not in REDUCTIONS:
            raise TritonUnsupported(f"{data.reduction_type} reductions")
        combine, dtype = REDUCTIONS[data.reduction_type]
        if data.reduction_type in ("argmax", "argmin") and data.src_dtype == torch.bool:
            dtype = torch.int32
        dtype = dtype or (torch.int32 if data.src_dtype == torch.bool else data.src_dtype)
        value = node.call_inner_fn(self, self.n)
        if data.reduction_type in ("any", "all"):
            value = self.emit(f"{value} != 0", torch.bool, value.dims)
        value = self.to_dtype(value, dtype)
        start = self.overrides.constant(start_value(data.reduction_type, dtype), dtype)
        return value, combine, start, dtype

    @staticmethod
    def fold(combine: str, block: str) -> str:
        """Reduce a block along its reduction axis, keeping it 2-D (`[XBLOCK, 1]`).

        `tl.reduce` with our own `add` rather than `tl.sum`: see runtime.py for why
        the interpreter cannot call Triton's library functions.
        """
        return f"tl.reduce({block}, 1, {combine})[:, None]"

    def persistent_reduction(self, node: SchedulerNode):
        value, combine, start, dtype = self.reduction_input(node)
        value = self.as_tensor(value)
        masked = self.emit(f"tl.where(rmask & xmask, {value}, {start})", dtype, {"x", "r"})
        if combine.startswith("arg"):  # masked lanes come after every real one: they lose ties
            index = self.emit("tl.broadcast_to(rindex, [XBLOCK, RBLOCK])", torch.int32, {"x", "r"})
            pair = self.emit(f"tl.reduce(({masked}, {index}), 1, {combine})", None, {"x"})
            self.define(node, self.emit(f"{pair}[1][:, None]", torch.int32, {"x"}))
            return
        folded = self.fold(combine, masked)
        if combine == "add":  # torch's sum starts from 0.0, so a row of -0.0 sums to 0.0
            folded += f" + {start}"  # (as the looped variant's accumulator does)
        self.define(node, self.emit(folded, dtype, {"x"}))

    def sharing(self, loops: list[list[SchedulerNode]]) -> list[list[SchedulerNode]]:
        """The kernel's loops, consecutive reductions that can share a loop in one (a looped
        kernel's: a persistent one keeps each row in registers, read once anyway)."""
        if self.shape.persistent:
            return loops
        shared: list[list[SchedulerNode]] = []
        for loop in loops:
            node = loop[0]
            previous = shared[-1] if shared else None
            both = node.is_reduction and previous and previous[0].is_reduction
            if both and self.shares_loop(previous, node):
                previous.append(node)
            else:
                shared.append(list(loop))
        return shared

    def looped_reductions(self, nodes: list[SchedulerNode]):
        """One loop for reductions that share it (`shares_loop`): an `acc` per reduction holds
        RBLOCK partial results per row; each is combined once after the loop."""
        header = len(self.lines)
        self.lines.append("")  # the accumulators' initialisation, once their dtypes are known
        init, folds = [], []
        with self.reduction_loop():
            for node in nodes:
                acc = f"acc_{node.name}"
                value, combine, start, dtype = self.reduction_input(node)
                self.lines += self.accumulate(acc, combine, value)
                init.append(f"{acc} = {self.block_of(start, dtype)}")
                if combine.startswith("arg"):
                    init.append(f"{acc}_index = {self.block_of(NO_INDEX, torch.int32)}")
                folds.append((node, acc, combine, dtype))
        self.lines[header : header + 1] = init
        for node, acc, combine, dtype in folds:
            if combine.startswith("arg"):
                pair = self.emit(f"tl.reduce(({acc}, {acc}_index), 1, {combine})", None, {"x"})
                self.define(node, self.emit(f"{pair}[1][:, None]", torch.int32, {"x"}))
            else:
                self.define(node, self.emit(self.fold(combine, acc), dtype, {"x"}))

    @staticmethod
    def accumulate(acc: str, combine: str, value) -> list[str]:
        """The loop body's lines that fold a block's `value` into `acc` (masked lanes keep it)."""
        if combine.startswith("arg"):
            return [
                f"{acc}_next, {acc}_index_next = {combine}({acc}, {acc}_index, {value}, rindex)",
                f"{acc} = tl.where(rmask & xmask, {acc}_next, {acc})",
                f"{acc}_index = tl.where(rmask & xmask, {acc}_index_next, {acc}_index)",
            ]
        update = f"{acc} + {value}" if combine == "add" else f"{combine}({acc}, {value})"
        return [f"{acc} = tl.where(rmask & xmask, {update}, {acc})"]

    def block_of(self, value, dtype) -> str:
        return f"tl.full([XBLOCK, RBLOCK], {value}, {self.overrides.tl_dtype(dtype)})"

    @contextlib.contextmanager
    def reduction_loop(self):
        """`for roffset in range(...)`: its body is indented, its temporaries are its own."""
        rnumel = sizes.text(math.prod(self.rsizes))
        self.lines.append(f"for roffset in range(0, {rnumel}, RBLOCK):")
        with self.block() as body:
            body += ["rindex = roffset + rbase", f"rmask = rindex < {rnumel}"]
            outer, self.loads_at = self.loads_at, len(body)
            yield
            self.loads_at = outer
        self.lines += ["    " + line for line in body]

    def write_loop(self, loop: list[SchedulerNode]):
        self.rsizes = tuple(loop[0].inner_ranges(self.n))
        if self.shape.rnumel is not None and self.rsizes and self.reads_stored(loop):
            # Another thread of this program may have stored what this loop loads.
            self.lines.append("tl.debug_barrier()")
        self.loads_at = len(self.lines)  # where this loop's loads go (`read`)
        if loop[0].is_reduction:
            if self.shape.persistent:
                self.persistent_reduction(loop[0])
            else:
                self.looped_reductions(loop)
        elif self.rsizes and not self.shape.persistent:
            with self.reduction_loop():
                for node in loop:
                    self.define(node, node.call_inner_fn(self, self.n))
        else:
            for node in loop:
                self.define(node, node.call_inner_fn(self, self.n))
        self.rsizes = ()

    def reads_stored(self, loop) -> bool:
        in_registers = set().union(
            *[{k[1] for k in s if isinstance(k, tuple)} for s in self.scopes]
        )
        return any((node.reads() & self.stored) - in_registers for node in loop)

    def generate(self) -> str:
        shape = self.shape
        two_d = shape.rnumel is not None
        for i, loop in enumerate(self.loops):
            self.later_reads = set().union(
                *[n.reads() for later in self.loops[i + 1 :] for n in later]
            )
            self.write_loop(loop)
        # int32 addresses overflow past 2**31 elements (a last block reaches a bit beyond).
        # A symbolic size decides for this call's values, and guards the answer (sizes.py).
        reaches = [*self.reaches, shape.xnumel * (shape.rnumel or 1)]
        wide = any(sizes.decide(operator.ge, reach + 2**16, 2**31) for reach in reaches)
        pid = "tl.program_id(0).to(tl.int64)" if wide else "tl.program_id(0)"
        header = [
            f"xoffset = {pid} * XBLOCK",
            f"xindex = xoffset + tl.arange(0, XBLOCK){'[:, None]' if two_d else ''}",
            f"xmask = xindex < {sizes.text(shape.xnumel)}",
        ]
        if two_d and shape.persistent:
            header += [
                "rindex = tl.arange(0, RBLOCK)[None, :]",
                f"rmask = rindex < {sizes.text(shape.rnumel)}",
            ]
        elif two_d:
            header.append("rbase = tl.arange(0, RBLOCK)[None, :]")
        for name in self.size_args():  # ints, after the buffers (sizes.py)
            self.args[name] = "size"
        if self.order is not None and set(self.args) == set(self.order.args):
            # the variants' loops may load in another order (a shared reduction loop)
            self.args = {name: self.args[name] for name in self.order.args}
        params = [*self.args, "XBLOCK: tl.constexpr"] + (["RBLOCK: tl.constexpr"] if two_d else [])
        signature = f"def {self.name}({', '.join(params)}):"
        lines = [*header, *self.lines]
        self.source = "\n".join(["@triton.jit", signature, *["    " + line for line in lines]])
        return self.source


def triton_next_power_of_2(n: int) -> int:
    """Block sizes are powers of two; an empty row still needs a block of one (unlike
    `triton.next_power_of_2(0)`, which is 0)."""
    return 1 if n <= 1 else 2 ** math.ceil(math.log2(n))


def variants(kernel: FusedKernel, dtypes) -> list[TritonKernel]:
    """The kernel's writers: one, or the persistent one and a looped one when a row fits."""
    first = TritonKernel(kernel, dtypes)
    if not first.shape.persistent or first.shape.rnumel <= LOOPED_ALSO_ABOVE:
        return [first]
    looped = TritonKernel(kernel, dtypes, looped=True)
    looped.order = first  # one launcher passes the same arguments to either variant
    return [first, looped]


def generate_source(writers: list[TritonKernel], prelude: str) -> str:
    """One Python module for the whole graph: the helpers (`prelude`), then every kernel."""
    return module_source(prelude, [w.generate() for w in writers])


def module_source(prelude: str, kernels: list[str]) -> str:
    return "\n\n\n".join([prelude.rstrip("\n"), *kernels]) + "\n"
