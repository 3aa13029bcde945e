"""Python's operators on symbolic values: the tables behind BINARY_OP, COMPARE_OP, UNARY_*.

An operator on a tensor is recorded as a node (`operator.add(%0, 1)`), an
operator on constants is folded (`2 * 3` is 6 in the trace), lists and tuples
concatenate and repeat, sets and dicts combine, and an instance of a user
class answers with its own special method (`__eq__`, `__add__` ...), inlined.
Anything else stops the VM with a reason.
"""

import operator

from .containers import (
    DictVariable,
    DictViewVariable,
    ListVariable,
    SequenceVariable,
    SetVariable,
    TupleVariable,
    key_of,
)
from .errors import Unsupported
from .objects import UserObjectVariable, class_lookup
from .shapes import SymNodeVariable, has_symbols
from .variables import UNKNOWN, ConstantVariable, TensorVariable

# Operator opcodes as data (byterun and Dynamo do the same): the argrepr names the operator.
BINARY_OPS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "@": operator.matmul,
    "&": operator.and_, "|": operator.or_, "^": operator.xor,
    "<<": operator.lshift, ">>": operator.rshift,
    "+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
    "//=": operator.ifloordiv, "%=": operator.imod, "**=": operator.ipow, "@=": operator.imatmul,
    "&=": operator.iand, "|=": operator.ior, "^=": operator.ixor,
    "<<=": operator.ilshift, ">>=": operator.irshift,
}  # fmt: skip
# `a += b` where `a` has no __iadd__ is `a = a + b` (the data model's fallback).
OUT_OF_PLACE = {BINARY_OPS[op + "="]: BINARY_OPS[op] for op in BINARY_OPS if op + "=" in BINARY_OPS}
COMPARE_OPS = {
    "<": operator.lt, "<=": operator.le, "==": operator.eq,
    "!=": operator.ne, ">": operator.gt, ">=": operator.ge,
}  # fmt: skip
UNARY_OPS = {
    "UNARY_NEGATIVE": operator.neg, "UNARY_POSITIVE": operator.pos,
    "UNARY_INVERT": operator.invert, "UNARY_NOT": operator.not_,
}  # fmt: skip
SEQUENCE_TYPES = {list: ListVariable, tuple: TupleVariable}
# The special method each operator looks for on a user object (and its reflected twin).
DUNDERS = {
    operator.add: ("__add__", "__radd__"), operator.sub: ("__sub__", "__rsub__"),
    operator.mul: ("__mul__", "__rmul__"), operator.truediv: ("__truediv__", "__rtruediv__"),
    operator.matmul: ("__matmul__", "__rmatmul__"), operator.eq: ("__eq__", "__eq__"),
    operator.ne: ("__ne__", "__ne__"), operator.lt: ("__lt__", "__gt__"),
    operator.gt: ("__gt__", "__lt__"), operator.le: ("__le__", "__ge__"),
    operator.ge: ("__ge__", "__le__"), operator.or_: ("__or__", "__ror__"),
    operator.and_: ("__and__", "__rand__"),
}  # fmt: skip
# Set operators, and the in-place ones that change the set on their left.
SET_OPS = {
    operator.or_: "union", operator.and_: "intersection", operator.sub: "difference",
    operator.xor: "symmetric_difference", operator.ior: "update",
    operator.iand: "intersection_update", operator.isub: "difference_update",
    operator.ixor: "symmetric_difference_update",
}  # fmt: skip


def sequence_kind(value):
    """list or tuple for a list/tuple Variable (or a constant tuple), None otherwise."""
    if isinstance(value, (SequenceVariable, ConstantVariable)):
        kind = value.python_type()
        return next((k for k in (list, tuple) if issubclass(kind, k)), None)
    return None


def binary_op(tx, fn, a, b):
    """`a + b` & co: a tensor op, a folded constant, container arithmetic, or a dunder."""
    if isinstance(a, TensorVariable) or isinstance(b, TensorVariable):
        if isinstance(a, ConstantVariable):  # `acc = 0; acc += x`: an int has no __iadd__,
            fn = OUT_OF_PLACE.get(fn, fn)  # so Python falls back to `acc + x`, a new tensor
        return tx.record_call(fn, [a, b], {})
    if isinstance(a, SymNodeVariable) or isinstance(b, SymNodeVariable):  # `x.size(0) * 2`
        return tx.trace.shapes.arithmetic(tx, OUT_OF_PLACE.get(fn, fn), [a, b])
    if isinstance(a, SetVariable) and fn in SET_OPS:
        result = a.call_method(tx, SET_OPS[fn], [b], {})
        return a if fn.__name__.startswith("i") else result
    if isinstance(a, DictVariable) and fn in (operator.or_, operator.ior):  # `d | e`, `d |= e`
        target = a if fn is operator.ior else DictVariable(a.items, dict_type=a.dict_type)
        target.call_method(tx, "update", [b], {})
        return target
    if fn is operator.iadd and isinstance(a, ListVariable):  # `xs += ys` extends xs itself
        a.call_method(tx, "extend", [b], {})
        return a
    if constant(a) and constant(b):  # numbers, strings, and views of dicts of them
        result = tx.run_python(fn, a.as_python_constant(), b.as_python_constant())
        return tx.wrap_constant_result(result, fn.__name__)
    kind = sequence_kind(a)
    if fn in (operator.add, operator.iadd) and kind and kind is sequence_kind(b):
        return SEQUENCE_TYPES[kind](a.unpack(tx) + b.unpack(tx))
    if fn in (operator.mul, operator.imul) and kind and b.is_python_constant():
        return SEQUENCE_TYPES[kind](a.unpack(tx) * b.as_python_constant())
    if (result := dunder(tx, fn, a, b)) is not None:
        return result
    raise Unsupported("unsupported_value", f"operator {fn.__name__} on {a} and {b}")


