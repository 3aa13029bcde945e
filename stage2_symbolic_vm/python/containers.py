"""Lists, tuples, dicts and sets of Variables (torch/_dynamo/variables/{lists,dicts,sets}.py).

A container made in the trace is plain data here, changed freely. A container
read from outside keeps its source: the trace may change it too (`xs.append`,
`d["k"] = v`), and `tx.side_effects` remembers that its new contents must be
written back into the real object once the graph has run, as eager would
have left it.

The semantics are CPython's (Objects/listobject.c, dictobject.c, setobject.c),
and where they are about hashing they are CPython's own: a dict's keys and a
set's items are kept as real Python objects (`key_of`: a constant is itself,
an object compared by identity its object or its Variable) in a real dict,
OrderedDict or set. So `1`, `1.0` and `True` are one key, a set iterates in
CPython's order, `move_to_end` and `popitem` are OrderedDict's, and a dict
changed while it is iterated raises CPython's own RuntimeError (iterators.py).
What compares items (`in`, `list.index`, `==` between lists) is the VM's
(operators.py), so a user's `__eq__` runs. Each method is a small function
whose signature is CPython's (positional-only where CPython's is): a call
with the wrong arguments raises the TypeError that CPython raises.
"""

import collections
import inspect
import operator
import sys
import types

from ..errors import ObservedAttributeError, ObservedException, Unsupported
from ..side_effects import replay_changes
from ..sources import attr_of, item_of
from ..variables import (
    UNKNOWN,
    BoundMethodVariable,
    ConstantVariable,
    LazyVariable,
    TensorVariable,
    Variable,
    compared_by_identity,
    is_constant_value,
)


def bound_method(value: Variable, name: str) -> Variable:
    """`xs.append`: a bound method of a list, tuple, dict or set, answered by `call_method`."""
    if not callable(getattr(value.python_type(), name, None)):
        raise ObservedAttributeError(f"{value.python_type().__name__} has no attribute {name!r}")
    return BoundMethodVariable(value, name)


def unhashable(kind: type) -> ObservedException:
    return ObservedException(TypeError(f"unhashable type: '{kind.__name__}'"))


def key_of(var: Variable):
    """The Python object that hashes and compares as `var` does, as a dict key or a set item.

    A constant is itself, a tuple the tuple of its items' keys, a frozenset the frozenset of
    its items. An object compared by identity (a module, a tensor, an instance of a class
    without `__eq__`) is its object, or its Variable if it was made in the trace: one Variable
    per object, hashed by its id as the object is. Lists, dicts, sets, and instances of a
    class that sets `__hash__ = None` (one with `__eq__` and no `__hash__`) are unhashable,
    as in CPython; an object with a `__hash__` of its own is not modeled.
    """
    if isinstance(var, TupleVariable):
        return tuple(key_of(item) for item in var.items)
    if isinstance(var, SetVariable) and var.set_type is frozenset:
        return frozenset(var.items)
    if isinstance(var, (ContainerVariable, DictViewVariable)):
        raise unhashable(var.python_type())
    if isinstance(var, TensorVariable):  # Tensor.__hash__ is its id
        return var
    if var.is_python_constant():
        value = var.as_python_constant()
        try:
            hash(value)
        except TypeError as error:  # a slice, which hashes only from 3.12
            raise ObservedException(error) from None
        return value
    identity = var.identity()
    kind = var.python_type() if identity is UNKNOWN else type(identity)
    if kind.__hash__ is None:
        raise unhashable(kind)
    if kind.__hash__ not in (object.__hash__, type.__hash__):
        reason = f"a dict key or set item with its own __hash__ ({kind.__qualname__})"
        raise Unsupported("unsupported_value", reason)
    return var if identity is UNKNOWN else identity


def is_none(var: Variable) -> bool:
    return var.is_python_constant() and var.as_python_constant() is None


def hashed_by_id(key) -> bool:
    """A key that stands for an object made in the trace (or a tensor): its hash is the id of
    its Variable, not of the object eager will have, so it orders a set differently."""
    if isinstance(key, tuple):
        return any(hashed_by_id(k) for k in key)
    return isinstance(key, Variable)


