"""Dicts of Variables and their views (torch/_dynamo/variables/dicts.py).

A dict keeps its items in a real dict (a real OrderedDict for an OrderedDict) from each key
(`key_of`, containers.py) to its value's Variable, so its order, `popitem` and
`move_to_end` are CPython's. A dict read from outside reads each value only when the code
uses it. `d.keys()`, `d.values()` and `d.items()` are live views of it.
"""

import collections
import math
import types

from ..errors import ObservedException, Unsupported
from ..sources import attr_of, item_of
from ..variables import (
    UNKNOWN,
    ConstantVariable,
    LazyVariable,
    Variable,
    compared_by_identity,
    is_constant_value,
)
from .containers import ContainerVariable, bound_method, is_none, key_of, where
from .sequences import SequenceVariable, TupleVariable

NOT_CONSTANT = object()


def constant_value(var):
    """The value of `var` if it is a constant, a dict of constants (`constant_copy`), or a list
    or tuple of them, nested (a config's text); `NOT_CONSTANT` otherwise."""
    if var.is_python_constant():
        return var.as_python_constant()
    if isinstance(var, DictVariable):
        copy = var.constant_copy()
        return NOT_CONSTANT if copy is None else copy
    if isinstance(var, SequenceVariable) and var.python_type() in (list, tuple):
        items = [constant_value(item) for item in var.items]
        return NOT_CONSTANT if NOT_CONSTANT in items else var.python_type()(items)
    return NOT_CONSTANT


class DictVariable(ContainerVariable):
    """A dict (or an OrderedDict, or a defaultdict) of Variable values.

    `items` maps each key (`key_of`) to its value, in a real dict, or a real OrderedDict for
    an OrderedDict (its order and `move_to_end` are then CPython's); `key_vars` holds the
    Variables of the keys that are not constants. `dict_type` is the class; a defaultdict
    also keeps its `default_factory` Variable.
    """

    def __init__(self, items: dict, source=None, dict_type=dict, default_factory=None):
        ordered = issubclass(dict_type, collections.OrderedDict)
        self.items = (collections.OrderedDict if ordered else dict)(items)
        self.source, self.dict_type, self.default_factory = source, dict_type, default_factory
        self.key_vars = {}  # key -> its Variable, for the keys that are not constants

    def put(self, key: Variable, value: Variable):
        k = key_of(key)
        if not isinstance(key, ConstantVariable) and k not in self.items:  # a new key (an old
            self.key_vars[k] = key  # one keeps its object, as in CPython)
        self.items[k] = value

    def key_var(self, k) -> Variable:
        return self.key_vars.get(k) or ConstantVariable(k)

    def python_type(self):
        return self.dict_type

    def constant_copy(self):
        """A real dict of this class and items when every key and value is a constant, for
        `str(d)` and `repr(d)` (a defaultdict's shows its factory); None otherwise. A dict
        stays no constant of the trace itself: it can change, and its identity matters."""
        items = {k: constant_value(v) for k, v in self.items.items()}
        if self.key_vars or any(v is NOT_CONSTANT for v in items.values()):
            return None
        if self.dict_type in (dict, collections.OrderedDict):
            return self.dict_type(items)
        if self.dict_type is not collections.defaultdict:
            return None  # a subclass may have a repr of its own
        factory = self.default_factory or ConstantVariable(None)
        made = factory.as_python_constant() if factory.is_python_constant() else factory.identity()
        return None if made is UNKNOWN else collections.defaultdict(made, items)  # by name

    def get_attr(self, tx, name):
        if name == "default_factory" and self.default_factory is not None:
            return self.default_factory
        return bound_method(self, name)

    def unpack(self, tx):
        return [self.key_var(k) for k in self.items]

    def iterate(self, tx):
        from .iterators import DictIteratorVariable  # iterators.py builds on this file

        return DictIteratorVariable(self, "keys")

    def value(self, tx, k):
        """The value of key `k`; one read from outside is wrapped (and assumed about) now."""
        self.items[k] = tx.read(self.items[k])
        return self.items[k]

    def getitem(self, tx, key):
        k = key_of(key)
        if k not in self.items:
            return self.missing(tx, key, k)
        return self.value(tx, k)

    def missing(self, tx, key, k):
        """`d[k]` of a missing key: a defaultdict's `__missing__` makes it, a dict raises."""
        factory = self.default_factory
        if factory is None or is_none(factory):
            raise ObservedException(KeyError(k))
        value = factory.call(tx, [], {})
        self.put(key, value)
        self.changed(tx)
        return value

    def setitem(self, tx, key, value):
        self.put(key, value)
        self.changed(tx)

    def update(self, tx, other, kwargs):
        """`d.update(other, **kwargs)` (other None: not given), as CPython's dict_update_arg:
        a dict's items, a mapping's `keys()` and items, or an iterable of pairs, one by one."""
        from .objects import UserObjectVariable  # objects.py builds on this file

        if isinstance(other, DictVariable):
            for k in list(other.items):
                self.put(other.key_var(k), other.items[k])
        elif isinstance(other, UserObjectVariable) and hasattr(other.cls, "keys"):
            for key in other.get_attr(tx, "keys").call(tx, [], {}).unpack(tx):
                self.put(key, other.getitem(tx, key))
        elif other is not None:
            pairs, number = other.iterate(tx), 0
            while (pair := pairs.next_item(tx)) is not None:
                self.put(*update_pair(tx, number, pair))
                number += 1
        for name, value in kwargs.items():
            self.put(ConstantVariable(name), value)

    def methods(self):
        if isinstance(self.items, collections.OrderedDict):
            return ORDERED_DICT_METHODS
        return DICT_METHODS

    MUTATING = frozenset({"__setitem__", "__delitem__", "pop", "popitem", "setdefault"})
    MUTATING |= {"update", "clear", "move_to_end"}

    def copy(self):
        """A new dict of the same items (an OrderedDict's copy is one, a defaultdict's keeps
        its factory)."""
        copy = DictVariable(self.items, dict_type=self.dict_type)
        copy.default_factory, copy.key_vars = self.default_factory, dict(self.key_vars)
        return copy

    def build(self, cg):
        def items():
            cg.build_map(self.items, self.key_vars)

        if self.dict_type is dict:
            items()
        elif self.dict_type is collections.defaultdict:  # defaultdict(factory, {...})
            factory = self.default_factory
            cg.call_callable(self.dict_type, lambda: cg.reconstruct(factory), items)
        else:  # OrderedDict({...}) keeps the order of the items
            cg.call_callable(self.dict_type, items)
        cg.keep(self)

    def __repr__(self):
        return f"DictVariable({dict(self.items)!r})"


