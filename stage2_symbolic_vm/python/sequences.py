"""Lists and tuples of Variables, namedtuples among them (torch/_dynamo/variables/lists.py).

A list or tuple keeps its items as a Python list of Variables; what they share (indexing,
`index`, `count`, `in`) is SequenceVariable's, what only a list does (it may change) is
ListVariable's. A tuple keeps its class, so a namedtuple or a structseq
(`torch.return_types.max`) is one too. containers.py has what every container shares.
"""

import operator
import sys

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


# --- namedtuples from outside (builder.py's WRAPPERS) ------------------------------------


def is_namedtuple(value) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def wrap_namedtuple(tx, value, source):
    """A namedtuple: its type (which fixes its length), and each item."""
    if source is not None:
        tx.trace.assume("type", source)
    items = [tx.read(LazyVariable(v, item_of(source, i))) for i, v in enumerate(value)]
    return TupleVariable(items, source, tuple_type=type(value))
