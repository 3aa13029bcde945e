"""The attributes and methods of a constant (`(2.5).real`, `"a,b".split(",")`), run now.

A constant is immutable, so each of its methods is a pure function of constants: it
runs now, on the real value, and its result is a constant of the trace.
"""

from ..errors import ObservedAttributeError
from ..variables import BoundMethodVariable, ConstantVariable, Variable


def attribute(tx, constant: ConstantVariable, name):
    """`constant.name`: a method (bound, for `fold_method`), or a value read now."""
    value = constant.as_python_constant()
    if not hasattr(value, name):
        raise ObservedAttributeError(f"{type(value).__name__} has no attribute {name!r}")
    if callable(getattr(value, name)):
        return BoundMethodVariable(constant, name)
    return tx.wrap_constant_result(getattr(value, name), f"attribute {name!r}")


def fold_method(tx, constant: ConstantVariable, name, args, kwargs):
    """`constant.name(*args, **kwargs)`, run now."""
    # None changes its arguments either: a dict (`str.format_map`, `str.translate`) or the
    # iterable of `str.join` is read whole, into a new one.
    if name == "join" and len(args) == 1 and not args[0].is_python_constant():
        args = [ConstantVariable(tuple(v.as_python_constant() for v in args[0].unpack(tx)))]
    values = [method_argument(tx, a) for a in args]
    kwargs = {k: v.as_python_constant() for k, v in kwargs.items()}
    result = tx.run_python(getattr(constant.as_python_constant(), name), *values, **kwargs)
    return tx.wrap_constant_result(result, f"{type(constant.value).__name__}.{name}()")


def method_argument(tx, value: Variable):
    """An argument of a constant's method: a constant, or a dict of constants read now into a
    new dict (`str.format_map`, `str.translate` only read it)."""
    if value.is_python_constant() or not issubclass(value.python_type(), dict):
        return value.as_python_constant()
    return {
        k.as_python_constant(): value.getitem(tx, k).as_python_constant() for k in value.unpack(tx)
    }


def plain(value):
    """A number of a subclass (NumPy's float64, an IntEnum member) as the plain number it
    equals, for a tensor operation's argument: FX writes a graph's constants as source,
    where `np.float64(2.0)` would need a name that the graph's module does not have."""
    kinds = (bool, int, float, complex)
    if type(value) in kinds:
        return value
    return next((kind(value) for kind in kinds if isinstance(value, kind)), value)


def all_constants(args, kwargs) -> bool:
    """Whether every argument of a call is a Python constant: a pure function may run now."""
    return all(value.is_python_constant() for value in [*args, *kwargs.values()])
