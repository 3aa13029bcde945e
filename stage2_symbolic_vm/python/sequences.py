"""Lists and tuples of Variables, namedtuples among them (torch/_dynamo/variables/lists.py).

A list or tuple keeps its items as a Python list of Variables; what they share (indexing,
`index`, `count`, `in`) is SequenceVariable's, what only a list does (it may change) is
ListVariable's. A tuple keeps its class, so a namedtuple or a structseq
(`torch.return_types.max`) is one too. containers.py has what every container shares.
"""

import operator
import sys
from collections import deque

from ..errors import ObservedException
from ..sources import attr_of, item_of
from ..variables import ConstantVariable, LazyVariable, Variable
from .containers import ContainerVariable, key_of


def python_integer(tx, var: Variable) -> int:
    """An index argument (`xs.pop(i)`, `xs.insert(i, v)`): a constant with `__index__`."""
    return tx.run_python(operator.index, var.as_python_constant())


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
        if isinstance(index, slice):  # `xs[::0]` is CPython's ValueError, `xs["a":]` its TypeError
            try:
                index.indices(len(self.items))
            except (ValueError, TypeError) as error:
                raise ObservedException(error) from None
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

    def hash_key(self):
        return tuple(key_of(item) for item in self.items)

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


def _asdict(t, tx, /):
    from .dicts import DictVariable  # dicts.py builds on this file

    return DictVariable(dict(zip(t.field_names(), t.items, strict=True)))


TUPLE_METHODS = {**SEQUENCE_METHODS, "_asdict": _asdict}


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
    MUTATING |= {"pop", "__delitem__", "__setitem__", "__init__"}


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
    "__init__": lambda xs, tx, iterable=None, /: xs.items.__setitem__(
        slice(None), [] if iterable is None else iterable.unpack(tx)
    ),  # list_init empties the list, then extends it
    "copy": lambda xs, tx, /: ListVariable(xs.items),
    "sort": _sort,
    "__delitem__": lambda xs, tx, key, /: xs.items.__delitem__(
        xs.index_of(key, "list assignment index out of range")
    ),
    "__setitem__": lambda xs, tx, key, value, /: xs.setitem(tx, key, value),
}


# --- namedtuples from outside (builder.py's WRAPPERS) ------------------------------------


def is_namedtuple(value) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def wrap_namedtuple(tx, value, source):
    """A namedtuple: its type (which fixes its length), and each item."""
    if source is not None:
        tx.trace.assume("type", source)
    items = [tx.read(LazyVariable(v, item_of(source, i))) for i, v in enumerate(value)]
    return TupleVariable(items, source, tuple_type=type(value))


# --- collections.deque (Modules/_collectionsmodule.c) --------------------------------------


class DequeVariable(SequenceVariable):
    """A `collections.deque`: a list open at both ends, whose `maxlen`, if set, drops an item
    at one end for each added at the other. Indexed by an int only. One from outside is
    refilled with the trace's items after the graph (`write_back`)."""

    def __init__(self, items, source=None, maxlen=None):
        super().__init__(items, source)
        self.maxlen, self.state = maxlen, 0  # state: CPython's count of adds and removes, which
        # an iterator checks (a rotation counts; a reversal or a replaced item does not)
        self.trim("left")

    def iterate(self, tx):
        from .iterators import DequeIteratorVariable  # iterators.py builds on this file

        return DequeIteratorVariable(self)

    def python_type(self):
        return deque

    def as_python_constant(self):
        return deque((item.as_python_constant() for item in self.items), self.maxlen)

    def trim(self, end: str):
        """Past `maxlen`, drop items at `end` ("left" after an append on the right)."""
        while self.maxlen is not None and len(self.items) > self.maxlen:
            self.items.pop(0 if end == "left" else -1)

    def index_of(self, key, out_of_range="deque index out of range"):
        index = key.as_python_constant()
        if not hasattr(type(index), "__index__"):  # a slice too
            message = f"sequence index must be integer, not '{type(index).__name__}'"
            raise ObservedException(TypeError(message))
        return super().index_of(ConstantVariable(index.__index__()), out_of_range)

    def setitem(self, tx, key, value):
        self.items[self.index_of(key)] = value
        self.changed(tx)

    def get_attr(self, tx, name):
        if name == "maxlen":
            return ConstantVariable(self.maxlen)
        return super().get_attr(tx, name)

    def methods(self):
        return DEQUE_METHODS

    MUTATING = frozenset({"append", "appendleft", "extend", "extendleft", "pop", "popleft"})
    MUTATING |= {"rotate", "clear", "insert", "remove", "reverse", "__delitem__"}

    def build(self, cg):
        cg.call_callable(
            deque,
            lambda: cg.build_sequence(self.items, "BUILD_LIST"),
            lambda: cg.load_const(self.maxlen),
        )
        cg.keep(self)  # a second reference is the same deque

    def write_back(self, cg):
        """The caller's deque, refilled with these items (its `maxlen` cannot change)."""
        cg.build_sequence(self.items, "BUILD_LIST")
        return refill, [cg.stash()]

    def __repr__(self):
        return f"DequeVariable({self.items!r}, maxlen={self.maxlen})"


