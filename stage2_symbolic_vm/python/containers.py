"""What lists, tuples, dicts and sets of Variables share: a key's hash, a method's call.

Each kind has its file (torch/_dynamo/variables/{lists,dicts,sets}.py): sequences.py
(lists, tuples, namedtuples), dicts.py (dicts and their views), sets.py (sets and
frozensets).

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

import inspect
import types

from ..errors import ObservedAttributeError, ObservedException, Unsupported
from ..variables import UNKNOWN, BoundMethodVariable, ConstantVariable, TensorVariable, Variable


def bound_method(value: Variable, name: str) -> Variable:
    """`xs.append`: a bound method of a list, tuple, dict or set, answered by `call_method`."""
    if not callable(getattr(value.python_type(), name, None)):
        raise ObservedAttributeError(f"{value.python_type().__name__} has no attribute {name!r}")
    return BoundMethodVariable(value, name)


def unhashable(kind: type) -> ObservedException:
    return ObservedException(TypeError(f"unhashable type: '{kind.__name__}'"))


class FakeIdVariable(Variable):
    """`id(obj)` of an object made in the trace: an int that exists only when the code runs.

    The trace may use it as CPython code uses an id: a dict key (copy.deepcopy's memo,
    `memo[id(x)]`), compared with another id. `key_of` gives it an `Address` key, equal
    only to another id of the same object; `==` is answered the same way
    (operators.py). Anything that needs the number itself (arithmetic, printing,
    returning it) is refused: a break with the reason. torch/_dynamo: FakeIdVariable."""

    def __init__(self, of: Variable):
        self.of = of  # the Variable of the object: one per object made in the trace

    def python_type(self):
        return int

    def __repr__(self):
        return f"id() of a {type(self.of).__name__} made in the trace"


class Address:
    """The dict key of an `id()` made in the trace: equal to another of the same object."""

    def __init__(self, of: Variable):
        self.of = of

    def __eq__(self, other):
        return isinstance(other, Address) and other.of is self.of

    def __hash__(self):
        return id(self.of)

    def __repr__(self):  # not the object's own: a memo holds its own id as a key
        return f"id(<{type(self.of).__name__} {id(self.of):#x}>)"


def key_of(var: Variable):
    """The Python object that hashes and compares as `var` does, as a dict key or a set item.

    A constant is itself, a tuple the tuple of its items' keys, a frozenset the frozenset of
    its items. An object compared by identity (a module, a tensor, an instance of a class
    without `__eq__`) is its object, or its Variable if it was made in the trace: one Variable
    per object, hashed by its id as the object is. Lists, dicts, sets, and instances of a
    class that sets `__hash__ = None` (one with `__eq__` and no `__hash__`) are unhashable,
    as in CPython; an object with a `__hash__` of its own is not modeled.
    """
    if isinstance(var, ContainerVariable):  # a tuple, a frozenset, or unhashable
        return var.hash_key()
    if isinstance(var, TensorVariable):  # Tensor.__hash__ is its id
        return var
    if isinstance(var, FakeIdVariable):
        return Address(var.of)
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
    if kind is types.BuiltinFunctionType and identity is not UNKNOWN:  # `len`, `operator.add`:
        return identity  # CPython's meth_hash and meth_richcompare, C code that runs no Python
    if kind.__hash__ not in (object.__hash__, type.__hash__):
        reason = f"a dict key or set item with its own __hash__ ({kind.__qualname__})"
        raise Unsupported("unsupported_value", reason)
    return var if identity is UNKNOWN else identity


def contents_of(tx, value, bases=None):
    """An instance of a builtin container's subclass as its contents (a Variable of the
    builtin: container_subclasses.py) where that builtin is among `bases` (None: any), else
    `value` itself: what a builtin's C code reads of such an instance (`[0] + path` is list's
    `+` on path's items). The class is asked first, so no other object is read."""
    base = value.builtin_base() if hasattr(value, "builtin_base") else None
    if base is None or (bases is not None and base not in bases):
        return value
    return value.items_var(tx)


def is_none(var: Variable) -> bool:
    return var.is_python_constant() and var.as_python_constant() is None


def call_method_of(table: dict, obj, tx, name: str, args: list, kwargs: dict):
    """`obj.name(*args, **kwargs)` by the table's function for it, whose signature is the
    method's own: arguments it does not take raise the TypeError CPython raises."""
    method = table[name]
    try:
        inspect.signature(method).bind(obj, tx, *args, **kwargs)
    except TypeError as error:
        raise ObservedException(TypeError(f"{name}(): {error}")) from None
    return method(obj, tx, *args, **kwargs)


class ContainerVariable(Variable):
    """A list, tuple, dict or set (or a dict's view). One read from outside is read again
    (the same object, whose changes side_effects.py writes back); one made in the trace is
    built."""

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

    def hash_key(self):
        """`key_of` this container: a list, dict, set or view is unhashable, as in CPython."""
        raise unhashable(self.python_type())

    def truth(self, tx):
        return bool(self.items)

    def changed(self, tx):
        if self.source is not None:
            tx.side_effects.mutate(self)

    MUTATING = frozenset()  # the methods that change the container

    def call_method(self, tx, name, args, kwargs):
        methods = self.methods()
        if name not in methods and hasattr(self.python_type(), name) and len(args) == 1:
            from . import container_subclasses  # it builds on this file

            if container_subclasses.is_operator(name):  # `xs.__iadd__(ys)`, `d.__or__(e)`
                return container_subclasses.call_builtin(tx, name, self, args, kwargs)
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


def where(source) -> str:
    return source.describe() if source is not None else "a value"