def call_method_of(table: dict, obj, tx, name: str, args: list, kwargs: dict):
    """`obj.name(*args, **kwargs)` by the table's function for it, whose signature is the
    method's own: arguments it does not take raise the TypeError CPython raises."""
    method = table[name]
    try:
        inspect.signature(method).bind(obj, tx, *args, **kwargs)
    except TypeError as error:
        raise ObservedException(TypeError(f"{name}(): {error}")) from None
    return method(obj, tx, *args, **kwargs)


def python_integer(tx, var: Variable) -> int:
    """An index argument (`xs.pop(i)`, `xs.insert(i, v)`): a constant with `__index__`."""
    return tx.run_python(operator.index, var.as_python_constant())


class ContainerVariable(Variable):
    """A list, tuple, dict or set. One read from outside is read again (the same object,
    whose changes side_effects.py writes back); one made in the trace is built."""

    def reconstruct(self, cg):
        if self.source is not None:
            cg.load_source(self.source)
        else:
            self.build(cg)

    def build(self, cg):
        """Push a new container of these items (stage 4's bytecode)."""
        raise NotImplementedError

    def get_attr(self, tx, name):
        return bound_method(self, name)

    def truth(self, tx):
        return bool(self.items)

    def changed(self, tx):
        if self.source is not None:
            tx.side_effects.mutate(self)

    MUTATING = frozenset()  # the methods that change the container

    def call_method(self, tx, name, args, kwargs):
        methods = self.methods()
        if name not in methods:
            return super().call_method(tx, name, args, kwargs)
        result = call_method_of(methods, self, tx, name, args, kwargs)
        if name in self.MUTATING:
            self.changed(tx)
        return ConstantVariable(None) if result is None else result

    def methods(self) -> dict:
        """The table of this container's methods: name -> function(self, tx, *args), which
        returns a Variable, or None for a method that returns None."""
        raise NotImplementedError


# --- lists and tuples -------------------------------------------------------------------------


class SequenceVariable(ContainerVariable):
    """Common ground of lists and tuples: a Python list of item Variables."""

    def __init__(self, items, source=None):
        self.items, self.source = list(items), source

    def is_python_constant(self):
        return all(item.is_python_constant() for item in self.items)

    def as_python_constant(self):
        return self.python_type()(item.as_python_constant() for item in self.items)

    def unpack(self, tx):
        return list(self.items)

    def iterate(self, tx):
        from .iterators import SequenceIteratorVariable  # iterators.py builds on this file

        return SequenceIteratorVariable(self)

    def index_of(self, key: Variable, out_of_range: str | None = None):
        """A subscript as CPython reads it: a slice, or an int (`__index__`) within range."""
        index = key.as_python_constant()
        if isinstance(index, slice):
            return index
        kind = self.python_type().__name__
        if not hasattr(type(index), "__index__"):
            message = f"{kind} indices must be integers or slices, not {type(index).__name__}"
            raise ObservedException(TypeError(message))
        index = index.__index__()
        if not -len(self.items) <= index < len(self.items):
            raise ObservedException(IndexError(out_of_range or f"{kind} index out of range"))
        return index

    def getitem(self, tx, key):
        index = self.index_of(key)
        if isinstance(index, slice):  # a namedtuple's slice is a tuple (TupleVariable's default
            return type(self)(self.items[index])  # tuple_type), a torch.Size's a torch.Size
        return self.items[index]

    def setitem(self, tx, key, value):
        kind = self.python_type().__name__
        raise ObservedException(TypeError(f"'{kind}' object does not support item assignment"))

    def build(self, cg):
        cg.build_sequence(self.items, "BUILD_LIST" if self.python_type() is list else "BUILD_TUPLE")
        if self.python_type() is list:
            cg.keep(self)  # a second reference is the same list

    def __repr__(self):
        return f"{type(self).__name__}({self.items!r})"


def matches(tx, items: list, value: Variable, start=0, stop=sys.maxsize):
    """The indices of the items equal to `value`, found one by one as CPython's `list.index`
    and `list.count` find them: each item is `value` itself or `item == value`."""
    from .operators import equal  # operators.py builds on this file

    start, stop, _ = slice(start, stop).indices(len(items))
    index = start
    while index < min(stop, len(items)):  # the list may change in a user's __eq__
        if equal(tx, items[index], value):
            yield index
        index += 1


