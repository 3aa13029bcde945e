"""Computed sizes: floor division, modulo, min and max of symbols, as kernel arguments.

A convolution's output is `(s0 - 1)//2 + 1` rows tall, `x[::2]` keeps `(s0 + 1)//2` of
`s0`: torch's ShapeEnv writes such sizes with its own sympy functions (`FloorDiv`,
`ModularIndexing`, `PythonMod`, `Max`: torch/utils/_sympy/functions.py). Our kernels
print only sums and products of symbols (sizes.py's `text`), so each such term becomes a
size of its own, a new symbol (`ps0`, inductor's name for a precomputed size), as it
enters the lowering (sizes.py's `as_size`). The IR then holds only polynomials: loop
ranges `ps0 + 1`, strides `2*ps0 + 2`, index coefficients. The wrapper computes each
`ps` from the symbols once a call, in Python (`ps0 = (s0 - 1)//2`), and passes it to the
kernels as it passes `s0` (symbolic/code.py). Inductor does the same for the sizes a
Triton kernel needs (`ps0` in torch/_inductor/codegen/triton.py, from sizevars'
`precomputed_replacements`); its C++ kernels print `c10::div_floor_integer` instead.

Why this is safe: Python's `//` and `%` are torch's `FloorDiv` and `PythonMod` exactly,
for every sign, so the wrapper's value is the ShapeEnv's; no kernel language writes a
division of sizes at all (C++'s `/` truncates towards zero, which differs for negative
numbers, and C++ reads `//` as a comment). A decision about a computed size is taken on
its definition (sizes.py's `decide` expands it first), so the ShapeEnv guards it in its
own terms, and stage 3 prints that guard with Python's `//` too.
"""

import sympy
from torch.utils._sympy import functions as F

from .float_sizes import FLOATS, FloatSteps, float_text

# sympy function -> Python source of an application, from its arguments' source.
# ModularIndexing and torch's Mod name C's `%`, which is Python's for the non-negative
# operands torch builds them from (indices and sizes); PythonMod and sympy's Mod are
# Python's own. Identity only stops sympy from simplifying.
PYTHON = {
    F.FloorDiv: lambda a, b: f"{a}//{b}",
    F.CleanDiv: lambda a, b: f"{a}//{b}",
    F.ModularIndexing: lambda a, b, c: f"({a}//{b}) % {c}",
    F.PythonMod: lambda a, b: f"{a} % {b}",
    F.Mod: lambda a, b: f"{a} % {b}",
    sympy.Mod: lambda a, b: f"{a} % {b}",
    F.Max: lambda *args: f"max({', '.join(args)})",
    F.Min: lambda *args: f"min({', '.join(args)})",
    sympy.Max: lambda *args: f"max({', '.join(args)})",
    sympy.Min: lambda *args: f"min({', '.join(args)})",
    F.PowByNatural: lambda a, b: f"{a}**{b}",
    F.Identity: lambda a: a,
    **FLOATS,  # sizes computed in floats (`int(1.5*float(s0))`): float_sizes.py
}


BOUNDS = (F.Max, F.Min, sympy.Max, sympy.Min)  # `Max(1, s0//2)` may be one of its arguments
# the functions spelled as one call (`max(0, s0 - 3)`, `int(1.5*float(s0))`): an operand as
# they are; the others' applications are put in parentheses (`(s0 - 1)//2`)
CALLS = (*BOUNDS, *(f for f in FLOATS if f not in (F.IntTrueDiv, F.FloatTrueDiv)))


def is_polynomial(expr) -> bool:
    """Whether `expr` is a sum of products of symbols and integers (kernels print these)."""
    if expr.is_Integer or expr.is_Symbol:
        return True
    if expr.is_Add or expr.is_Mul:
        return all(map(is_polynomial, expr.args))
    return bool(expr.is_Pow and expr.exp.is_Integer and expr.exp > 0 and is_polynomial(expr.base))


