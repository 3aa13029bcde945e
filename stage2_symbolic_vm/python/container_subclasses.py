"""Instances of Python classes derived from a builtin container: a dict kind, list, set,
frozenset, tuple (torch/_dynamo/variables/user_defined.py keeps such a `_base_vt`).

`class Registry(dict)`, `class Words(set)`, `class Path(list)`: such an object is an
instance of a user class (its attributes, the methods its class writes in Python) and a
container. The VM keeps the two halves apart: the UserObjectVariable answers attributes
and the class's own methods, and a Variable of the builtin, its *contents* (a DictVariable,
ListVariable or SetVariable), answers the builtin methods the class inherits (`set.add`,
`list.append`, `dict.keys`, `set.__and__`), which objects.py's BuiltinSlotVariable reaches.

An instance made in the trace starts empty: `frozenset.__new__` and `tuple.__new__` fill
an immutable one's from its argument, `__init__` (the class's own, or the builtin's) the
others'. After the graph, `rebuild` makes it as pickle would: the builtin's `__new__`, the
attributes, the contents. (A tuple subclass's instance from outside is taken for a
constant, as a tuple is, which no guard checks: a break that says so.)

An instance from outside has its contents read past the class's own methods, as
`set.copy(obj)` (CPython's set_copy and list_copy make a plain set or list, whatever the
subclass overrides) and guarded there as a plain container. Its changes are written back
into the object itself through the builtin's methods (side_effects.py), so an override
the trace ran already is not run a second time.
"""

import operator
import types
from dataclasses import dataclass

from ..errors import ObservedException, Unsupported
from ..side_effects import DICT_BASES
from ..sources import DictItemSource, Source, item_of
from ..variables import ConstantVariable, LazyVariable
from .containers import contents_of
from .dicts import DictVariable
from .sequences import ListVariable, TupleVariable
from .sets import SetVariable, replay_set, replayed, wrap_set

BASES = (*DICT_BASES, list, set, frozenset, tuple)
IMMUTABLE = (frozenset, tuple)  # their contents are made by `__new__`, and never change

# The builtins' own `__new__`: a class that inherits one of them is made in the trace.
PLAIN_NEW = (object.__new__, *(base.__new__ for base in BASES))


@dataclass(frozen=True)
class ContentsSource(Source):
    """`list.copy(base)`, `set.copy(base)`: the contents of an instance of a subclass of list,
    set or frozenset, read past the subclass's own methods: a plain list or set (CPython's
    list_copy and set_copy make the builtin), guarded as one."""

    base: Source
    kind: type  # list, set or frozenset

    def name(self):
        return f"B.{self.kind.__name__}.copy({self.base.name()})"

    def describe(self):
        return f"the {self.kind.__name__} items of {self.base.describe()}"


def container_base(cls):
    """The builtin container `cls` derives from (the first in its MRO), or None."""
    return next((base for base in cls.__mro__ if base in BASES), None)


def empty_contents(base):
    if base in DICT_BASES:
        return DictVariable({}, dict_type=base)
    if base is tuple:
        return TupleVariable([])
    return ListVariable([]) if base is list else SetVariable([], set_type=base)


def new_immutable(tx, base, args, kwargs):
    """`frozenset.__new__(cls, iterable)` or `tuple.__new__(cls, iterable)`: the contents
    are fixed when it is made (a subclass may be given keywords, which its `__init__`
    takes; the builtin ignores them)."""
    if len(args) > 1:
        kind = base.__name__
        raise ObservedException(TypeError(f"{kind} expected at most 1 argument, got {len(args)}"))
    if base is tuple:
        return TupleVariable(args[0].unpack(tx) if args else [])
    from .builtins_table import call_set  # it builds on this file

    return call_set(frozenset)(tx, *args)  # frozenset(iterable), with its recipe (sets.py)


def initialise(tx, contents, args, kwargs):
    """`dict.__init__`, `list.__init__` or `set.__init__` of an instance: the contents are
    replaced by the argument's items (a dict's updated, as CPython's dict_init does)."""
    if isinstance(contents, DictVariable):
        contents.update(tx, args[0] if args else None, kwargs)
    elif kwargs:
        kind = contents.python_type().__name__
        raise ObservedException(TypeError(f"{kind}() takes no keyword arguments"))
    else:
        contents.call_method(tx, "__init__", args, {})