def _index_of(seq, tx, value, start=None, stop=None, /):
    start = 0 if start is None else python_integer(tx, start)
    stop = sys.maxsize if stop is None else python_integer(tx, stop)
    found = next(matches(tx, seq.items, value, start, stop), None)
    if found is None:
        kind = "list" if seq.python_type() is list else "tuple"
        raise ObservedException(ValueError(f"{kind}.index(x): x not in {kind}"))
    return ConstantVariable(found)


SEQUENCE_METHODS = {
    "index": _index_of,
    "count": lambda seq, tx, value, /: ConstantVariable(
        sum(1 for _ in matches(tx, seq.items, value))
    ),
    "__len__": lambda seq, tx, /: ConstantVariable(len(seq.items)),
    "__getitem__": lambda seq, tx, key, /: seq.getitem(tx, key),
    "__contains__": lambda seq, tx, value, /: ConstantVariable(
        next(matches(tx, seq.items, value), None) is not None
    ),
}


class TupleVariable(SequenceVariable):
    """A tuple; `tuple_type` keeps a named tuple's class (`torch.return_types.max`)."""

    def __init__(self, items, source=None, tuple_type=tuple):
        super().__init__(items, source)
        self.tuple_type = tuple_type

    def python_type(self):
        return self.tuple_type

    def as_python_constant(self):
        values = [item.as_python_constant() for item in self.items]
        if self.tuple_type is tuple:
            return tuple(values)
        if hasattr(self.tuple_type, "_make"):  # a namedtuple takes its fields one by one
            return self.tuple_type._make(values)
        return self.tuple_type(values)  # a structseq takes one sequence

    def field_names(self) -> tuple:
        """A namedtuple's `_fields`; a structseq (`torch.return_types.max`) has `__match_args__`."""
        if self.tuple_type is tuple:
            return ()
        return getattr(self.tuple_type, "_fields", None) or getattr(
            self.tuple_type, "__match_args__", ()
        )

    def get_attr(self, tx, name):
        fields = self.field_names()
        if name in fields:
            return self.items[fields.index(name)]
        own = [k for k in self.tuple_type.__mro__ if k is not tuple and name in vars(k)]
        if own:  # a namedtuple's `_fields`, `_replace`, `_asdict`: found in its class
            from .objects import class_attribute, class_lookup  # objects.py builds on this file

            cls_var = tx.wrap(self.tuple_type, attr_of(self.source, "__class__"))
            return class_attribute(tx, self, cls_var, name, *class_lookup(self.tuple_type, name))
        return super().get_attr(tx, name)

    def methods(self):
        return TUPLE_METHODS if self.field_names() else SEQUENCE_METHODS

    def build(self, cg):
        if self.tuple_type is tuple:
            super().build(cg)
        elif hasattr(self.tuple_type, "_fields"):  # a namedtuple, made as its own __new__ makes it
            cg.call_callable(
                tuple.__new__,  # a C call: its Python __new__ would be a frame the hook compiles
                lambda: cg.load_const(self.tuple_type),
                lambda: cg.build_sequence(self.items, "BUILD_TUPLE"),
            )
        else:  # a structseq (torch.return_types.max) takes one sequence
            cg.call_callable(self.tuple_type, lambda: cg.build_sequence(self.items, "BUILD_TUPLE"))


TUPLE_METHODS = {
    **SEQUENCE_METHODS,
    "_asdict": lambda t, tx, /: DictVariable(dict(zip(t.field_names(), t.items, strict=True))),
}


class ListVariable(SequenceVariable):
    """A list. One read from outside may be changed too: the change is written back after."""

    def python_type(self):
        return list

    def setitem(self, tx, key, value):
        index = self.index_of(key, "list assignment index out of range")
        if isinstance(index, slice):  # any iterable, consumed first; an extended slice must
            tx.run_python(self.items.__setitem__, index, value.unpack(tx))  # keep its length
        else:
            self.items[index] = value
        self.changed(tx)

    def methods(self):
        return LIST_METHODS

    MUTATING = frozenset({"append", "extend", "insert", "remove", "reverse", "clear", "sort"})
    MUTATING |= {"pop", "__delitem__", "__setitem__"}


