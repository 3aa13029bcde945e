"""The operator module, as the VM runs it: `operator.add(a, b)` is `a + b` (operators.py),
and `itemgetter`, `attrgetter` and `methodcaller` are Variables a call applies to their one
argument (CPython makes C objects of them). One function, one entry (`OPERATOR_FUNCTIONS`).
"""

import operator

from ..errors import ObservedException
from ..variables import ConstantVariable, Variable
from .operators import (
    BINARY_OPS,
    COMPARE_OPS,
    UNARY_OPS,
    binary_op,
    compare_op,
    contains,
    is_same,
    unary_op,
)
from .sequences import TupleVariable


class OperatorGetterVariable(Variable):
    """`operator.itemgetter(*keys)`, `attrgetter(*names)` or `methodcaller(name, *args)` made
    in the trace: a call applies it to its one argument (CPython makes C objects of these)."""

    def __init__(self, kind, args, kwargs):
        self.kind, self.args, self.kwargs = kind, list(args), dict(kwargs)

    def python_type(self):
        return self.kind

    def call(self, tx, args, kwargs):
        if len(args) != 1 or kwargs:
            raise ObservedException(TypeError(f"{self.kind.__name__} expected 1 argument"))
        (obj,) = args
        if self.kind is operator.methodcaller:
            name = self.args[0].as_python_constant()
            return obj.get_attr(tx, name).call(tx, self.args[1:], self.kwargs)
        if self.kind is operator.itemgetter:
            found = [obj.getitem(tx, key) for key in self.args]
        else:  # attrgetter("a.b") follows the dotted path
            found = [dotted_attr(tx, obj, name.as_python_constant()) for name in self.args]
        return found[0] if len(found) == 1 else TupleVariable(found)

    def reconstruct(self, cg):
        pushers = [lambda v=v: cg.reconstruct(v) for v in self.args]
        cg.call_callable(self.kind, *pushers, kwargs=self.kwargs)

    def __repr__(self):
        return f"OperatorGetterVariable({self.kind.__name__})"


def dotted_attr(tx, obj, path: str):
    for name in path.split("."):
        obj = obj.get_attr(tx, name)
    return obj


def operator_getter(kind):
    def make(tx, *args, **kwargs):
        if not args or (kind is not operator.methodcaller and kwargs):
            raise ObservedException(TypeError(f"{kind.__name__} takes its arguments by position"))
        return OperatorGetterVariable(kind, args, kwargs)

    return make


def set_item(tx, obj, key, value):
    obj.setitem(tx, key, value)
    return ConstantVariable(None)


def operator_function(apply, fn):
    return lambda tx, *operands: apply(tx, fn, *operands)


# `operator.add(a, b)` is `a + b`, and so on: each operator function is the operator it names.
OPERATOR_FUNCTIONS = {
    **{fn: operator_function(binary_op, fn) for fn in BINARY_OPS.values()},
    **{fn: operator_function(compare_op, fn) for fn in COMPARE_OPS.values()},
    **{fn: operator_function(unary_op, fn) for fn in UNARY_OPS.values()},
    operator.getitem: lambda tx, obj, key: obj.getitem(tx, key),
    operator.setitem: set_item,
    operator.contains: lambda tx, obj, item: ConstantVariable(contains(tx, item, obj)),
    operator.truth: lambda tx, value: ConstantVariable(value.truth(tx)),
    operator.is_: lambda tx, a, b: ConstantVariable(is_same(a, b)),
    operator.is_not: lambda tx, a, b: ConstantVariable(not is_same(a, b)),
    operator.itemgetter: operator_getter(operator.itemgetter),
    operator.attrgetter: operator_getter(operator.attrgetter),
    operator.methodcaller: operator_getter(operator.methodcaller),
}