def refill(target: deque, items: list):
    """What stage 4's new code calls to give a deque from outside the trace's contents."""
    target.clear()
    target.extend(items)


def new_deque(tx, iterable=None, maxlen=None):
    """`collections.deque(iterable, maxlen)`, with CPython's checks of `maxlen`."""
    limit = None if maxlen is None else maxlen.as_python_constant()
    if limit is not None:
        if not hasattr(type(limit), "__index__"):
            raise ObservedException(TypeError("an integer is required"))
        if limit.__index__() < 0:
            raise ObservedException(ValueError("maxlen must be non-negative"))
        limit = limit.__index__()
    items = [] if iterable is None else iterable.unpack(tx)
    return DequeVariable(items, None, limit)


def _pop_end(dq, tx, end: int):
    if not dq.items:
        raise ObservedException(IndexError("pop from an empty deque"))
    dq.state += 1
    return dq.items.pop(end)


def _added(dq, items: list, end: str):
    """Each item added at `end` in turn, as CPython's extend and extendleft do (a full
    deque drops one at the other end for each)."""
    for item in items:
        dq.state += 1
        if end == "right":
            dq.items.append(item)
            dq.trim("left")
        else:
            dq.items.insert(0, item)
            dq.trim("right")


def _rotate(dq, tx, n=None, /):
    steps = 1 if n is None else python_integer(tx, n)
    dq.state += 1  # even rotate(0)
    if dq.items and steps % len(dq.items):
        steps %= len(dq.items)
        dq.items[:] = dq.items[-steps:] + dq.items[:-steps]


def _insert(dq, tx, index, item, /):
    if dq.maxlen is not None and len(dq.items) >= dq.maxlen:
        raise ObservedException(IndexError("deque already at its maximum size"))
    dq.state += 1
    dq.items.insert(python_integer(tx, index), item)


def _remove_item(dq, tx, value, /):
    found = next(matches(tx, dq.items, value), None)
    if found is None:
        raise ObservedException(ValueError("deque.remove(x): x not in deque"))
    _delete(dq, found)


def _delete(dq, index):
    dq.state += 1
    del dq.items[index]


def _copy(dq, tx, /):
    return DequeVariable(dq.items, None, dq.maxlen)


def _clear(dq, tx, /):
    dq.state += 1
    dq.items.clear()


DEQUE_METHODS = {
    **SEQUENCE_METHODS,
    "append": lambda dq, tx, item, /: _added(dq, [item], "right"),
    "appendleft": lambda dq, tx, item, /: _added(dq, [item], "left"),
    "extend": lambda dq, tx, iterable, /: _added(dq, iterable.unpack(tx), "right"),
    "extendleft": lambda dq, tx, iterable, /: _added(dq, iterable.unpack(tx), "left"),
    "pop": lambda dq, tx, /: _pop_end(dq, tx, -1),
    "popleft": lambda dq, tx, /: _pop_end(dq, tx, 0),
    "rotate": _rotate,
    "clear": _clear,
    "copy": _copy,
    "__copy__": _copy,  # copy.copy(d)
    "insert": _insert,
    "remove": _remove_item,
    "reverse": lambda dq, tx, /: dq.items.reverse(),
    "__delitem__": lambda dq, tx, key, /: _delete(dq, dq.index_of(key)),
    "__setitem__": lambda dq, tx, key, value, /: dq.setitem(tx, key, value),
}


def wrap_deque(tx, value, source):
    """A deque from outside: its type, length and `maxlen` (guarded), and each item."""
    tx.trace.assume("type", source)
    tx.trace.assume("length", source)
    tx.trace.assume("constant", attr_of(source, "maxlen"))
    items = [tx.read(LazyVariable(v, item_of(source, i))) for i, v in enumerate(value)]
    return DequeVariable(items, source, value.maxlen)
