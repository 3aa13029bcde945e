"""C++/OpenMP code generation: *how* the IR is emitted (torch/_inductor/codegen/cpp.py).

`CppOverrides` is the op -> C++ table and `CppKernel` the kernel writer, both built on
kernel_writer.py's (shared with stage 6's Triton): every op becomes one typed, named
temporary (`float tmp3 = std::sin(tmp1);`), identical expressions are emitted once.
What is C++'s own is here: the table's C++ entries, the rungs of the constant ladder
and casts, the `if` of a masked load, and the loops: outer loops around inner loops,
reductions into accumulators. Passes of performance/ change the loops: the outer loops
are shared out among threads and vectorised (parallel_loops.py), an outer reduction turns
them round (outer_reductions.py), and a value that a reduction loop stashed in an output
is loaded back from it (stash.py). argmax's loop keeps torch's rules for ties and NaN
(like_eager/arg_reductions.py).
"""

import math
import pathlib
import typing

import torch

from .ir import Printer
from .kernel_writer import REDUCTION_STARTS, KernelWriter, OpOverrides, Value
from .like_eager import arg_reductions, bfloat16
from .performance import outer_reductions, parallel_loops, stash
from .scheduler import FusedKernel, SchedulerNode
from .symbolic.sizes import text

CTYPES = {
    torch.float32: "float",
    torch.float64: "double",
    torch.float16: "_Float16",  # IEEE half, a type of C (and of g++'s C++) since GCC 12
    torch.bfloat16: "float",  # in registers: a float that holds its value (like_eager/bfloat16.py)
    torch.int64: "int64_t",
    torch.int32: "int32_t",
    torch.int16: "int16_t",
    torch.int8: "int8_t",
    torch.uint8: "uint8_t",
    torch.bool: "bool",
}

# The helpers every C++ source starts with, where torch's answers are not C++'s: NaN wins
# a maximum, a remainder takes the divisor's sign, bfloat16 rounds as c10's; and the SIMD
# math functions of glibc that OpenMP loops may call (like_eager/prelude.h).
PRELUDE = (pathlib.Path(__file__).parent / "like_eager" / "prelude.h").read_text()


class CppOverrides(OpOverrides):
    """How each op of the IR reads in C++ (inductor's `CppOverrides`): the shared table's
    entries, these, and methods for the rest."""

    FORMATS: typing.ClassVar[dict[str, str]] = {
        **OpOverrides.FORMATS,
        "neg": "-{0}", "abs": "std::abs({0})",
        "sin": "std::sin({0})", "cos": "std::cos({0})", "tan": "std::tan({0})",
        "exp": "std::exp({0})", "expm1": "std::expm1({0})", "log": "std::log({0})",
        "log2": "std::log2({0})", "log1p": "std::log1p({0})", "sqrt": "std::sqrt({0})",
        "rsqrt": "1 / std::sqrt({0})", "tanh": "std::tanh({0})", "erf": "std::erf({0})",
        "atan": "std::atan({0})", "atan2": "std::atan2({0}, {1})", "pow": "std::pow({0}, {1})",
        "sigmoid": "1 / (1 + std::exp(-{0}))", "relu": "{0} < 0 ? 0 : {0}",
        "floor": "std::floor({0})", "ceil": "std::ceil({0})", "trunc": "std::trunc({0})",
        "round": "std::nearbyint({0})", "isnan": "std::isnan({0})",
        "maximum": "max_propagate_nan({0}, {1})", "minimum": "min_propagate_nan({0}, {1})",
        "remainder": "remainder_python({0}, {1})", "truncdiv": "{0} / {1}",
        "logical_and": "{0} && {1}", "logical_or": "{0} || {1}", "logical_not": "!{0}",
        "where": "{0} ? {1} : {2}", "fma": "std::fma({0}, {1}, {2})",
        "indirect_indexing": "{0} < 0 ? {0} + {1} : {0}",
    }  # fmt: skip

    @staticmethod
    def ctype(dtype: torch.dtype) -> str:
        return CTYPES[dtype]

    # The rungs of the shared `constant` ladder, spelled in C++.
    @staticmethod
    def boolean(value: bool) -> str:
        return "true" if value else "false"

    @classmethod
    def through_float32(cls, text: str, dtype, shape) -> str:
        return bfloat16.declared(dtype, f"static_cast<{cls.ctype(dtype)}>({text})")

    @staticmethod
    def integer(value, dtype, shape) -> str:
        return f"{int(value)}L" if int(value) >= 0 else f"({int(value)}L)"

    @classmethod
    def nan(cls, dtype) -> str:
        return f"std::numeric_limits<{cls.ctype(dtype)}>::quiet_NaN()"

    @classmethod
    def infinity(cls, dtype, negative: bool) -> str:
        return f"({'-' if negative else ''}std::numeric_limits<{cls.ctype(dtype)}>::infinity())"

    @staticmethod
    def floating(value: float, dtype, shape) -> str:
        text = repr(value)
        if dtype == torch.float32:
            exact = torch.tensor(value, dtype=torch.float32).item() == value
            text = f"{text}f" if exact else f"static_cast<float>({text})"
        return f"({text})" if math.copysign(1.0, value) < 0 else text  # -0.0 too: `-(-0.0f)`

    @staticmethod
    def start(reduction_type: str, t: str, floating: bool) -> str:
        """A reduction's start value (kernel_writer's `REDUCTION_STARTS`) for an accumulator of
        C++ type `t`: the limits of the type, infinities for floats, 0 and 1 for bools."""
        start = REDUCTION_STARTS[reduction_type]
        if start in (0, 1):
            return str(start)
        lowest = start == "lowest"
        if floating:
            return f"{'-' if lowest else ''}std::numeric_limits<{t}>::infinity()"
        if t == "int":  # bools, folded as ints
            return "0" if lowest else "1"
        return f"std::numeric_limits<{t}>::{'lowest' if lowest else 'max'}()"

    @classmethod
    def to_dtype(cls, x, dtype: torch.dtype) -> str:
        source = getattr(x, "dtype", None)
        if dtype == torch.uint8 and source is not None and source.is_floating_point:
            # C++ leaves a negative float to unsigned undefined; c10 goes through int64
            # (c10/util/TypeCast.h), so -1.0 is 255, as in torch.
            return f"static_cast<uint8_t>(static_cast<int64_t>({x}))"
        return bfloat16.declared(dtype, f"static_cast<{cls.ctype(dtype)}>({x})")