def realized(tx, value):
    """`value` with every item of its dicts read (a dict from outside wraps its values only
    when they are used: here they are)."""
    if isinstance(value, DictVariable):
        for key in list(value.items):
            realized(tx, value.value(tx, key))
    elif isinstance(value, SequenceVariable):
        for item in value.items:
            realized(tx, item)
    return value


def new_dict(tx, dict_type, args: list, kwargs: dict, default_factory=None) -> DictVariable:
    """`dict(...)`, `OrderedDict(...)`: at most one positional argument, then keywords."""
    if len(args) > 1:
        message = f"{dict_type.__name__} expected at most 1 argument, got {len(args)}"
        raise ObservedException(TypeError(message))
    result = DictVariable({}, dict_type=dict_type, default_factory=default_factory)
    result.update(tx, args[0] if args else None, kwargs)
    return result


def update_pair(tx, number: int, pair: Variable) -> list:
    """The key and value of one item of `d.update(pairs)` (CPython's PyDict_MergeFromSeq2)."""
    try:
        items = pair.unpack(tx)
    except ObservedException as error:
        if not isinstance(error.exception, TypeError):
            raise
        message = f"cannot convert dictionary update sequence element #{number} to a sequence"
        raise ObservedException(TypeError(message)) from None
    if len(items) != 2:
        message = f"dictionary update sequence element #{number} has length {len(items)}; "
        raise ObservedException(ValueError(message + "2 is required"))
    return items


def _get(d, tx, key, default=None, /):
    k = key_of(key)
    if k in d.items:
        return d.value(tx, k)
    return default if default is not None else ConstantVariable(None)


def _pop_key(d, tx, key, default=None, /):
    k = key_of(key)
    if k not in d.items:
        if default is not None:
            return default
        raise ObservedException(KeyError(k))
    value = d.value(tx, k)
    del d.items[k]
    return value


def _popitem(d, tx, last=None):
    """`d.popitem()`, and OrderedDict's `popitem(last=True)`: the real dict's own popitem."""
    ends = () if last is None else (last.truth(tx),)
    k, value = tx.run_python(d.items.popitem, *ends)
    return TupleVariable([d.key_vars.get(k) or ConstantVariable(k), tx.read(value)])


