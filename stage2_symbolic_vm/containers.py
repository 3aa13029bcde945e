"""Lists, tuples, dicts and sets of Variables (torch/_dynamo/variables/{lists,dicts,sets}.py).

A container made in the trace is plain data here, changed freely. A container
read from outside keeps its source: the trace may change it too (`xs.append`,
`d["k"] = v`), and `tx.side_effects` remembers that its new contents must be
written back into the real object once the graph has run, as eager would
have left it. Dict keys and set items are Python constants (strings, ints,
enum members, dtypes ...), as nearly all real code uses them.
"""

import collections

from .errors import ObservedException, Unsupported
from .sources import attr_of
from .variables import UNKNOWN, ConstantVariable, Variable, constant_args


def key_of(var: Variable):
    """The Python key of a dict or set item: a constant by value, anything else by identity
    (a module, a function, a tensor: their `__hash__` is their `id`, as in CPython)."""
    if var.is_python_constant():
        return var.as_python_constant()
    identity = var.identity()
    if identity is not UNKNOWN:
        if type(identity).__hash__ not in (object.__hash__, type.__hash__):
            raise Unsupported("unsupported_value", "a dict key or set item with its own __hash__")
        return identity
    return var  # made in the trace (or a tensor): the Variable stands for its object


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

    def truth(self, tx):
        return bool(self.items)

    def get_attr(self, tx, name):
        return self.method(name)

    def getitem(self, tx, key):
        index = key.as_python_constant()
        if isinstance(index, slice):
            return type(self)(self.items[index])
        if not isinstance(index, int):
            raise ObservedException(TypeError(f"{self.python_type().__name__} index is not an int"))
        if not -len(self.items) <= index < len(self.items):
            raise ObservedException(IndexError(f"{self.python_type().__name__} index out of range"))
        return self.items[index]

    def call_method(self, tx, name, args, kwargs):
        if name in ("index", "count", "__contains__") and not kwargs:
            keys = [item.as_python_constant() for item in self.items]
            args = constant_args(args, {})[0]
            return ConstantVariable(tx.run_python(getattr(keys, name), *args))
        if name == "__len__" and not args:
            return ConstantVariable(len(self.items))
        if name == "__getitem__" and len(args) == 1:
            return self.getitem(tx, args[0])
        return super().call_method(tx, name, args, kwargs)

    def build(self, cg):
        cg.build_sequence(self.items, "BUILD_LIST" if self.python_type() is list else "BUILD_TUPLE")
        if self.python_type() is list:
            cg.keep(self)  # a second reference is the same list

    def __repr__(self):
        return f"{type(self).__name__}({self.items!r})"


class TupleVariable(SequenceVariable):
    """A tuple; `tuple_type` keeps a named tuple's class (`torch.return_types.max`)."""

    def __init__(self, items, source=None, tuple_type=tuple):
        super().__init__(items, source)
        self.tuple_type = tuple_type

    def python_type(self):
        return self.tuple_type

    def as_python_constant(self):
        values = [item.as_python_constant() for item in self.items]
        return tuple(values) if self.tuple_type is tuple else self.tuple_type(values)

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

    def call_method(self, tx, name, args, kwargs):
        if name == "_asdict" and self.field_names():
            return DictVariable(dict(zip(self.field_names(), self.items, strict=True)))
        return super().call_method(tx, name, args, kwargs)

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


class ListVariable(SequenceVariable):
    """A list. One read from outside may be changed too: the change is written back after."""

    def python_type(self):
        return list

    def changed(self, tx):
        if self.source is not None:
            tx.side_effects.mutate(self)

    def setitem(self, tx, key, value):
        index = key.as_python_constant()
        if isinstance(index, slice):
            self.items[index] = value.unpack(tx)
        else:
            self.getitem(tx, key)  # raises if out of range
            self.items[index] = value
        self.changed(tx)

    MUTATING = ("append", "extend", "insert", "pop", "remove", "reverse", "clear", "sort")
    MUTATING += ("__delitem__",)

    def call_method(self, tx, name, args, kwargs):
        if name not in self.MUTATING:
            if name == "copy" and not args:
                return ListVariable(self.items)
            return super().call_method(tx, name, args, kwargs)
        result = self.mutate(tx, name, args, kwargs)
        self.changed(tx)
        return result

    def mutate(self, tx, name, args, kwargs):
        if name == "append" and len(args) == 1:
            self.items.append(args[0])
        elif name == "extend" and len(args) == 1:
            self.items.extend(args[0].unpack(tx))
        elif name == "insert" and len(args) == 2:
            self.items.insert(args[0].as_python_constant(), args[1])
        elif name == "pop" and len(args) <= 1:
            if not self.items:
                raise ObservedException(IndexError("pop from empty list"))
            return self.items.pop(*constant_args(args, {})[0])
        elif name == "remove" and len(args) == 1:
            keys = [item.as_python_constant() for item in self.items]
            del self.items[tx.run_python(keys.index, args[0].as_python_constant())]
        elif name == "__delitem__" and len(args) == 1:
            index = args[0].as_python_constant()
            if not isinstance(index, slice):
                self.getitem(tx, args[0])  # raises if out of range
            del self.items[index]
        elif name == "reverse" and not args:
            self.items.reverse()
        elif name == "clear" and not args:
            self.items.clear()
        elif name == "sort" and not args:
            from .builtins_table import sort_order  # the table builds on this file

            order = sort_order(tx, self.items, kwargs.get("key"), kwargs.get("reverse"))
            self.items[:] = [self.items[i] for i in order]
        else:
            raise Unsupported("unsupported_value", f"list.{name} with these arguments")
        return ConstantVariable(None)