# reduction type -> (OpenMP reduction operator, update of `acc` by `v`)
REDUCTIONS = {
    "sum": ("+", "{acc} = {acc} + {v};"),
    "prod": ("*", "{acc} = {acc} * {v};"),
    "max": ("max", "{acc} = std::max({acc}, {t}({v}));"),
    "min": ("min", "{acc} = std::min({acc}, {t}({v}));"),
    "any": ("|", "{acc} = {acc} | static_cast<int>(static_cast<bool>({v}));"),
    "all": ("&", "{acc} = {acc} & static_cast<int>(static_cast<bool>({v}));"),
}


class CppKernel(KernelWriter):
    """Writes one `FusedKernel` as an `extern "C"` function: C++ `for` loops around the
    shared writer's temporaries (`float tmp3 = std::sin(tmp1);`)."""

    overrides = CppOverrides
    language, unsupported = "C++", AttributeError
    keys = Printer()  # makes each Value's `key`, the IR's text the scheduler compares

    def __init__(self, kernel: FusedKernel, dtypes: dict[str, torch.dtype]):
        super().__init__(kernel, dtypes)
        # reduction -> the output its loop stores its values into
        self.stashes = stash.stashes(kernel)
        self.stashed: dict[str, tuple[str, str]] = {}  # buffer -> (key, C++ load) it holds
        self.read_back: dict[str, str] = {}  # in the loop being written: key -> C++ load

    # ------------------------------------------------------------------ the ops handler

    def declare(self, name: Value, expr: str) -> str:
        return f"{self.overrides.ctype(name.dtype)} {name} = {bfloat16.declared(name.dtype, expr)};"

    def facts(self, op: str, *args) -> dict:
        keys = [a.key if isinstance(a, Value) else a for a in args]
        return {"key": getattr(self.keys, op)(*keys)}

    def emit(self, expr: str, dtype, **facts) -> Value:
        expr = self.read_back.get(facts["key"], expr)  # a reduction loop left it in a buffer
        return super().emit(expr, dtype, **facts)

    def load(self, name: str, index) -> Value:
        # A value left in a register is known by the text of its load, as stash.py's
        # `expressions` know it: the key of what a loop reads, not of how it was computed.
        value = super().load(name, index)
        return Value(value, value.dtype, key=self.keys.load(name, index))

    def read(self, name: str, index) -> Value:
        expr = bfloat16.loaded(self.dtypes[name], f"{name}[{index}]")
        return self.emit(expr, self.dtypes[name], **self.facts("load", name, index))

    def constant(self, value, dtype) -> Value:
        text = self.overrides.constant(value, dtype)
        return Value(text, dtype, key=self.keys.constant(value, dtype))

    def index_expr(self, index, dtype) -> Value:
        """An index as a value (`cat` compares it with where each piece starts)."""
        key = self.keys.index_expr(index, dtype)
        return self.emit(self.overrides.to_dtype(index, dtype), dtype, key=key)

    def masked(self, mask: Value, body, other) -> Value:
        """`body()` where `mask` holds, else `other`: its loads run only inside the `if`."""
        with self.block() as lines:
            result = body()
        key = self.keys.masked(mask.key, lambda: result.key, other)
        name = self.temporary(result.dtype, key=key)
        self.lines.append(self.declare(name, self.overrides.constant(other, result.dtype)))
        self.lines += [f"if ({mask})", "{", *indent(lines), f"    {name} = {result};", "}"]
        return name

    # ------------------------------------------------------------------ structure

    def define(self, node: SchedulerNode, value: Value):
        """A value that is no temporary of the node's dtype gets one (`buf1_v`) first."""
        dtype = node.buffer.layout.dtype
        if value.dtype != dtype or not value.startswith("tmp"):
            local = Value(f"{node.name}_v", dtype)
            self.lines.append(self.declare(local, self.overrides.to_dtype(value, dtype)))
            value = local
        super().define(node, value)

    def store(self, node: SchedulerNode, value: Value):
        value = bfloat16.stored(node.buffer.layout.dtype, value)
        memory = self.kernel.in_place.get(node.name, node.name)
        self.lines.append(f"{memory}[{node.store_index(self.n)}] = {value};")

    def pointwise_loop(self, nodes: list[SchedulerNode], simd: bool):
        inner = nodes[0].inner_ranges(self.n)
        if not inner:  # no inner loop: results stay visible to the kernel's later loops
            for node in nodes:
                self.define(node, node.call_inner_fn(self, self.n))
            return
        self.read_back = dict(
            self.stashed.pop(node.name) for node in nodes if node.name in self.stashed
        )
        with self.block() as body:
            for node in nodes:
                self.define(node, node.call_inner_fn(self, self.n))
        self.read_back = {}
        body = stash.without_unused_temporaries(body)
        self.lines += loop_nest("r", inner, body, "#pragma omp simd" if simd else "")

    def reduction_loop(self, node: SchedulerNode):
        data = node.buffer.data
        acc = f"acc_{node.name}"
        if data.reduction_type in ("argmax", "argmin"):
            return arg_reductions.arg_reduction_loop(self, node, acc)
        t, init, update, track_nan = self.accumulator(node)
        omp_op = REDUCTIONS[data.reduction_type][0]
        self.lines.append(f"{t} {acc} = {init};")
        pragma = f"#pragma omp simd reduction({omp_op}:{acc})"
        if track_nan:  # OpenMP's max ignores NaN; torch's amax returns it
            self.lines.append(f"int {acc}_nan = 0;")
            pragma += f" reduction(|:{acc}_nan)"
        with self.block() as body:
            value = node.call_inner_fn(self, self.n)
            if node.name in self.stashes:
                stash.store(self, node, value, body)
            body.append(update.format(acc=acc, v=value, t=t))
            if track_nan:
                body.append(f"{acc}_nan |= ({value} != {value});")
        self.lines += loop_nest("r", data.reduction_ranges, body, pragma)
        result = f"{acc}_nan ? std::numeric_limits<{t}>::quiet_NaN() : {acc}" if track_nan else acc
        self.define(node, Value(result, None))

    def accumulator(self, node: SchedulerNode) -> tuple[str, str, str, bool]:
        """A reduction's accumulator: its C++ type, start value, update, and whether NaN is
        tracked beside it."""
        data = node.buffer.data
        t = self.overrides.ctype(data.src_dtype)
        floating = data.src_dtype.is_floating_point
        if data.reduction_type in ("sum", "prod") and data.src_dtype == torch.float32:
            t = "double"  # like torch's cascade sum, keep float32 sums accurate
        if data.src_dtype == torch.bool or data.reduction_type in ("any", "all"):
            t = "int"
        _, update = REDUCTIONS[data.reduction_type]
        track_nan = floating and data.reduction_type in ("max", "min")
        return t, self.overrides.start(data.reduction_type, t, floating), update, track_nan

    def generate(self) -> str:
        kernel, n = self.kernel, self.n
        pointwise_only = all(
            not node.is_reduction and not node.inner_ranges(n) for node in kernel.nodes
        )
        outer = kernel.outer
        if (phases := outer_reductions.phases(self)) is not None:  # SIMD over the last dim
            body, outer = outer_reductions.write(self, phases), kernel.outer[:-1]
        else:
            with self.block() as body:
                for loop in kernel.loops():
                    if loop[0].is_reduction:
                        self.reduction_loop(loop[0])
                    else:
                        self.pointwise_loop(loop, simd=True)
        lines = parallel_loops.outer_loops(self, outer, body, pointwise_only)  # SIMD, threads
        params = []
        for name, mode in self.args.items():
            const = "const " if mode == "in" else ""
            t = bfloat16.memory_type(self.dtypes[name], self.overrides.ctype(self.dtypes[name]))
            params.append(f"{const}{t}* __restrict__ {name}")
        for name in self.size_args():
            self.args[name] = "size"
            params.append(f"const int64_t {name}")
        signature = f'extern "C" void {kernel.name}({", ".join(params)})'
        return "\n".join([signature, "{", *indent(lines), "}"])


def indent(lines, by="    "):
    return [by + line for line in lines]


def loop_nest(prefix: str, ranges, body: list[str], innermost_pragma: str) -> list[str]:
    """`for` loops over `ranges` (variables prefix0, prefix1, ...) around `body`."""
    lines = ["{", *indent(body), "}"]
    for d in reversed(range(len(ranges))):
        var = f"{prefix}{d}"
        header = [f"for (int64_t {var} = 0; {var} < {text(ranges[d])}; {var}++)"]
        if d == len(ranges) - 1 and innermost_pragma:
            header.insert(0, innermost_pragma)
        lines = header + lines
    return lines