def _pop(xs, tx, index=None, /):
    return tx.run_python(xs.items.pop, -1 if index is None else python_integer(tx, index))


def _remove(xs, tx, value, /):
    found = next(matches(tx, xs.items, value), None)
    if found is None:
        raise ObservedException(ValueError("list.remove(x): x not in list"))
    del xs.items[found]


def _sort(xs, tx, /, *, key=None, reverse=None):
    from .operators import sort_order  # operators.py builds on this file

    order = sort_order(tx, xs.items, key, reverse)
    xs.items[:] = [xs.items[i] for i in order]


LIST_METHODS = {
    **SEQUENCE_METHODS,
    "append": lambda xs, tx, item, /: xs.items.append(item),
    "extend": lambda xs, tx, iterable, /: xs.items.extend(iterable.unpack(tx)),
    "insert": lambda xs, tx, index, item, /: xs.items.insert(python_integer(tx, index), item),
    "pop": _pop,
    "remove": _remove,
    "reverse": lambda xs, tx, /: xs.items.reverse(),
    "clear": lambda xs, tx, /: xs.items.clear(),
    "copy": lambda xs, tx, /: ListVariable(xs.items),
    "sort": _sort,
    "__delitem__": lambda xs, tx, key, /: xs.items.__delitem__(
        xs.index_of(key, "list assignment index out of range")
    ),
    "__setitem__": lambda xs, tx, key, value, /: xs.setitem(tx, key, value),
}


# --- dicts ---------------------------------------------------------------------------------------


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


class DictViewVariable(Variable):
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

    def call_method(self, tx, name, args, kwargs):
        if name not in VIEW_METHODS:
            return super().call_method(tx, name, args, kwargs)
        return call_method_of(VIEW_METHODS, self, tx, name, args, kwargs)

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


# --- sets -------------------------------------------------------------------------------------


