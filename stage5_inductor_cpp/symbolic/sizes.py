"""Sizes that are symbols: one kernel for every batch size.

A graph traced with dynamic shapes (stage2_symbolic_vm/dynamic_shapes/shapes.py) has torch `SymInt`s
for some sizes, kept in a `ShapeEnv`. Its lowering here uses their sympy expressions
(`s17`, `8*s17`) wherever it would use an int: in `Layout` sizes and strides, loop
ranges, and the coefficients of an `Index` (`8*s17*x0 + r0` is still affine in the
loop variables; only its coefficients are symbols). Inductor does the same
(torch/_inductor/sizevars.py); this file is its small cousin.

Three things change where sizes are symbols:
  * a comparison of two sizes is structural (`s17 == s17`, `s17 != 1`: torch makes 0
    and 1 static, so a symbol is never 1). A decision that depends on the value
    (`s17 > 1024`) is taken for this call's size and *guarded* (`decide`), as
    inductor's `evaluate_expr` does: the frame's guards are built after the backend
    runs, so they include it;
  * a kernel takes its symbols as arguments, and `text` prints its sizes (C++, Python
    and Triton share the syntax of sums and products); a floor division or a modulo
    of symbols (a convolution's output size) is a computed size of its own, a symbol
    `ps0` that the wrapper computes and passes (computed.py);
  * heuristics (is this loop long enough to parallelise?) read the call's values
    (`hint`), which changes only speed, never the result.
"""

import contextlib
import operator
import sys
import threading

import torch
import torch.utils._pytree as pytree
from torch._subclasses.fake_tensor import FakeTensor

# sympy is imported by torch's symbolic shapes, only when a trace has symbols: a static
# graph never pays for its slow import, so nothing here imports it first.


class SymbolicUnsupported(Exception):
    """These symbolic sizes cannot be kernel arguments: compile one kernel per size."""


class _Current(threading.local):
    shape_env = None  # the ShapeEnv of the graph being lowered (None: all sizes are ints)
    computed = None  # its computed sizes (computed.py's `ComputedSizes`)


_current = _Current()


@contextlib.contextmanager
def symbols_of(shape_env):
    """Lower a graph whose sizes are symbols of `shape_env` (decisions guard there)."""
    from .computed import ComputedSizes

    previous = _current.shape_env, _current.computed
    _current.shape_env, _current.computed = shape_env, ComputedSizes(shape_env)
    try:
        yield
    finally:
        _current.shape_env, _current.computed = previous


def computed_sizes():
    """The computed sizes of the graph being lowered (computed.py), or None."""
    return _current.computed


def _expanded(value):
    """A size in the ShapeEnv's terms: computed sizes (`ps0`) replaced by their definitions."""
    return value if _current.computed is None else _current.computed.expanded(value)


@contextlib.contextmanager
def fake_mode_of(example_inputs):
    """Lower a graph whose inputs are FakeTensors (their sizes are symbols): torch's answers
    about them (meta functions, stand-ins) come from their FakeTensorMode, as in inductor;
    with the Python dispatcher on, as the frontend traced them (stage 2's shapes.py): a C++
    kernel that reads plain sizes (`x @ w` in torch 2.11) would pin each symbol to its value.
    Static inputs need neither."""
    fakes = [a for a in example_inputs if isinstance(a, FakeTensor)]
    if not fakes:
        yield
        return
    from torch._dispatch.python import enable_python_dispatcher

    with fakes[0].fake_mode, enable_python_dispatcher():
        yield


def as_size(value):
    """An int as it is; a SymInt as its expression, in the form the ShapeEnv settled on
    (two sizes the trace found equal are the same symbol), its floor divisions and the
    like named as computed sizes (`ps0 + 1`: computed.py)."""
    if not isinstance(value, torch.SymInt):
        return value
    node = value.node
    expr = node.shape_env.replace(node.expr) if node.shape_env is not None else node.expr
    if expr.is_Integer:
        return int(expr)
    computed = _current.computed
    if computed is None or computed.shape_env is not node.shape_env:
        return expr  # a size `text` refuses if it is not a sum of products
    return computed.size(expr)


def as_sizes(values) -> tuple:
    return tuple(as_size(v) for v in values)


def as_symint(value):
    """A size as torch takes it: an int, or a SymInt of the active ShapeEnv (to ask meta
    functions about a tensor whose sizes are symbols)."""
    if not is_symbolic(value):
        return value
    env = _current.shape_env
    if env is None:
        raise SymbolicUnsupported(f"no ShapeEnv for the size {value}")
    return env.create_symintnode(_expanded(value), hint=hint(value))


def as_symints(values) -> tuple:
    return tuple(as_symint(v) for v in values)


def call_now(target, args, kwargs):
    """Run a call without IR arguments now (shape arithmetic, a factory): symbolic sizes go
    in as torch's SymInts, and come out as expressions."""
    leaves = pytree.tree_leaves((args, kwargs))
    if not any(map(is_symbolic, leaves)):
        result = target(*args, **kwargs)  # a float of symbols (`SymFloat`) goes in as it is
    else:
        result = target(*pytree.tree_map(as_symint, args), **pytree.tree_map(as_symint, kwargs))
    return pytree.tree_map(as_size, result)  # `int(0.5*x.size(0))` is a SymInt too


def is_symbolic(value) -> bool:
    sympy = sys.modules.get("sympy")
    return sympy is not None and isinstance(value, sympy.Basic) and not value.is_Integer


