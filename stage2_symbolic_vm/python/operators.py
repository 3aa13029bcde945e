"""Python's operators on symbolic values: the tables behind BINARY_OP, COMPARE_OP, CONTAINS_OP.

An operator on a tensor is recorded as a node (`operator.add(%0, 1)`), an
operator on constants is folded (`2 * 3` is 6 in the trace). The rest follows
CPython's order of dispatch (Objects/abstract.c's `binary_op1`,
Objects/object.c's `do_richcompare`):

* an instance of a user class answers with its own special method, inlined:
  `a.__add__(b)`, then `b.__radd__(a)` (first, if b's class is a subclass of
  a's); `a.__lt__(b)`, then `b.__gt__(a)`;
* lists and tuples concatenate and repeat, and compare item by item: each
  pair first by identity, then with `==` (CPython's `PyObject_RichCompareBool`),
  so a user's `__eq__` runs, and order is decided by the first pair that
  differs; dicts compare their values so, OrderedDicts their order too;
* sets, and the keys and items of dicts, are combined and compared by CPython
  itself, on the real sets and dicts of their keys (sets.stand_in);
* what no operand answers is the TypeError CPython raises; `==` falls back to
  identity.

Anything the VM does not model stops it with a reason.
"""

import collections
import operator
import types

from ..dynamic_shapes.shapes import SymNodeVariable, has_symbols
from ..errors import ObservedException, Unsupported
from ..variables import UNKNOWN, ConstantVariable, TensorVariable
from . import annotations, container_subclasses
from .containers import FakeIdVariable, contents_of, is_none, key_of
from .dicts import DictVariable, DictViewVariable
from .objects import UserObjectVariable, class_lookup, is_python_class
from .sequences import ListVariable, SequenceVariable, TupleVariable
from .sets import SetVariable, made_by, set_key, stand_in

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
SYMBOLS = {fn: symbol for symbol, fn in {**BINARY_OPS, **COMPARE_OPS}.items()}
SEQUENCE_TYPES = {list: ListVariable, tuple: TupleVariable}
# The special methods of each operator: `operator.add` -> ("__add__", "__radd__").
DUNDERS = {
    fn: (f"__{fn.__name__.strip('_')}__", f"__r{fn.__name__.strip('_')}__")
    for fn in BINARY_OPS.values()
    if fn not in OUT_OF_PLACE
}
COMPARE_DUNDERS = {fn: f"__{fn.__name__}__" for fn in COMPARE_OPS.values()}
# `a < b` asks `b > a` when `a` cannot answer (CPython's _Py_SwappedOp).
SWAPPED = {
    operator.lt: operator.gt, operator.le: operator.ge, operator.eq: operator.eq,
    operator.ne: operator.ne, operator.gt: operator.lt, operator.ge: operator.le,
}  # fmt: skip
SET_OPERATORS = {operator.or_, operator.and_, operator.sub, operator.xor}
SET_OPERATORS |= {operator.ior, operator.iand, operator.isub, operator.ixor}
# The values whose operators the VM knows: what none of them answers is a TypeError.
MODELED = (ConstantVariable, SequenceVariable, DictVariable, SetVariable, DictViewVariable)
MODELED += (UserObjectVariable,)


def sequence_kind(value):
    """list or tuple for a list/tuple Variable (or a constant tuple), None otherwise."""
    if isinstance(value, (SequenceVariable, ConstantVariable)):
        kind = value.python_type()
        return next((k for k in (list, tuple) if issubclass(kind, k)), None)
    return None


def is_set_like(value) -> bool:
    """A set, a frozenset, or a dict's keys or items: what CPython's set operators combine."""
    if isinstance(value, DictViewVariable):
        return value.kind != "values"
    if isinstance(value, ConstantVariable):
        return isinstance(value.value, (set, frozenset))
    return isinstance(value, SetVariable)


def is_items_view(value) -> bool:
    return isinstance(value, DictViewVariable) and value.kind == "items"


def type_name(value) -> str:
    return value.python_type().__name__


# --- binary operators ---------------------------------------------------------------------------