class SetVariable(ContainerVariable):
    """A set or frozenset. `items` is a real set (or frozenset) of the items' keys (`key_of`),
    so CPython hashes, orders and combines them; `key_vars` maps the keys that are not
    constants back to their Variables."""

    def __init__(self, items, source=None, set_type=set):
        keys, self.key_vars = [], {}
        for var in items:
            keys.append(key_of(var))
            if not isinstance(var, ConstantVariable):
                self.key_vars.setdefault(keys[-1], var)
        self.items = set_type(keys)  # inserted in order, as BUILD_SET and set(iterable) insert
        self.source, self.set_type = source, set_type
        self.changes = []  # (method, argument keys) of each change, for `replay`

    @classmethod
    def of_keys(cls, keys, key_vars: dict) -> "SetVariable":
        """A set CPython computed from the keys of others (`a | b`, `s.union(t)`)."""
        result = cls([], set_type=type(keys))
        result.items = keys
        result.key_vars = {k: v for k, v in key_vars.items() if k in keys}
        return result

    def key_var(self, k) -> Variable:
        return self.key_vars.get(k) or ConstantVariable(k)

    def python_type(self):
        return self.set_type

    def is_python_constant(self):
        return not self.key_vars

    def as_python_constant(self):
        return self.set_type(self.items)

    def ordered_keys(self) -> list:
        """The keys in CPython's order, which is not known when objects made in the trace (or
        tensors) are among them: their hashes are ids."""
        if len(self.items) > 1 and any(hashed_by_id(k) for k in self.items):
            raise Unsupported(
                "unsupported_value",
                "the order of a set of tensors (or of objects made in the trace): it is the order "
                "of their ids, which the trace cannot know",
            )
        return list(self.items)

    def unpack(self, tx):
        return [self.key_var(k) for k in self.ordered_keys()]

    def iterate(self, tx):
        from .iterators import SetIteratorVariable  # iterators.py builds on this file

        self.ordered_keys()
        return SetIteratorVariable(self)

    def methods(self):
        return SET_METHODS

    MUTATING = frozenset({"add", "remove", "discard", "pop", "clear", "update"})
    MUTATING |= {"intersection_update", "difference_update", "symmetric_difference_update"}

    def call_method(self, tx, name, args, kwargs):
        result = super().call_method(tx, name, args, kwargs)
        if name in self.MUTATING and self.source is not None:  # what `replay` makes again
            self.record(tx, name, args)
        return result

    def record(self, tx, name, args):
        """Keep a change of a set from outside: its method and arguments as keys. An iterable
        is kept as its keys in its order, and its kind: CPython grows the set's table ahead
        for another set or a dict (set_update_internal), one item at a time for the rest."""
        if name in ("add", "remove", "discard"):
            arguments = [(None, set_key(arg)) for arg in args]
        else:
            iterables = [stand_in(tx, arg)[0] for arg in args]
            arguments = [(REPLAYED_AS.get(type(i), tuple), tuple(i)) for i in iterables]
        self.changes.append((name, arguments, dict(self.key_vars)))

    def write_back(self, cg):
        """`replay_changes` of the list of this set's changes (method, arguments): the real set
        goes through the same operations as eager's (side_effects.py)."""
        return replay_changes, [self.push_changes(cg)]

    def push_changes(self, cg):
        for name, arguments, key_vars in self.changes:
            cg.load_const(name)
            known = {**key_vars, **self.key_vars}
            for kind, key in arguments:
                if kind is None:
                    push_key(cg, key, known)
                else:
                    cg.call_callable(kind, lambda key=key, known=known: push_key(cg, key, known))
            cg.collect("BUILD_LIST", len(arguments))
            cg.collect("BUILD_TUPLE", 2)
        cg.collect("BUILD_LIST", len(self.changes))
        return cg.stash()

    def combine(self, tx, name, others):
        """`s.union(*others)` & co: the real method, run by CPython on the keys, each other
        iterable given as an object that iterates as it does (`stand_in`)."""
        method = getattr(self.set_type, name, None)
        if method is None:  # `frozenset.update(fs, ...)`, through the class
            raise ObservedException(AttributeError(f"frozenset has no attribute {name!r}"))
        others = [stand_in(tx, other) for other in others]
        key_vars = {k: v for _, kv in reversed(others) for k, v in kv.items()} | self.key_vars
        result = tx.run_python(method, self.items, *(keys for keys, _ in others))
        if result is self.items:  # frozenset.copy() and .union() of nothing: the same object
            return self
        if isinstance(result, (set, frozenset)):
            return SetVariable.of_keys(result, key_vars)
        self.key_vars = {k: v for k, v in key_vars.items() if k in self.items}  # an update
        return None if result is None else ConstantVariable(result)

    def build(self, cg):
        items = [self.key_var(k) for k in self.items]
        if self.set_type is frozenset:
            cg.call_callable(frozenset, lambda: cg.build_sequence(items, "BUILD_SET"))
        else:
            cg.build_sequence(items, "BUILD_SET")
            cg.keep(self)

    def __repr__(self):
        return f"SetVariable({list(self.items)!r})"


# What an iterable argument of a set's change is made again as (any other: a tuple).
REPLAYED_AS = {set: set, frozenset: set, dict: dict.fromkeys, type({}.keys()): dict.fromkeys}


def push_key(cg, key, key_vars: dict):
    """Push a key as the object it stands for: a constant, a tuple of keys, or the Variable
    of an object that is not a constant (a tensor, an object from outside)."""
    if isinstance(key, tuple) and any(isinstance(k, Variable) for k in key):
        for item in key:
            push_key(cg, item, key_vars)
        cg.collect("BUILD_TUPLE", len(key))
    elif isinstance(key, Variable):
        cg.reconstruct(key)
    elif key in key_vars:
        cg.reconstruct(key_vars[key])
    else:
        cg.load_const(key)


def set_key(item: Variable):
    """The key `in`, `remove` and `discard` look for: a set is looked for as a frozenset
    (CPython's set_contains retries an unhashable set so)."""
    if isinstance(item, SetVariable):
        return frozenset(item.items)
    return key_of(item)


def _add(s, tx, item, /):
    key = key_of(item)
    if key not in s.items and not isinstance(item, ConstantVariable):
        s.key_vars[key] = item
    s.items.add(key)


def _set_pop(s, tx, /):
    s.ordered_keys()  # which item comes first is CPython's order
    key = tx.run_python(s.items.pop)
    return s.key_vars.pop(key, None) or ConstantVariable(key)