def _setdefault(d, tx, key, default=None, /):
    k = key_of(key)
    if k not in d.items:
        d.put(key, default if default is not None else ConstantVariable(None))
    return d.value(tx, k)


def _delitem(d, tx, key, /):
    _pop_key(d, tx, key)


def _move_to_end(d, tx, key, last=None):
    tx.run_python(d.items.move_to_end, key_of(key), last is None or last.truth(tx))


def _dict_reversed(d, tx, /):
    from .iterators import DictIteratorVariable  # iterators.py builds on this file

    return DictIteratorVariable(d, "keys", backwards=True)


# One entry per dict method (dict, OrderedDict and defaultdict share them).
DICT_METHODS = {
    "keys": lambda d, tx, /: DictViewVariable(d, "keys"),
    "values": lambda d, tx, /: DictViewVariable(d, "values"),
    "items": lambda d, tx, /: DictViewVariable(d, "items"),
    "get": _get,
    "__getitem__": lambda d, tx, key, /: d.getitem(tx, key),
    "__setitem__": lambda d, tx, key, value, /: d.put(key, value),
    "__contains__": lambda d, tx, key, /: ConstantVariable(key_of(key) in d.items),
    "__delitem__": _delitem,
    "__len__": lambda d, tx, /: ConstantVariable(len(d.items)),
    "__iter__": lambda d, tx, /: d.iterate(tx),
    "__reversed__": _dict_reversed,
    "pop": _pop_key,
    "popitem": lambda d, tx, /: _popitem(d, tx),
    "setdefault": _setdefault,
    "update": lambda d, tx, other=None, /, **kwargs: d.update(tx, other, kwargs),
    "clear": lambda d, tx, /: d.items.clear(),
    "copy": lambda d, tx, /: d.copy(),
}
# OrderedDict's own: popitem from either end, move_to_end.
ORDERED_DICT_METHODS = {**DICT_METHODS, "popitem": _popitem, "move_to_end": _move_to_end}


class DictViewVariable(ContainerVariable):
    """`d.keys()`, `d.values()`, `d.items()`: a live view, so later changes of `d` show."""

    def __init__(self, dict_var: DictVariable, kind: str):
        self.dict_var, self.kind = dict_var, kind

    def python_type(self):
        return type(getattr({}, self.kind)())

    def is_python_constant(self):
        items = self.dict_var.items
        if self.dict_var.key_vars:
            return False
        return self.kind == "keys" or all(v.is_python_constant() for v in items.values())

    def as_python_constant(self):
        """A view of a dict of the constants: `str(d.keys())` and `sorted(d.items())` fold."""
        items = {k: None if self.kind == "keys" else v.as_python_constant()
                 for k, v in self.dict_var.items.items()}  # fmt: skip
        return getattr(items, self.kind)()

    def unpack(self, tx):
        d = self.dict_var
        if self.kind == "keys":
            return [d.key_var(k) for k in d.items]
        if self.kind == "values":
            return [d.value(tx, k) for k in list(d.items)]
        return [TupleVariable([d.key_var(k), d.value(tx, k)]) for k in list(d.items)]

    def iterate(self, tx):
        from .iterators import DictIteratorVariable  # iterators.py builds on this file

        return DictIteratorVariable(self.dict_var, self.kind)

    def truth(self, tx):
        return bool(self.dict_var.items)

    def get_attr(self, tx, name):
        if name == "mapping":
            raise Unsupported("unsupported_value", "a dict view's `mapping` (a read-only proxy)")
        return bound_method(self, name)

    def methods(self):
        return VIEW_METHODS

    def reconstruct(self, cg):  # `dict.keys(d)`, through the dict's own class
        method = getattr(self.dict_var.dict_type, self.kind)
        cg.call_callable(method, lambda: cg.reconstruct(self.dict_var))

    def __repr__(self):
        return f"DictViewVariable({self.kind} of {self.dict_var!r})"


def _view_contains(view, tx, item, /):
    from .operators import contains  # operators.py builds on this file

    return ConstantVariable(contains(tx, item, view))


def _view_reversed(view, tx, /):
    from .iterators import DictIteratorVariable  # iterators.py builds on this file

    return DictIteratorVariable(view.dict_var, view.kind, backwards=True)