class DictVariable(ContainerVariable):
    """A dict (or an OrderedDict, or a defaultdict) with constant keys and Variable values.

    `dict_type` is the class; a defaultdict also keeps its `default_factory` Variable.
    """

    def __init__(self, items: dict, source=None, dict_type=dict, default_factory=None):
        self.items, self.source = dict(items), source
        self.dict_type, self.default_factory = dict_type, default_factory
        self.key_vars = {}  # key -> its Variable, for the keys that are not constants

    def put(self, key: Variable, value: Variable):
        k = key_of(key)
        if not isinstance(key, ConstantVariable):
            self.key_vars[k] = key
        self.items[k] = value

    def key_var(self, k) -> Variable:
        return self.key_vars.get(k) or ConstantVariable(k)

    def python_type(self):
        return self.dict_type

    def get_attr(self, tx, name):
        if name == "default_factory" and self.default_factory is not None:
            return self.default_factory
        return self.method(name)

    def truth(self, tx):
        return bool(self.items)

    def unpack(self, tx):
        return [self.key_var(k) for k in self.items]

    def value(self, tx, k):
        """The value of key `k`; one read from outside is wrapped (and assumed about) now."""
        self.items[k] = tx.read(self.items[k])
        return self.items[k]

    def getitem(self, tx, key):
        k = key_of(key)
        if k not in self.items and self.default_factory is not None:
            self.items[k] = self.default_factory.call(tx, [], {})  # defaultdict.__missing__
            self.changed(tx)
        if k not in self.items:
            raise ObservedException(KeyError(k))
        return self.value(tx, k)

    def setitem(self, tx, key, value):
        self.put(key, value)
        self.changed(tx)

    def changed(self, tx):
        if self.source is not None:
            tx.side_effects.mutate(self)

    def update(self, tx, other, kwargs):
        if isinstance(other, DictVariable):
            self.items.update(other.items)
            self.key_vars.update(other.key_vars)
        elif other is not None:  # an iterable of (key, value) pairs: `d.update(zip(ks, vs))`
            for pair in other.unpack(tx):
                key, value = pair.unpack(tx)
                self.put(key, value)
        self.items.update(kwargs)

    def call_method(self, tx, name, args, kwargs):
        handler = DICT_METHODS.get(name)
        if handler is None:
            return super().call_method(tx, name, args, kwargs)
        return handler(self, tx, *args, **kwargs)

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
        return f"DictVariable({self.items!r})"


def _pop(d, tx, key, *default):
    k = key_of(key)
    if k not in d.items:
        if default:
            return default[0]
        raise ObservedException(KeyError(k))
    value = d.value(tx, k)
    del d.items[k]
    d.changed(tx)
    return value


def _popitem(d, tx, last=None):
    if not d.items:
        raise ObservedException(KeyError("popitem(): dictionary is empty"))
    at_end = last is None or last.as_python_constant()
    key = list(d.items)[-1 if at_end else 0]
    value, key_var = d.value(tx, key), d.key_var(key)
    del d.items[key]
    d.changed(tx)
    return TupleVariable([key_var, value])


def _setdefault(d, tx, key, default=None):
    k = key_of(key)
    if k not in d.items:
        d.put(key, default if default is not None else ConstantVariable(None))
        d.changed(tx)
    return d.value(tx, k)


def _update(d, tx, other=None, **kwargs):
    d.update(tx, other, kwargs)
    d.changed(tx)
    return ConstantVariable(None)


def _clear(d, tx):
    d.items.clear()
    d.changed(tx)
    return ConstantVariable(None)


def _move_to_end(d, tx, key, last=None):
    k = key_of(key)
    if k not in d.items:
        raise ObservedException(KeyError(k))
    value = d.items.pop(k)
    if last is None or last.as_python_constant():
        d.items[k] = value
    else:
        d.items = {k: value, **d.items}
    d.changed(tx)
    return ConstantVariable(None)


def _copy(d, tx):
    copy = DictVariable(d.items, dict_type=d.dict_type, default_factory=d.default_factory)
    copy.key_vars = dict(d.key_vars)
    return copy