def binary_op(tx, fn, a, b):
    """`a + b` & co: a tensor op, a folded constant, a user's special method, container
    arithmetic, or the TypeError CPython raises."""
    result = user_binary_op(tx, fn, a, b)  # before a tensor's: torch's operators answer
    if result is not NotImplemented:  # NotImplemented for an object they do not know
        return result
    a, b = contents_of(tx, a), contents_of(tx, b)  # a container subclass's: its contents
    if isinstance(a, TensorVariable) or isinstance(b, TensorVariable):
        if isinstance(a, ConstantVariable):  # `acc = 0; acc += x`: an int has no __iadd__,
            fn = OUT_OF_PLACE.get(fn, fn)  # so Python falls back to `acc + x`, a new tensor
        return tx.record_call(fn, [a, b], {})
    if isinstance(a, SymNodeVariable) or isinstance(b, SymNodeVariable):  # `x.size(0) * 2`
        return tx.trace.shapes.arithmetic(tx, OUT_OF_PLACE.get(fn, fn), [a, b])
    if fn in SET_OPERATORS and (is_set_like(a) or is_set_like(b)):
        return set_operator(tx, fn, a, b)
    formats = fn in (operator.mod, operator.imod) and isinstance(a.identity(), (str, bytes))
    if isinstance(a, ConstantVariable) and (
        isinstance(b, ConstantVariable) or (formats and b.is_python_constant())
    ):  # `"%s differ: %s" % (name, text)`: a format of constants, folded
        result = tx.run_python(fn, a.as_python_constant(), b.as_python_constant())
        return tx.wrap_constant_result(result, fn.__name__)
    result = container_op(tx, fn, a, b)
    if result is not NotImplemented:
        return result
    # `"%s" % (x,)` formats whatever it is given: only the other operators are known to fail
    if (
        fn not in (operator.mod, operator.imod)
        and isinstance(a, MODELED)
        and isinstance(b, MODELED)
    ):
        symbol = SYMBOLS[fn]
        message = f"unsupported operand type(s) for {symbol}: '{type_name(a)}' and '{type_name(b)}'"
        raise ObservedException(TypeError(message))
    if fn is operator.or_ and annotations.is_type_like(a) and annotations.is_type_like(b):
        return annotations.fold(tx, fn, a, b)  # `int | None`: a union, made now
    raise Unsupported("unsupported_value", f"operator {fn.__name__} on {a} and {b}")


def user_binary_op(tx, fn, a, b):
    """A user object's own operator, in CPython's order: `a.__iadd__(b)` for `a += b`, then
    `a.__add__(b)` and `b.__radd__(a)` (b's first when its class is a subclass of a's that
    defines it; not at all when both are of one class). NotImplemented if none answers."""
    if not (isinstance(a, UserObjectVariable) or isinstance(b, UserObjectVariable)):
        return NotImplemented
    check_torch_function(a, b)
    base = OUT_OF_PLACE.get(fn, fn)
    if base not in DUNDERS:
        return NotImplemented
    name, reflected = DUNDERS[base]
    if fn is not base:
        result = call_special(tx, a, "__i" + name[2:], b)
        if result is not NotImplemented:
            return result
    calls = [(a, name, b)]
    if type_of(a) is not type_of(b):
        calls.append((b, reflected, a))
        if subclass_overrides(b, a, reflected):
            calls.reverse()
    for obj, method, other in calls:
        result = call_special(tx, obj, method, other)
        if result is not NotImplemented:
            return result
    return NotImplemented


def check_torch_function(a, b):
    """A tensor's operator with an object whose class has `__torch_function__` goes to that
    method (torch's override protocol), which the VM does not model; with any other object,
    torch's operator answers NotImplemented and the object's own is asked."""
    for obj, other in ((a, b), (b, a)):
        if not isinstance(obj, UserObjectVariable) or not isinstance(other, TensorVariable):
            continue
        if class_lookup(obj.cls, "__torch_function__") is not None:
            reason = f"an operator of a tensor and a {obj.cls.__qualname__} (`__torch_function__`)"
            raise Unsupported("unsupported_value", reason)


def type_of(value):
    return value.cls if isinstance(value, UserObjectVariable) else type(value)


def is_strict_subclass(b, a) -> bool:
    """Is b an instance of a proper subclass of a's class? Then CPython asks b first."""
    if not isinstance(b, UserObjectVariable) or not isinstance(a, UserObjectVariable):
        return False
    return b.cls is not a.cls and issubclass(b.cls, a.cls)


def subclass_overrides(b, a, name) -> bool:
    """For arithmetic, b is asked first only if its class also has its own `name`."""
    return is_strict_subclass(b, a) and class_lookup(b.cls, name) != class_lookup(a.cls, name)