def outside_contents(tx, obj):
    """The contents of an instance from outside, read past its class's methods and guarded;
    the Variable's source is the object itself, where its changes are written back."""
    value, source, base = obj.value, obj.source, container_base(obj.cls)
    if base in DICT_BASES:
        items = {k: LazyVariable(v, DictItemSource(source, k)) for k, v in dict.items(value)}
        tx.trace.assume("dict_keys", source)
        return DictVariable(items, source, dict_type=base)
    if base is tuple:  # one of constants is a constant (variables.is_constant_value)
        why = f"an instance of {obj.cls.__qualname__}, a tuple's subclass, from outside"
        raise Unsupported("unsupported_value", why)
    copy = ContentsSource(source, base)
    if base is list:
        tx.trace.assume("length", copy)
        items = list.copy(value)
        contents = ListVariable(
            [tx.read(LazyVariable(v, item_of(copy, i))) for i, v in enumerate(items)]
        )
    else:
        contents = wrap_set(tx, base.copy(value), copy)
    contents.source = source
    return contents


def rebuild(cls, attrs: dict, contents, recipe=None):
    """An instance made in the trace, made again by the new bytecode: the builtin's `__new__`
    (not the class's: the trace ran that), the attributes, then the contents through the
    builtin's methods. `__init__` does not run again, as with pickle. A set's or frozenset's
    contents come by their `recipe` (sets.py), so that the instance iterates in eager's
    order: the calls that made them are made again on the instance itself."""
    base = container_base(cls)
    new = (base or object).__new__
    if recipe is not None and base is frozenset:  # frozenset.__new__(cls, iterable), again
        obj = new(cls, *map(replayed, recipe[0][2]))
    else:
        obj = new(cls, contents) if base in IMMUTABLE else new(cls)
    state = getattr(obj, "__dict__", None)
    for name, value in attrs.items():
        if state is not None and not isinstance(getattr(cls, name, None), SLOT):
            state[name] = value
        else:  # a slot of `__slots__` (the object may have no __dict__): its descriptor stores it
            object.__setattr__(obj, name, value)
    if base in DICT_BASES:
        for key, value in contents.items():
            base.__setitem__(obj, key, value)
    elif base is list:
        list.extend(obj, contents)
    elif base is set and recipe is not None:
        replay_set(recipe, into=obj)
    elif base is set:
        set.update(obj, contents)
    return obj


SLOT = types.MemberDescriptorType  # what `__slots__ = ("a",)` puts in the class for `a`

# A builtin's operator slots, each the operator it is (reflected: the instance is its right
# operand) and the comparisons.
ARITHMETIC = {"and": operator.and_, "or": operator.or_, "sub": operator.sub}
ARITHMETIC |= {"xor": operator.xor, "add": operator.add, "mul": operator.mul}
OPERATOR_SLOTS = {f"__{name}__": (fn, False) for name, fn in ARITHMETIC.items()}
OPERATOR_SLOTS |= {f"__r{name}__": (fn, True) for name, fn in ARITHMETIC.items()}
OPERATOR_SLOTS |= {f"__i{name}__": (getattr(operator, f"i{name}"), False) for name in ARITHMETIC}
COMPARISONS = {
    f"__{fn.__name__}__": fn
    for fn in (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge)
}


def is_operator(name: str) -> bool:
    return name in OPERATOR_SLOTS or name in COMPARISONS


def call_builtin(tx, name, contents, args, kwargs):
    """The builtin's method `name` of an instance, run on its contents."""
    if name == "__init__":
        initialise(tx, contents, args, kwargs)
        return ConstantVariable(None)
    if name == "__iter__":
        return contents.iterate(tx)
    if is_operator(name):
        result = operate(tx, name, contents, *args)
        return ConstantVariable(NotImplemented) if result is NotImplemented else result
    return contents.call_method(tx, name, args, kwargs)


def operate(tx, name, contents, other):
    """A builtin's operator slot of an instance (`set.__and__`, `list.__add__`, `dict.__eq__`):
    the operator on its contents, and on the other operand's if that is such an instance
    too (CPython's set and list slots read any set or list, subclass or not). The result is
    the builtin's: `Words("ab") & {"a"}` is a plain set."""
    from . import operators  # operators.py builds on this file

    other = contents_of(tx, other)  # a subclass's instance: its contents
    if name in COMPARISONS:  # NotImplemented where the builtin cannot compare with `other`
        return operators.compare_slot(tx, COMPARISONS[name], contents, other)
    fn, reflected = OPERATOR_SLOTS[name]
    return operators.binary_op(tx, fn, *((other, contents) if reflected else (contents, other)))