# One entry per dict method (dict, OrderedDict and defaultdict share them).
DICT_METHODS = {
    "keys": lambda d, tx: DictViewVariable(d, "keys"),
    "values": lambda d, tx: DictViewVariable(d, "values"),
    "items": lambda d, tx: DictViewVariable(d, "items"),
    "get": lambda d, tx, key, default=None: (
        d.value(tx, key_of(key))
        if key_of(key) in d.items
        else (default if default is not None else ConstantVariable(None))
    ),
    "__getitem__": lambda d, tx, key: d.getitem(tx, key),
    "__setitem__": lambda d, tx, key, value: d.setitem(tx, key, value) or ConstantVariable(None),
    "__contains__": lambda d, tx, key: ConstantVariable(key_of(key) in d.items),
    "__delitem__": lambda d, tx, key: _pop(d, tx, key) and ConstantVariable(None),
    "__len__": lambda d, tx: ConstantVariable(len(d.items)),
    "pop": _pop,
    "popitem": _popitem,
    "setdefault": _setdefault,
    "update": _update,
    "clear": _clear,
    "copy": _copy,
    "move_to_end": _move_to_end,
}


class DictViewVariable(Variable):
    """`d.keys()`, `d.values()`, `d.items()`: a live view, so later changes of `d` show."""

    def __init__(self, dict_var: DictVariable, kind: str):
        self.dict_var, self.kind = dict_var, kind

    def python_type(self):
        return type(getattr({}, self.kind)())

    def is_python_constant(self):
        items = self.dict_var.items
        if not all(isinstance(k, (str, int, float, bool, tuple)) for k in items):
            return False
        return self.kind == "keys" or all(v.is_python_constant() for v in items.values())

    def as_python_constant(self):
        """A view of a dict of the constants: `d.keys() == {"a"}` and `d.keys() & s` fold."""
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

    def truth(self, tx):
        return bool(self.dict_var.items)

    def call_method(self, tx, name, args, kwargs):
        if name == "__len__":
            return ConstantVariable(len(self.dict_var.items))
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, cg):  # `dict.keys(d)`, through the dict's own class
        method = getattr(self.dict_var.dict_type, self.kind)
        cg.call_callable(method, lambda: cg.reconstruct(self.dict_var))

    def __repr__(self):
        return f"DictViewVariable({self.kind} of {self.dict_var!r})"


class SetVariable(ContainerVariable):
    """A set or frozenset of constants, kept in insertion order (a dict of key -> Variable)."""

    def __init__(self, items, source=None, set_type=set):
        self.items = {}
        for v in items:
            self.items.setdefault(key_of(v), v)
        self.source, self.set_type = source, set_type

    def python_type(self):
        return self.set_type

    def is_python_constant(self):
        return all(isinstance(v, ConstantVariable) for v in self.items.values())

    def as_python_constant(self):
        return self.set_type(self.items)

    def unpack(self, tx):
        return list(self.items.values())

    def truth(self, tx):
        return bool(self.items)

    def get_attr(self, tx, name):
        return self.method(name)

    def changed(self, tx):
        if self.source is not None:
            tx.side_effects.mutate(self)

    MUTATING = ("add", "discard", "remove", "pop", "clear", "update")
    MUTATING += ("difference_update", "intersection_update", "symmetric_difference_update")

    def call_method(self, tx, name, args, kwargs):
        if name in ("add", "discard", "remove") and len(args) == 1:
            key = key_of(args[0])
            if name == "remove" and key not in self.items:
                raise ObservedException(KeyError(key))
            if name == "add":
                self.items.setdefault(key, args[0])
            else:
                self.items.pop(key, None)
            self.changed(tx)
            return ConstantVariable(None)
        if name == "pop" and not args:
            if not self.items:
                raise ObservedException(KeyError("pop from an empty set"))
            self.changed(tx)
            return self.items.pop(next(iter(self.items)))
        # Everything else is a function of the items' keys: ask Python, then map the keys
        # of the answer back to their Variables.
        variables = dict(self.items)
        for other in args:
            variables.update({key_of(v): v for v in other.unpack(tx)})
        others = [set(item_keys(tx, a)) for a in args]
        current = set(self.items)
        result = tx.run_python(getattr(current, name), *others)
        if name in self.MUTATING:  # `current` changed in place
            self.items = {key: variables[key] for key in _ordered(self.items, current)}
            self.changed(tx)
            return ConstantVariable(None)
        if isinstance(result, set):
            return SetVariable([variables[k] for k in _ordered(self.items, result)])
        return tx.wrap_constant_result(result, f"set.{name}()")

    def build(self, cg):
        items = list(self.items.values())
        if self.set_type is frozenset:
            cg.call_callable(frozenset, lambda: cg.build_sequence(items, "BUILD_SET"))
        else:
            cg.build_sequence(items, "BUILD_SET")
            cg.keep(self)

    def __repr__(self):
        return f"SetVariable({list(self.items)!r})"


def item_keys(tx, value: Variable) -> list:
    """The constants an iterable Variable holds (for set operations)."""
    return [key_of(v) for v in value.unpack(tx)]


def _ordered(existing: dict, result) -> list:
    """The items of a set result, those already in the set first in their order (as CPython
    keeps small sets of strings in no promised order, any order is right; this one is stable)."""
    kept = [k for k in existing if k in result]
    return kept + [k for k in result if k not in existing]