def call_special(tx, obj, name, other):
    """`type(obj).name(obj, other)` for a user object whose class has it, written in Python;
    NotImplemented otherwise, or when that is what it returns."""
    if not isinstance(obj, UserObjectVariable):
        return NotImplemented
    found = class_lookup(obj.cls, name)
    if found is None or obj.cls.__mro__[found[0]] is object:
        return NotImplemented
    result = obj.special(tx, name, [other])
    if isinstance(result, ConstantVariable) and result.value is NotImplemented:
        return NotImplemented
    return result


IN_PLACE_SET_METHODS = {
    operator.ior: "update",
    operator.iand: "intersection_update",
    operator.isub: "difference_update",
    operator.ixor: "symmetric_difference_update",
}


def set_operator(tx, fn, a, b):
    """`a | b`, `a &= b` & co where one side is a set or a dict's keys or items: CPython runs
    the operator on the real sets and dicts of their keys, and decides which kinds combine
    (`{1} | (2,)` is a TypeError, `d.keys() | (2,)` is not)."""
    for view in (a, b):  # its stand-in would be a list, which the operators refuse
        if is_items_view(view) and python_value(tx, view) is NOT_CONSTANT:
            reason = "set operators on the items of a dict whose values are not constants"
            raise Unsupported("unsupported_value", reason)
    left, left_vars = stand_in(tx, a)
    right, right_vars = stand_in(tx, b)
    result = tx.run_python(fn, left, right)
    if isinstance(a, SetVariable) and result is a.items:  # `s |= t` changed s itself
        a.key_vars = {k: v for k, v in {**right_vars, **a.key_vars}.items() if k in a.items}
        if a.source is not None:  # `s |= t` is `s.update(t)` to the set's table, & co
            a.record(tx, IN_PLACE_SET_METHODS[fn], [b])
        a.made_again(tx, IN_PLACE_SET_METHODS[fn], [b])
        a.changed(tx)
        return a
    name = DUNDERS[OUT_OF_PLACE.get(fn, fn)][0]  # `fs |= t` of a frozenset: `fs | t`
    made = made_by(tx, a, name, [b]) if isinstance(a, SetVariable) else None
    return SetVariable.of_keys(result, {**right_vars, **left_vars}, made)


def container_op(tx, fn, a, b):
    """Lists, tuples and dicts: `+`, `*`, `|` and their in-place forms; NotImplemented for
    the kinds that do not combine."""
    if isinstance(a, DictVariable) and fn in (operator.or_, operator.ior):
        return merge(tx, fn, a, b)
    if fn is operator.iadd and isinstance(a, ListVariable):  # `xs += ys` extends xs itself,
        a.call_method(tx, "extend", [b], {})  # with any iterable
        return a
    kind = sequence_kind(a)
    if fn in (operator.add, operator.iadd) and kind and kind is sequence_kind(b):
        return SEQUENCE_TYPES[kind](a.unpack(tx) + b.unpack(tx))
    if fn in (operator.mul, operator.imul) and kind and is_index(b):
        items = a.unpack(tx) * b.as_python_constant()
        if fn is operator.imul and isinstance(a, ListVariable):  # `xs *= n`: xs itself
            a.items[:] = items
            a.changed(tx)
            return a
        return SEQUENCE_TYPES[kind](items)
    if fn is operator.mul and sequence_kind(b) and is_index(a):  # `2 * xs`
        return SEQUENCE_TYPES[sequence_kind(b)](b.unpack(tx) * a.as_python_constant())
    return NotImplemented


def is_index(value) -> bool:
    """A repetition count: a constant with `__index__` (an int, a bool)."""
    if not isinstance(value, ConstantVariable):
        return False
    return hasattr(type(value.as_python_constant()), "__index__")


def merge(tx, fn, a, b):
    """`a | b` of two dicts: a new dict of a's items, then b's; its class is the one of the
    two that is an OrderedDict or a defaultdict (their `__or__` and `__ror__` make their own
    class). `a |= b` updates a, with anything `update` takes (pairs too)."""
    if fn is operator.ior:
        a.call_method(tx, "update", [b], {})
        return a
    if not isinstance(b, DictVariable):
        return NotImplemented
    kind = a if a.dict_type is not dict else b
    result = DictVariable({}, dict_type=kind.dict_type, default_factory=kind.default_factory)
    result.update(tx, a, {})
    result.update(tx, b, {})
    return result