def _isdisjoint(view, tx, other, /):
    from .operators import contains  # operators.py builds on this file

    return ConstantVariable(not any(contains(tx, item, view) for item in other.unpack(tx)))


VIEW_METHODS = {
    "__len__": lambda view, tx, /: ConstantVariable(len(view.dict_var.items)),
    "__contains__": _view_contains,
    "__iter__": lambda view, tx, /: view.iterate(tx),
    "__reversed__": _view_reversed,
    "isdisjoint": _isdisjoint,
}


# --- dicts from outside (builder.py's WRAPPERS) ----------------------------------------------

DICT_TYPES = (dict, collections.OrderedDict, collections.defaultdict, types.MappingProxyType)


def wrap_dict(tx, value, source):
    """A dict from outside: its type and keys are assumed, each value is read (and assumed
    about) only when the code uses it. A key is a constant, or a class, a function or another
    object compared by identity (or a tuple of them): equal only to itself, so `d[type(x)]`
    finds it by identity as CPython's lookup does, and the dict_keys guard checks that each
    key is the same object again."""
    if not all(is_checkable_key(k) for k in value):
        reason = f"{where(source)} has keys that are not constants, classes or functions"
        raise Unsupported("unsupported_value", reason + OWN_HASH)
    if source is not None:
        tx.trace.assume("type", source)
        tx.trace.assume("dict_keys", source)
    factory = getattr(value, "default_factory", None)
    factory_var = None
    if factory is not None:
        factory_var = tx.read(LazyVariable(factory, attr_of(source, "default_factory")))
    items = {}
    for position, (k, v) in enumerate(value.items()):
        index = k if written_back(k) or source is None else KeyAt(k, source, position)
        items[k] = LazyVariable(v, item_of(source, index))
    if source is None:
        items = {k: tx.read(v) for k, v in items.items()}
    result = DictVariable(items, source, type(value), factory_var)
    result.key_vars = {k: tx.wrap(k, None) for k in value if not is_constant_value(k)}
    return result


OWN_HASH = (
    " (an object with its own __hash__, or a tensor: CPython would call its __hash__ and __eq__"
    " on each lookup, which a guard cannot check cheaply)"
)


def is_checkable_key(key) -> bool:
    """A key the dict_keys guard can check: a constant, a class, a function, a builtin of a
    module or a class, an object compared by identity (`typing.Union`, a module), or a tuple
    or frozenset of them (an enum member is a constant). Not a tensor or an object of a
    class with its own `__hash__` or `__eq__`: not compared by identity."""
    if type(key) in (tuple, frozenset):
        return all(is_checkable_key(k) for k in key)
    if isinstance(key, types.BuiltinFunctionType):  # `len`, `torch.relu`: equal to the same C
        owner = key.__self__  # function of the same module or class; a method of an object
        return isinstance(owner, (types.ModuleType, type, type(None)))  # is not one of these
    if isinstance(key, (type, types.FunctionType)):
        return compared_by_identity(key)  # not a class whose metaclass has its own __eq__
    return is_constant_value(key) or compared_by_identity(key)


def written_back(key) -> bool:
    """Does `repr(key)` read back as the key? An item's source writes its key so
    (`G['d']['lr']`); a class, a function, an enum member or a dtype does not."""
    if type(key) is tuple:
        return all(written_back(k) for k in key)
    return type(key) in (str, int, bool, bytes, type(None)) or (
        type(key) is float and math.isfinite(key)
    )


class KeyAt:
    """The key at `position` of a dict from outside, for the source of its value when `repr`
    cannot write the key: `G['d'][B.list(G['d'])[0]]`. The dict_keys guard, checked before
    the guards of the values (their source is deeper), makes it the same key each call.

    It hashes and compares as the key itself (the key's `__eq__` says NotImplemented to it,
    and this one answers), so stage 4's new code, which loads an item's index as a constant,
    finds the item with it too (torch/_dynamo/source.py has a source for the key,
    ConstDictKeySource, instead)."""

    def __init__(self, key, dict_source, position: int):
        self.key, self.dict_source, self.position = key, dict_source, position

    def __hash__(self):
        return hash(self.key)

    def __eq__(self, other):
        other = other.key if isinstance(other, KeyAt) else other
        return other is self.key or other == self.key  # a dict's own test: a NaN is itself

    def __repr__(self):
        return f"B.list({self.dict_source.name()})[{self.position}]"
