"""Python's operators on symbolic values: the tables behind BINARY_OP, COMPARE_OP, UNARY_*.

An operator on a tensor is recorded as a node (`operator.add(%0, 1)`), an
operator on constants is folded (`2 * 3` is 6 in the trace), and lists and
tuples concatenate and repeat. Anything else stops the VM with a reason.
"""

import operator

from .errors import Unsupported
from .variables import (
    ConstantVariable,
    ListVariable,
    ObjectVariable,
    SequenceVariable,
    TensorVariable,
    TupleVariable,
)

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
COMPARE_OPS = {
    "<": operator.lt, "<=": operator.le, "==": operator.eq,
    "!=": operator.ne, ">": operator.gt, ">=": operator.ge,
}  # fmt: skip
UNARY_OPS = {
    "UNARY_NEGATIVE": operator.neg, "UNARY_POSITIVE": operator.pos,
    "UNARY_INVERT": operator.invert, "UNARY_NOT": operator.not_,
}  # fmt: skip
SEQUENCE_TYPES = {list: ListVariable, tuple: TupleVariable}


def sequence_kind(value):
    """list or tuple for a list/tuple Variable (or a constant tuple), None otherwise."""
    if isinstance(value, (SequenceVariable, ConstantVariable)):
        kind = value.python_type()
        return next((k for k in (list, tuple) if issubclass(kind, k)), None)
    return None


def identity(value):
    """The object behind a module, torch/builtin function or opaque object; None for others."""
    if hasattr(value, "module"):
        return value.module
    return value.as_python_object() if hasattr(value, "as_python_object") else None


def binary_op(tx, fn, a, b):
    """`a + b` & co: a tensor op, a folded constant, or list/tuple arithmetic."""
    if isinstance(a, TensorVariable) or isinstance(b, TensorVariable):
        return tx.record_call(fn, [a, b], {})
    if isinstance(a, ConstantVariable) and isinstance(b, ConstantVariable):
        result = tx.run_python(fn, a.as_python_constant(), b.as_python_constant())
        return tx.wrap_constant_result(result, fn.__name__)
    if fn is operator.iadd and isinstance(a, ListVariable):  # `xs += ys` extends xs itself
        a.call_method(tx, "extend", [b], {})
        return a
    kind = sequence_kind(a)
    if fn in (operator.add, operator.iadd) and kind and kind is sequence_kind(b):
        return SEQUENCE_TYPES[kind](a.unpack(tx) + b.unpack(tx))
    if fn in (operator.mul, operator.imul) and kind and b.is_python_constant():
        return SEQUENCE_TYPES[kind](a.unpack(tx) * b.as_python_constant())
    raise Unsupported("unsupported_value", f"operator {fn.__name__} on {a} and {b}")


def unary_op(tx, fn, a):
    if fn is operator.not_:
        return ConstantVariable(not a.truth(tx))
    if isinstance(a, TensorVariable):
        return tx.record_call(fn, [a], {})
    result = tx.run_python(fn, a.as_python_constant())
    return tx.wrap_constant_result(result, fn.__name__)


def compare_op(tx, fn, a, b):
    if isinstance(a, TensorVariable) or isinstance(b, TensorVariable):
        return tx.record_call(fn, [a, b], {})
    if a.is_python_constant() and b.is_python_constant():
        return ConstantVariable(tx.run_python(fn, a.as_python_constant(), b.as_python_constant()))
    # modules, functions: `==` is `is` (an unknown object may define its own __eq__)
    plain = not any(isinstance(v, ObjectVariable) or v.is_python_constant() for v in (a, b))
    if fn in (operator.eq, operator.ne) and plain:
        return ConstantVariable(is_same(a, b) == (fn is operator.eq))
    raise Unsupported("unsupported_value", f"comparison {fn.__name__} of {a} and {b}")


def is_same(a, b) -> bool:
    """`a is b`. Only a ConstantVariable holds a constant such as None."""
    if a is b:
        return True
    if isinstance(a, ConstantVariable) and isinstance(b, ConstantVariable):
        return a.as_python_constant() is b.as_python_constant()
    if isinstance(a, ConstantVariable) or isinstance(b, ConstantVariable):
        return False
    if isinstance(a, TensorVariable) and isinstance(b, TensorVariable):
        if a.source is not None and b.source is not None:
            raise Unsupported("unsupported_value", "`is` between two input tensors")
        return False
    objects = [identity(v) for v in (a, b)]
    if None not in objects:
        return objects[0] is objects[1]
    raise Unsupported("unsupported_value", f"`is` between {a} and {b}")