def unary_op(tx, fn, a):
    if fn is operator.not_:
        return ConstantVariable(not a.truth(tx))
    if isinstance(a, TensorVariable):
        return tx.record_call(fn, [a], {})
    if isinstance(a, SymNodeVariable):
        return tx.trace.shapes.arithmetic(tx, fn, [a])
    result = tx.run_python(fn, a.as_python_constant())
    return tx.wrap_constant_result(result, fn.__name__)


# --- comparisons --------------------------------------------------------------------------------


def compare_op(tx, fn, a, b):
    """`a < b` & co: a tensor op, a question about sizes, folded constants, or CPython's
    rich comparison (`rich_compare`)."""
    if isinstance(a, UserObjectVariable) or isinstance(b, UserObjectVariable):
        return rich_compare(tx, fn, a, b)  # a tensor's comparison is a slot like any other
    if isinstance(a, FakeIdVariable) or isinstance(b, FakeIdVariable):
        return compare_addresses(fn, a, b)
    if isinstance(a, TensorVariable) or isinstance(b, TensorVariable):
        return tx.record_call(fn, [a, b], {})
    if has_symbols(a) or has_symbols(b):  # `x.size(0) > 3`, `x.shape == y.shape`: decided
        return tx.trace.shapes.arithmetic(tx, fn, [a, b])  # now, and guarded
    values = python_value(tx, a), python_value(tx, b)
    if NOT_CONSTANT not in values:  # constants, and sets and dict keys (of constant keys)
        return ConstantVariable(tx.run_python(fn, *values))
    return rich_compare(tx, fn, a, b)


NOT_CONSTANT = object()


def compare_addresses(fn, a, b):
    """`id(x) == id(y)` where an id was made in the trace: equal when both are ids of one
    object. Another int is never such an id: the trace made the object, alive at an address
    of its own. An order of addresses is the allocator's: refused."""
    ids = [v for v in (a, b) if isinstance(v, FakeIdVariable)]
    ints = [v for v in (a, b) if v.is_python_constant() and type(v.as_python_constant()) is int]
    if fn not in (operator.eq, operator.ne) or len(ids) + len(ints) != 2:
        raise Unsupported("unsupported_value", f"{SYMBOLS[fn]} of an id() made in the trace")
    same = len(ids) == 2 and ids[0].of is ids[1].of
    return ConstantVariable(same == (fn is operator.eq))


def python_value(tx, value):
    """The Python value to fold a comparison on: a constant, a list or tuple of constants,
    the real set of a set's keys, a dict of constant values, a dict view of them (a real
    one: views compare as sets); NOT_CONSTANT for anything else."""
    if isinstance(value, SetVariable):
        return value.items  # keys compare as their items do
    if isinstance(value, DictViewVariable) and value.kind == "keys":
        return value.dict_var.items.keys()
    if isinstance(value, DictVariable) or is_items_view(value):
        d = value if isinstance(value, DictVariable) else value.dict_var
        values = [python_value(tx, d.value(tx, k)) for k in list(d.items)]
        if NOT_CONSTANT in values:
            return NOT_CONSTANT
        real = type(d.items)(zip(d.items, values, strict=True))  # a dict, or an OrderedDict
        return real if isinstance(value, DictVariable) else real.items()
    if isinstance(value, (ConstantVariable, SequenceVariable)) and value.is_python_constant():
        return value.as_python_constant()
    return NOT_CONSTANT


def rich_compare(tx, fn, a, b):
    """CPython's do_richcompare: a's comparison, then b's swapped one (b's first if b's
    class is a subclass of a's); when neither answers, `==` and `!=` compare identities
    and an order is a TypeError."""
    steps = [(a, fn, b), (b, SWAPPED[fn], a)]
    if is_strict_subclass(b, a):
        steps.reverse()
    for left, op, right in steps:
        result = compare_slot(tx, op, left, right)
        if result is not NotImplemented:
            return result
    if fn in (operator.eq, operator.ne):
        return ConstantVariable(identical(tx, a, b) == (fn is operator.eq))
    symbol = SYMBOLS[fn]
    message = f"'{symbol}' not supported between instances of '{type_name(a)}' and '{type_name(b)}'"
    raise ObservedException(TypeError(message))