COMBINING = ("union", "intersection", "difference", "symmetric_difference", "copy", "update")
COMBINING += ("issubset", "issuperset", "isdisjoint", "intersection_update")
COMBINING += ("difference_update", "symmetric_difference_update")


def combining(name):
    """A method that takes iterables (`union`, `issubset`, `update` ...): SetVariable.combine."""
    return lambda s, tx, /, *others: s.combine(tx, name, others)


SET_METHODS = {
    "add": _add,
    "remove": lambda s, tx, item, /: tx.run_python(s.items.remove, set_key(item)),
    "discard": lambda s, tx, item, /: s.items.discard(set_key(item)),
    "pop": _set_pop,
    "clear": lambda s, tx, /: s.items.clear(),
    "__contains__": lambda s, tx, item, /: ConstantVariable(set_key(item) in s.items),
    "__len__": lambda s, tx, /: ConstantVariable(len(s.items)),
    "__iter__": lambda s, tx, /: s.iterate(tx),
    **{name: combining(name) for name in COMBINING},
}


def stand_in(tx, value: Variable):
    """(a Python object that iterates, hashes and combines as `value` does in set algebra,
    the Variables of its keys that are not constants).

    A set is its keys, a dict its real dict of keys, a keys view that dict's own keys view,
    a constant itself; an items view of constant values a real items view; any other iterable
    the list of its items' keys (so `{1} | [2]` still fails as in CPython, and
    `d.keys() | [2]` works; but an operator on the items of other values would not)."""
    if isinstance(value, SetVariable):
        return value.items, value.key_vars
    if isinstance(value, DictVariable):
        return value.items, value.key_vars
    if isinstance(value, DictViewVariable) and value.kind == "keys":
        return value.dict_var.items.keys(), value.dict_var.key_vars
    if isinstance(value, DictViewVariable) and value.kind == "items":
        value.unpack(tx)  # the values of a dict from outside are read
        if value.is_python_constant():
            return value.as_python_constant(), {}
    if isinstance(value, ConstantVariable):
        return value.as_python_constant(), {}
    items = value.unpack(tx)
    keys = [key_of(item) for item in items]
    kept = {k: v for k, v in zip(keys, items, strict=True) if not isinstance(v, ConstantVariable)}
    return keys, kept


# --- namedtuples, dicts and sets from outside (builder.py's WRAPPERS) ---------------------

DICT_TYPES = (dict, collections.OrderedDict, collections.defaultdict, types.MappingProxyType)


def is_namedtuple(value) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def wrap_namedtuple(tx, value, source):
    """A namedtuple: its type (which fixes its length), and each item."""
    if source is not None:
        tx.trace.assume("type", source)
    items = [tx.read(LazyVariable(v, item_of(source, i))) for i, v in enumerate(value)]
    return TupleVariable(items, source, tuple_type=type(value))


def wrap_dict(tx, value, source):
    """A dict from outside: its type and keys are assumed, each value is read (and assumed
    about) only when the code uses it."""
    if not all(is_constant_value(k) for k in value):
        raise Unsupported("unsupported_value", f"{where(source)} has keys that are not constants")
    if source is not None:
        tx.trace.assume("type", source)
        tx.trace.assume("dict_keys", source)
    factory = getattr(value, "default_factory", None)
    factory_var = None
    if factory is not None:
        factory_var = tx.read(LazyVariable(factory, attr_of(source, "default_factory")))
    items = {k: LazyVariable(v, item_of(source, k)) for k, v in value.items()}
    if source is None:
        items = {k: tx.read(v) for k, v in items.items()}
    return DictVariable(items, source, type(value), factory_var)


def wrap_set(tx, value, source):
    """A set from outside, guarded whole by `==`. dataclasses' `_ATOMIC_TYPES` is a frozenset
    of classes: items equal only to themselves (classes, functions) are guarded by the set's
    `==` as well as constants."""
    if not all(is_constant_value(v) or compared_by_identity(v) for v in value):
        raise Unsupported("unsupported_value", f"{where(source)} holds items with own __eq__")
    if source is not None:
        tx.trace.assume("constant", source)
    return SetVariable([tx.wrap(v, None) for v in value], source, type(value))


def where(source) -> str:
    return source.describe() if source is not None else "a value"