class ComputedSizes:
    """The computed sizes of one graph: `ps0` <-> `(s0 - 1)//2`, named in order of first use."""

    def __init__(self, shape_env):
        self.shape_env = shape_env
        self.definitions: dict[sympy.Symbol, sympy.Expr] = {}  # ps0 -> FloorDiv(s0 - 1, 2)
        self.ours: dict[sympy.Expr, object] = {}  # a ShapeEnv's size -> ours (`size`)
        self.float_steps = FloatSteps(shape_env)  # floats the graph rounded twice (float_sizes.py)

    def size(self, expr):
        """A size of the ShapeEnv (`(s0 - 5)//2 + 1`) as ours: sums and products of symbols,
        each term that is not one named (`ps0 + 1`), and an int where the ShapeEnv knows it.

        The trace may have fixed a computed size: a pooling whose output is 1 wide guards
        `(s0 - 5)//2 + 1 == 1` (torch keeps sizes 1 static), and eager's tensors then say 1.
        The ShapeEnv's `replace` does not apply such a guard; asking it whether the size
        equals its value, without adding a guard, does (inductor's sizevars asks the same
        private `_maybe_evaluate_static`). So does a guard that two sizes are equal
        (`s0//2 == (s0 + 1)//2`: `avg_pool2d(x, 2) + x[::2]`, for even sizes): the second
        is the first's symbol, and the two shapes broadcast. And a bound that always holds:
        torch's strides are `Max(1, size)`, which is `size` itself where sizes are at least
        1; otherwise a view's base and its snapshot would differ in name only."""
        expr = self.expanded(expr)  # `FloorDiv(ps0 + 1, 2)` is known by what it computes
        if not isinstance(expr, sympy.Expr) or is_polynomial(expr):
            return expr
        if expr not in self.ours:
            self.ours[expr] = self.settled(expr)
        return self.ours[expr]

    def settled(self, expr):
        value = self.value(expr)
        if value is not None and self.equal(expr, value):
            return value
        if expr.is_Add or expr.is_Mul or expr.is_Pow:
            return expr.func(*map(self.size, expr.args))
        for bound in expr.args if type(expr) in BOUNDS else ():
            if self.equal(expr, bound):
                return self.size(bound)
        return self.named(expr, value)

    def named(self, expr, value):
        """The symbol of a term such as `FloorDiv(s0 - 1, 2)`: a known one's where the
        ShapeEnv knows they are equal, else a new one."""
        python_text(expr)  # one that Python cannot spell raises SymbolicUnsupported
        self.float_steps.check(expr)  # and one whose floats it cannot round as eager did
        for symbol, other in self.definitions.items():
            if value is not None and self.value(other) == value and self.equal(expr, other):
                return symbol
        symbol = sympy.Symbol(f"ps{len(self.definitions)}", integer=True)
        self.definitions[symbol] = expr
        return symbol

    def equal(self, a, b) -> bool:
        """Whether the ShapeEnv knows `a == b` for every size its guards allow."""
        return self.shape_env._maybe_evaluate_static(sympy.Eq(a, b)) == sympy.true

    def value(self, expr) -> int | None:
        """`expr`'s value at the trace (None where a symbol has none: data-dependent)."""
        from .sizes import values_at_trace

        found = self.expanded(expr).xreplace(values_at_trace(self.shape_env))
        return int(found) if found.is_Integer else None

    def expanded(self, expr):
        """`expr` in the ShapeEnv's terms again: each computed size replaced by its definition
        (to ask the ShapeEnv about it, or to evaluate it)."""
        if not isinstance(expr, sympy.Basic) or not self.definitions:
            return expr
        return expr.xreplace(self.definitions)

    def sources(self) -> dict[str, str]:
        """Each computed size's name -> its Python source, in the order they were named."""
        return {symbol.name: python_text(expr) for symbol, expr in self.definitions.items()}


def python_text(expr) -> str:
    """`expr` as Python source: `(s0 - 1)//2`, `max(0, s0 - 3)`."""
    from .sizes import SymbolicUnsupported, text  # sums and products print as in kernels

    if is_polynomial(expr):
        return text(expr)
    if isinstance(expr, sympy.Float):
        return float_text(expr)
    if expr.is_Add:
        return " + ".join(python_text(a) for a in expr.args)
    if expr.is_Mul:
        return "*".join(map(_operand, expr.args))
    if expr.is_Pow and expr.exp.is_Integer and expr.exp > 0:
        return f"{_operand(expr.base)}**{expr.exp}"
    if type(expr) not in PYTHON:
        raise SymbolicUnsupported(f"the size {expr} has no Python spelling here")
    if type(expr) in CALLS:  # a call's arguments need no parentheses
        return PYTHON[type(expr)](*map(python_text, expr.args))
    return f"({PYTHON[type(expr)](*map(_operand, expr.args))})"


def _operand(expr) -> str:
    """`expr` as an operand of `*`, `//` or `%`: an application is a call or in parentheses
    already, a constant is a number."""
    from .sizes import operand

    if is_polynomial(expr):
        return operand(expr)
    written = python_text(expr)
    if type(expr) in PYTHON or (isinstance(expr, sympy.Float) and expr >= 0):
        return written
    return f"({written})"