def compare_slot(tx, fn, a, b):
    """`type(a).__lt__(a, b)` & co for the values the VM models (NotImplemented when a's
    class cannot compare with b)."""
    if isinstance(a, UserObjectVariable):
        return user_compare(tx, fn, a, b)
    if isinstance(a, TensorVariable):  # torch's own comparison
        if isinstance(b, UserObjectVariable):
            check_torch_function(a, b)
            return NotImplemented
        return tx.record_call(fn, [a, b], {})
    if sequence_kind(a):
        return sequence_compare(tx, fn, a, b)
    if isinstance(a, DictVariable):
        return dict_compare(tx, fn, a, b)
    if is_set_like(a):
        return set_compare(tx, fn, a, b)
    if isinstance(a, (ConstantVariable, DictViewVariable)):  # a builtin constant, or a dict's
        return NotImplemented  # values: no comparison with a value of another kind
    identity = a.identity()
    kind = a.python_type() if identity is UNKNOWN else type(identity)
    if kind.__eq__ is object.__eq__:  # a module, a class, a function: object's (identity)
        return NotImplemented
    if identity is not UNKNOWN and kind is types.BuiltinFunctionType:  # `len`, `torch.add`:
        return NotImplemented  # equal when they are one function of one object
    from ..numpy_interop import compare_dtype  # it builds on this file

    if (found := compare_dtype(fn, identity, b)) is not None:  # `a.dtype == np.float64`
        return found
    raise Unsupported("unsupported_value", f"comparison {fn.__name__} of {a} and {b}")


def user_compare(tx, fn, a, b):
    """A user object's comparison: its class's own method, run in the VM; object's defaults
    (`==` is identity, `!=` the opposite of `__eq__`, no order); a dict subclass's items."""
    name = COMPARE_DUNDERS[fn]
    index, _ = class_lookup(a.cls, name)
    owner = a.cls.__mro__[index]
    if owner is object:
        if fn is operator.eq:
            return ConstantVariable(True) if identical(tx, a, b) else NotImplemented
        if fn is operator.ne:  # object.__ne__ asks the class's __eq__ and inverts its answer
            eq = compare_slot(tx, operator.eq, a, b)
            return eq if eq is NotImplemented else ConstantVariable(not eq.truth(tx))
        return NotImplemented
    if is_python_class(owner):
        return call_special(tx, a, name, b)
    if a.items_var(tx) is not None:  # dict.__eq__ of a dict subclass, set.__lt__ of a set's
        return container_subclasses.operate(tx, name, a.items_var(tx), b)
    raise Unsupported("unsupported_value", f"{owner.__qualname__}.{name} of {a}")


def sequence_compare(tx, fn, v, w):
    """CPython's list_richcompare and tuplerichcompare: lists with lists, tuples with tuples;
    `==` of different lengths is False; else the first pair of items that differ (not the
    same object, and not `==`) decides, and with none, the lengths."""
    if sequence_kind(w) is not sequence_kind(v):
        return NotImplemented
    xs, ys = v.unpack(tx), w.unpack(tx)
    if len(xs) != len(ys) and fn in (operator.eq, operator.ne):
        return ConstantVariable(fn is operator.ne)
    for x, y in zip(xs, ys, strict=False):
        if not equal(tx, x, y):
            if fn in (operator.eq, operator.ne):
                return ConstantVariable(fn is operator.ne)
            return compare_op(tx, fn, x, y)
    return ConstantVariable(fn(len(xs), len(ys)))


def dict_compare(tx, fn, a, b):
    """CPython's dict_richcompare: only `==` and `!=`, with a dict: the same keys, and each
    value the same object or `==`. Two OrderedDicts must also have their keys in one order."""
    other = b.items_var(tx) if isinstance(b, UserObjectVariable) else b
    if not isinstance(other, DictVariable) or fn not in (operator.eq, operator.ne):
        return NotImplemented
    same = len(a.items) == len(other.items) and all(
        k in other.items and equal(tx, a.value(tx, k), other.value(tx, k)) for k in list(a.items)
    )
    if same and all(isinstance(d.items, collections.OrderedDict) for d in (a, other)):
        same = list(a.items) == list(other.items)
    return ConstantVariable(same == (fn is operator.eq))