def free_symbols(*values) -> set[str]:
    """The names of the symbols in `values` (ints, expressions, nested tuples)."""
    names = set()
    for value in values:
        if isinstance(value, (tuple, list)):
            names |= free_symbols(*value)
        elif is_symbolic(value):
            names |= {s.name for s in value.free_symbols}
    return names


def decide(compare, a, b) -> bool:
    """`compare(a, b)` (`operator.gt`: `size > 1024`) for this call's sizes. Where the answer
    holds only for some values of the symbols, it is guarded, so other values recompile."""
    if not (is_symbolic(a) or is_symbolic(b)):
        return compare(a, b)
    import sympy

    relation = compare(sympy.sympify(a), b)
    if relation in (sympy.true, sympy.false):
        return bool(relation)
    if _current.shape_env is None:
        raise SymbolicUnsupported(f"{relation} needs a guard and no ShapeEnv is active")
    # the ShapeEnv knows the ranges of its symbols (`(s0 - 1)//2 >= 0` needs no guard)
    # and guards the rest in its own terms: computed sizes are expanded first
    return bool(_current.shape_env.evaluate_expr(_expanded(relation)))


def same(a, b) -> bool:
    """Whether two sizes are equal for every value of the symbols: `2*(s0 + 1)` is `2*s0 + 2`
    (no guard: an identity, not a decision)."""
    if not (is_symbolic(a) or is_symbolic(b)):
        return a == b
    import sympy

    return sympy.expand(a - b) == 0


def maximum(a, b):
    """`max(a, b)` of sizes (Python's `max` would ask sympy a question it cannot answer)."""
    return a if decide(operator.ge, a, b) else b


def floordiv(a, b):
    """`a // b` of sizes, written as torch writes it (`FloorDiv`), so that our sizes and the
    meta functions' compare equal; a computed size of its own (computed.py)."""
    if not (is_symbolic(a) or is_symbolic(b)):
        return a // b
    from torch.utils._sympy.functions import FloorDiv

    quotient = FloorDiv(_expanded(a), _expanded(b))
    return quotient if _current.computed is None else _current.computed.size(quotient)


def slice_indices(item: slice, size) -> tuple:
    """`item.indices(size)` (a positive step) where `size` or the bounds may be symbols."""
    if not any(map(is_symbolic, (size, item.start, item.stop))):
        return item.indices(size)

    def bound(value, default):
        if value is None:
            return default
        if decide(operator.lt, value, 0):
            return maximum(value + size, 0)
        return value if decide(operator.le, value, size) else size

    return bound(item.start, 0), bound(item.stop, size), 1 if item.step is None else item.step


def hint(value) -> int:
    """The value of a size for this call: for heuristics, which change speed, not results."""
    if not is_symbolic(value):
        return int(value)
    if _current.shape_env is None:
        raise SymbolicUnsupported(f"no values for the symbols of {value}")
    value = _expanded(value).xreplace(values_at_trace(_current.shape_env))
    if not value.is_Integer:
        raise SymbolicUnsupported(f"no value for a symbol of {value}")
    return int(value)


def values_at_trace(env) -> dict:
    """Each symbol of `env` -> its value at the trace (torch 2.13 renamed the table; 2.11
    has the old name)."""
    return env.backed_var_to_val if hasattr(env, "backed_var_to_val") else env.var_to_val


def text(value) -> str:
    """A size as source text, the same in C++, Python and Triton: ints, symbols, sums and
    products (`8*s17 + 3`). Floor division and the rest are not written in kernels: they
    are computed sizes, symbols here (computed.py)."""
    if not is_symbolic(value):
        return str(int(value))
    import sympy

    expr = sympy.expand(value)
    if expr.is_Symbol:
        return expr.name
    if expr.is_Add:
        terms = sorted((text(t) for t in expr.args), key=lambda t: (t[0] == "-", t))
        return " + ".join(terms).replace("+ -", "- ")
    if expr.is_Mul:
        coef, rest = expr.as_coeff_Mul()
        factors = [text(f) for f in sympy.Mul.make_args(rest)]
        body = "*".join(f"({f})" if " " in f else f for f in factors)
        return body if coef == 1 else "-" + body if coef == -1 else f"{coef}*{body}"
    if expr.is_Pow and expr.exp.is_Integer and expr.exp > 0:
        return "*".join([text(expr.base)] * int(expr.exp))
    raise SymbolicUnsupported(f"the size {value} is not a sum of products of symbols")


def operand(value) -> str:
    """A size as an operand of `*`, `//` or `%`: `64`, `-1`, `s77`, `(2*s77)`, `(s77 + 1)`."""
    written = text(value)
    return written if not is_symbolic(value) or written.isidentifier() else f"({written})"


def sizes_text(values) -> str:
    """A tuple of sizes as Python source: `(s17, 8)`."""
    inner = ", ".join(text(v) for v in values)
    return f"({inner}{',' if len(values) == 1 else ''})"


class SymbolsCollector:
    """A handler (ir.py's `ops`) that records the size symbols of every index a function loads
    at or computes with: a kernel takes them as arguments."""

    def __init__(self):
        self.names: set[str] = set()

    def load(self, name, index):
        self.names |= index.symbols()
        return name

    def index_expr(self, index, dtype):
        self.names |= index.symbols()
        return "index"

    def indirect_indexing(self, value, size):
        self.names |= free_symbols(size)
        return "indirect"

    def masked(self, mask, body, other):
        return body()

    def __getattr__(self, name):
        return lambda *args, **kwargs: name