def constant(value) -> bool:
    """A value the operator can compute now: a constant, or a set or view of constants (a list
    or dict is not: `xs + ys` must build a new list of the same Variables)."""
    if isinstance(value, (ConstantVariable, SetVariable, DictViewVariable)):
        return value.is_python_constant()
    return False


def dunder(tx, fn, a, b):
    """A user object's own operator (`a.__eq__(b)`, then `b.__req__(a)`), or None."""
    names = DUNDERS.get(fn)
    if names is None:
        return None
    for obj, other, name in ((a, b, names[0]), (b, a, names[1])):
        if isinstance(obj, UserObjectVariable):
            found = class_lookup(obj.cls, name)
            if found is not None and found[0] < len(obj.cls.__mro__) - 1:  # not object's own
                result = obj.special(tx, name, [other])
                if not (
                    result.is_python_constant() and result.as_python_constant() is NotImplemented
                ):
                    return result
    return None


def unary_op(tx, fn, a):
    if fn is operator.not_:
        return ConstantVariable(not a.truth(tx))
    if isinstance(a, TensorVariable):
        return tx.record_call(fn, [a], {})
    if isinstance(a, SymNodeVariable):
        return tx.trace.shapes.arithmetic(tx, fn, [a])
    result = tx.run_python(fn, a.as_python_constant())
    return tx.wrap_constant_result(result, fn.__name__)


def compare_op(tx, fn, a, b):
    if isinstance(a, TensorVariable) or isinstance(b, TensorVariable):
        if isinstance(a, ConstantVariable):  # `acc = 0; acc += x`: an int has no __iadd__,
            fn = OUT_OF_PLACE.get(fn, fn)  # so Python falls back to `acc + x`, a new tensor
        return tx.record_call(fn, [a, b], {})
    if has_symbols(a) or has_symbols(b):  # `x.size(0) > 3`, `x.shape == y.shape`: decided
        return tx.trace.shapes.arithmetic(tx, fn, [a, b])  # now, and guarded
    for view in (a, b):
        if isinstance(view, DictViewVariable):
            view.unpack(tx)  # read the values of a dict from outside: now they are constants
    if a.is_python_constant() and b.is_python_constant():
        return ConstantVariable(tx.run_python(fn, a.as_python_constant(), b.as_python_constant()))
    if (result := dunder(tx, fn, a, b)) is not None:
        return result
    if fn in (operator.eq, operator.ne):  # no __eq__ of their own: `==` is `is`
        same = is_same(a, b)
        return ConstantVariable(same == (fn is operator.eq))
    raise Unsupported("unsupported_value", f"comparison {fn.__name__} of {a} and {b}")


def is_same(a, b) -> bool:
    """`a is b`. Only a ConstantVariable holds a constant such as None."""
    if a is b:
        return True
    if isinstance(a, TensorVariable) and isinstance(b, TensorVariable):
        if a.source is not None and b.source is not None:
            raise Unsupported("unsupported_value", "`is` between two input tensors")
        return False
    if isinstance(a, TensorVariable) or isinstance(b, TensorVariable):
        return False
    if isinstance(a, ConstantVariable) != isinstance(b, ConstantVariable):
        return False  # a constant is never the same object as a list, a module, a function ...
    objects = [v.identity() for v in (a, b)]
    if UNKNOWN not in objects:
        return objects[0] is objects[1]
    # At least one was made in the trace: each object made here has one Variable, so two
    # different Variables are two different objects.
    return False


def contains(tx, item, container):
    """`item in container`."""
    if isinstance(container, TensorVariable):
        raise Unsupported("data_dependent_branch", "`in` on a tensor compares its values")
    if isinstance(container, ConstantVariable):
        found = tx.run_python(
            operator.contains, container.as_python_constant(), item.as_python_constant()
        )
        return found
    if isinstance(container, (DictVariable, SetVariable)):
        return key_of(item) in container.items
    if isinstance(container, UserObjectVariable):
        return container.special(tx, "__contains__", [item]).truth(tx)
    for candidate in container.unpack(tx):
        if candidate.is_python_constant() and item.is_python_constant():
            if candidate.as_python_constant() == item.as_python_constant():
                return True
        elif is_same(candidate, item):
            return True
    return False
