"""Sizes computed in floats: `interpolate(x, scale_factor=1.5)`, `int(x.size(-1) * 0.5)`.

The trace writes such a size with torch's sympy functions of floats: eager's C++ takes
`static_cast<double>(s0) * 1.5` and truncates it (`TruncToInt(1.5*ToFloat(s0))`), a
Python `math.floor(x.size(-1) * 0.5)` is `FloorToInt(0.5*ToFloat(s0))`. The wrapper
computes it in Python (`int(1.5*float(s0))`: computed.py's table), whose floats are the
same doubles, so it gets eager's size to the last bit, as a computed size `ps0`.

That holds where the expression says in which order eager rounded: a size rounds at
most once here (`roundings`): one product, quotient or sum of floats, whose operands are
exact (sizes converted to double, and constants, each printed as the double it is).
Two roundings are refused, for two reasons. Sympy orders a product's factors by its own
rule (`0.5*ToFloat(s0)*ToFloat(s1)` for `s0*0.5*s1`), so the order eager multiplied in is
lost; and it folds constants (`x.size(0) * 0.1 * 3` is `0.3*ToFloat(s0)`, one product by
0.30000000000000004, where eager rounded after each: at 10 rows eager's ceil is 3, the
folded one's 4). A folded expression looks rounded once, so the second is caught where
it happens, in the graph's own arithmetic (`FloatSteps`): a float op on a float that was
rounded already. Each such size then compiles per size, with this reason.
"""

import sympy
import torch
from torch.utils._sympy import functions as F

from .sizes import SymbolicUnsupported

# sympy function of floats -> the Python source of an application (as computed.py's PYTHON).
# Each computes what torch's `eval` of it computes: `TruncToInt` is `math.trunc` (`int` of a
# float), `RoundToInt` Python's `round` (half to even), `IntTrueDiv` Python's `int / int`.
FLOATS = {
    F.ToFloat: lambda a: f"float({a})",
    F.TruncToInt: lambda a: f"int({a})",
    F.FloorToInt: lambda a: f"math.floor({a})",
    F.CeilToInt: lambda a: f"math.ceil({a})",
    F.RoundToInt: lambda a: f"round({a})",
    F.IntTrueDiv: lambda a, b: f"{a} / {b}",
    F.FloatTrueDiv: lambda a, b: f"{a} / {b}",
}

TO_FLOAT = (F.ToFloat, F.IntTrueDiv, F.FloatTrueDiv)  # the functions whose value is a float
TO_INT = (F.TruncToInt, F.FloorToInt, F.CeilToInt, F.RoundToInt)  # a float's int again


class RoundedTwice(SymbolicUnsupported):
    """A size whose float arithmetic Python cannot repeat as eager did: one compile per size."""


def float_text(number: sympy.Float) -> str:
    """A constant as the double it is (`0.30000000000000004`: sympy prints 15 digits)."""
    value = float(number)
    if sympy.Float(value) != number:  # more bits than a double: not a number eager had
        raise RoundedTwice(f"the constant {number} is no double")
    return repr(value)


def is_float(expr) -> bool:
    """Whether `expr`'s value is a float (else an int of sizes)."""
    if isinstance(expr, sympy.Float) or type(expr) in TO_FLOAT:
        return True
    return (expr.is_Add or expr.is_Mul) and any(map(is_float, expr.args))


def roundings(expr) -> int:
    """How many float operations of `expr` may round before its value is an int again: each
    product, quotient and sum of floats. A size converted to float is exact (below 2**53),
    and so is a constant; so is an int made of floats (`TruncToInt`: its own are counted
    apart, `most_roundings`)."""
    if type(expr) in TO_INT:
        return 0
    inner = sum(roundings(a) for a in expr.args)
    if type(expr) in (F.IntTrueDiv, F.FloatTrueDiv):
        return inner + 1
    if (expr.is_Add or expr.is_Mul) and is_float(expr):
        return inner + len(expr.args) - 1
    return inner


def most_roundings(expr) -> int:
    """The most roundings of one float computation of `expr` (ints made of floats made of
    ints of floats: `int(1.5*float(int(1.5*float(s0))))` rounds once, twice over)."""
    inner = [roundings(e.args[0]) for e in sympy.preorder_traversal(expr) if type(e) in TO_INT]
    return max([roundings(expr), *inner])


class FloatSteps:
    """The floats the graph's own arithmetic computed from a float rounded already (`(s0 *
    0.1) * 3`), which the trace may have folded into one rounding (`0.3*ToFloat(s0)`)."""

    def __init__(self, shape_env):
        self.shape_env = shape_env
        self.rounded_twice: set = set()

    def read(self, gm):
        """Note each float that a call of the graph (`operator.mul`) computed from a float
        rounded already, by the values the trace left on its nodes."""
        for node in gm.graph.nodes:
            value = node.meta.get("example_value")
            operands = [a.meta.get("example_value") for a in node.all_input_nodes]
            if isinstance(value, torch.SymFloat) and any(
                isinstance(a, torch.SymFloat) and roundings(a.node.expr) > 0 for a in operands
            ):
                self.rounded_twice.add(value.node.expr)

    def check(self, expr):
        """Raise `RoundedTwice` unless Python computes `expr` as eager did."""
        # in the ShapeEnv's settled terms, as the size is (sizes.py's `as_size`)
        if any(expr.has(self.shape_env.replace(twice)) for twice in self.rounded_twice):
            raise RoundedTwice(
                f"the size {expr} rounds floats more than once, in steps the trace folded "
                "into one (eager rounds after each)"
            )
        if most_roundings(expr) > 1:
            raise RoundedTwice(
                f"the size {expr} rounds floats more than once, in an order the trace does not keep"
            )