def set_compare(tx, fn, a, b):
    """Sets and the keys and items of dicts compare as sets: subset tests, run by CPython on
    their keys; the items of a dict of other values item by item (dictview_richcompare)."""
    if not is_set_like(b):
        return NotImplemented
    if not isinstance(a, DictViewVariable) and isinstance(b, DictViewVariable):
        return NotImplemented  # a set compares only with sets: the view answers (swapped)
    values = python_value(tx, a), python_value(tx, b)
    if NOT_CONSTANT not in values:
        return ConstantVariable(tx.run_python(fn, *values))
    size_a, size_b = set_size(a), set_size(b)
    if fn in (operator.eq, operator.ne):
        same = size_a == size_b and all_contained_in(tx, a, b)
        return ConstantVariable(same == (fn is operator.eq))
    if fn in (operator.lt, operator.le):
        return ConstantVariable(fn(size_a, size_b) and all_contained_in(tx, a, b))
    return ConstantVariable(fn(size_a, size_b) and all_contained_in(tx, b, a))


def set_size(value) -> int:
    if isinstance(value, DictViewVariable):
        return len(value.dict_var.items)
    return len(value.value if isinstance(value, ConstantVariable) else value.items)


def all_contained_in(tx, a, b) -> bool:
    return all(contains(tx, item, b) for item in a.unpack(tx))


# --- identity, equality, membership ---------------------------------------------------------------


def identical(tx, a, b) -> bool:
    """`a is b`: two objects from outside are one object when they are one Variable (and
    that is guarded: side_effects.same_object); otherwise `is_same`."""
    same = tx.side_effects.same_object(a, b)
    return is_same(a, b) if same is None else same


def equal(tx, a, b) -> bool:
    """CPython's PyObject_RichCompareBool(a, b, Py_EQ): the same object, or `a == b` true.
    What lists, dicts and `in` compare items with."""
    return identical(tx, a, b) or compare_op(tx, operator.eq, a, b).truth(tx)


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


def contains(tx, item, container) -> bool:
    """`item in container` (CPython's PySequence_Contains): a dict or set looks the key up,
    a class answers with `__contains__`, anything else is iterated until an item is `item`
    or `== item` (an iterator is consumed up to there)."""
    if isinstance(container, TensorVariable):
        raise Unsupported("data_dependent_branch", "`in` on a tensor compares its values")
    if isinstance(container, ConstantVariable):
        value = container.as_python_constant()
        if item.is_python_constant():
            return tx.run_python(operator.contains, value, item.as_python_constant())
        if isinstance(value, frozenset):
            return set_key(tx, item) in value
        if not isinstance(value, tuple):
            raise Unsupported("unsupported_value", f"`in` of {item} in {type(value).__name__}")
    if isinstance(container, DictVariable):
        return key_of(item) in container.items
    if isinstance(container, SetVariable):
        return set_key(tx, item) in container.items
    if isinstance(container, DictViewVariable) and container.kind != "values":
        return view_contains(tx, item, container)
    if isinstance(container, UserObjectVariable) and class_lookup(container.cls, "__contains__"):
        return container.special(tx, "__contains__", [item]).truth(tx)
    iterator = container.iterate(tx)
    while (candidate := iterator.next_item(tx)) is not None:
        if equal(tx, candidate, item):
            return True
    return False


def view_contains(tx, item, view) -> bool:
    """`k in d.keys()` looks the key up; `(k, v) in d.items()` also compares the value."""
    d = view.dict_var
    if view.kind == "keys":
        return key_of(item) in d.items
    pair = item.unpack(tx) if sequence_kind(item) is tuple else ()
    if len(pair) != 2:
        return False
    key, value = pair
    k = key_of(key)
    return k in d.items and equal(tx, d.value(tx, k), value)


# --- sorting ------------------------------------------------------------------------------------


class SortKey:
    """A key as Python's sort sees it: `a < b` runs the VM's `<` (a user's `__lt__` inlined),
    so CPython's own sort makes exactly the comparisons eager makes, in its order."""

    def __init__(self, tx, var):
        self.tx, self.var = tx, var

    def __lt__(self, other):
        return compare_op(self.tx, operator.lt, self.var, other.var).truth(self.tx)


def sort_order(tx, values, key=None, reverse=None) -> list[int]:
    """The order `sorted(values, key=key, reverse=reverse)` puts the values in: the keys are
    computed first, then compared only where the sort compares them (`sorted(d.items())`
    compares pairs' first items, and never the tensors after them when those differ)."""
    keys = values if key is None or is_none(key) else [key.call(tx, [v], {}) for v in values]
    backwards = reverse is not None and tx.run_python(operator.index, reverse.as_python_constant())
    proxies = [SortKey(tx, k) for k in keys]
    return sorted(range(len(values)), key=proxies.__getitem__, reverse=bool(backwards))
