"""Symbolic values: what the VM pushes on its stack instead of real Python objects.

Each class answers the few operations it supports (an attribute, an item, a
call, iteration, truth) and raises `Unsupported` with a reason for the rest,
like the VariableTracker subclasses of torch/_dynamo/variables/. The VM never
looks inside a value itself: it asks the value.

Stage 4 rebuilds the Python stack from these values at a graph break, so each
says how it can be rebuilt through `reconstruct_kind()`:

  "constant"   a Python constant: `as_python_constant()`
  "tensor"     a tensor computed by the trace: `.node`
  "source"     a value read from outside and not changed: `.source`
  "container"  a list, tuple or dict of values: `.items` (a list, or a dict for dicts)
  "null"       the NULL that CALL expects below a callable
  "method"     `getattr(.obj, .name)` (a bound method the VM split from its object)
  "function"   a function made inside the trace (MAKE_FUNCTION): `.code`, `.closure`, ...
  "iterator"   a partly consumed iterator: `.items[.index:]`
  "cell"       a closure cell made inside the trace: `.contents`

A value read from outside keeps its source even when it is also a constant or
a tensor; stage 4 prefers the source ("tensor" for tensors, since the node
is what the graph computes with).
"""

import operator
import types

import torch

from .errors import Unsupported
from .sources import AttrSource


class Variable:
    """A symbolic value. `source` is set when the value was read from outside the function."""

    source = None

    def reconstruct_kind(self) -> str:
        return "source" if self.source is not None else "unreconstructable"

    def python_type(self) -> type:
        raise Unsupported("unsupported_value", f"the type of {self} is not known to the VM")

    def is_python_constant(self) -> bool:
        return False

    def as_python_constant(self):
        raise Unsupported("unsupported_value", f"{self} is not a Python constant")

    def get_attr(self, tx, name: str) -> "Variable":
        raise Unsupported("unsupported_value", f"cannot read attribute {name!r} of {self}")

    def method(self, name: str) -> "Variable":
        """`xs.append`: a bound method of a list, tuple or dict, answered by `call_method`."""
        if not callable(getattr(self.python_type(), name, None)):
            raise Unsupported(
                "eager_error", f"{self.python_type().__name__} has no method {name!r}"
            )
        return BoundMethodVariable(self, name)

    def call(self, tx, args: list, kwargs: dict) -> "Variable":
        raise Unsupported("untraceable_call", f"cannot call {self}")

    def call_method(self, tx, name: str, args: list, kwargs: dict) -> "Variable":
        raise Unsupported("unsupported_value", f"cannot call method {name!r} of {self}")

    def getitem(self, tx, key: "Variable") -> "Variable":
        raise Unsupported("unsupported_value", f"cannot index {self}")

    def setitem(self, tx, key: "Variable", value: "Variable") -> None:
        raise Unsupported("unsupported_mutation", f"cannot assign an item of {self}")

    def unpack(self, tx) -> list:
        """The items, for iteration, unpacking and `*args`."""
        raise Unsupported("unsupported_value", f"cannot iterate over {self}")

    def next_item(self) -> "Variable | None":
        """The next item of an iterator (None when exhausted); only iterators answer."""
        raise Unsupported(
            "unsupported_value",
            f"cannot step {self} as an iterator: an iterator the function received keeps "
            "its position outside the trace",
        )

    def truth(self, tx) -> bool:
        raise Unsupported("unsupported_value", f"cannot test the truth of {self}")

    def __repr__(self):
        return f"{type(self).__name__}({self.source or ''})"


class NullVariable(Variable):
    """The NULL that LOAD_GLOBAL / LOAD_ATTR / PUSH_NULL put below a callable; an unbound local."""

    def reconstruct_kind(self):
        return "null"

    def __repr__(self):
        return "NULL"


NULL = NullVariable()


def is_constant_value(value) -> bool:
    """Values the VM treats as Python constants: immutable, compared by value."""
    if isinstance(value, (tuple, frozenset)):  # torch.Size is a tuple
        return all(is_constant_value(v) for v in value)
    if isinstance(value, slice):
        return all(is_constant_value(v) for v in (value.start, value.stop, value.step))
    return isinstance(value, CONSTANT_TYPES)


CONSTANT_TYPES = (
    *(int, float, bool, complex, str, bytes, range, type(None), type(...), type(NotImplemented)),
    *(torch.dtype, torch.device, torch.layout, torch.memory_format, types.CodeType),
)


class ConstantVariable(Variable):
    """A Python constant. Read from outside (`source` set), using its value is an assumption."""

    def __init__(self, value, source=None, trace=None):
        assert is_constant_value(value), value
        self.value, self.source, self.trace = value, source, trace

    def reconstruct_kind(self):
        return "constant"

    def python_type(self):
        return type(self.value)

    def is_python_constant(self):
        return True

    def as_python_constant(self):
        if self.source is not None:  # the trace now depends on this value: stage 3 guards it
            self.trace.assume("constant", self.source)
        return self.value

    def get_attr(self, tx, name):
        value = self.as_python_constant()
        if callable(getattr(value, name, None)):
            return BoundMethodVariable(self, name)
        return tx.wrap_constant_result(tx.run_python(getattr, value, name), f"attribute {name!r}")

    def call_method(self, tx, name, args, kwargs):
        # Constants are immutable, so any method of one is a pure function of constants.
        args, kwargs = constant_args(args, kwargs)
        result = tx.run_python(getattr(self.as_python_constant(), name), *args, **kwargs)
        return tx.wrap_constant_result(result, f"{type(self.value).__name__}.{name}()")

    def getitem(self, tx, key):
        value = tx.run_python(operator.getitem, self.as_python_constant(), key.as_python_constant())
        return ConstantVariable(value)

    def unpack(self, tx):
        return [ConstantVariable(v) for v in tx.run_python(list, self.as_python_constant())]

    def truth(self, tx):
        return bool(self.as_python_constant())

    def __repr__(self):
        return f"ConstantVariable({self.value!r})"


def constant_args(args, kwargs):
    return [a.as_python_constant() for a in args], {
        k: v.as_python_constant() for k, v in kwargs.items()
    }


class TensorVariable(Variable):
    """A tensor: the trace node that computes it and a meta tensor with its shape and dtype.

    Meta tensors have no device of their own (their device is "meta"), so the
    real device travels beside them. `fresh` says the tensor was created by the
    trace and is not a view of an input, so an in-place op on it changes
    nothing outside (torch/_dynamo tracks this through FakeTensor + functionalization).
    """

    # attributes that are plain Python values: shapes and dtypes are static in this stage
    CONSTANT_ATTRS = ("shape", "dtype", "ndim", "requires_grad", "layout")
    TENSOR_ATTRS = ("T", "mT", "H", "mH", "real", "imag")

    def __init__(self, node, meta, device, fresh, source=None, type_=torch.Tensor):
        self.node, self.meta, self.device, self.fresh = node, meta, device, fresh
        self.source, self.type_ = source, type_

    def reconstruct_kind(self):
        return "tensor"

    def python_type(self):
        return self.type_

    def get_attr(self, tx, name):
        if name == "device":
            return ConstantVariable(self.device)
        if name == "is_cuda":
            return ConstantVariable(self.device.type == "cuda")
        if name in self.CONSTANT_ATTRS:
            return ConstantVariable(getattr(self.meta, name))
        if name in self.TENSOR_ATTRS:
            return tx.record_call(getattr, [self, ConstantVariable(name)], {})
        if callable(getattr(torch.Tensor, name, None)):
            return BoundMethodVariable(self, name)
        raise Unsupported("unsupported_value", f"tensor attribute {name!r} is not modeled")

    def call_method(self, tx, name, args, kwargs):
        return tx.record_call(name, [self, *args], kwargs)

    def getitem(self, tx, key):
        return tx.record_call(operator.getitem, [self, key], {})

    def setitem(self, tx, key, value):
        tx.record_call(operator.setitem, [self, key, value], {})

    def unpack(self, tx):
        if self.meta.dim() == 0:
            raise Unsupported("eager_error", "iteration over a 0-d tensor")
        return [self.getitem(tx, ConstantVariable(i)) for i in range(self.meta.shape[0])]

    def truth(self, tx):
        raise Unsupported(
            "data_dependent_branch",
            f"branch on the value of tensor {self.node!r} (`if tensor:` or `if x.sum() > 0:`)",
        )

    def __repr__(self):
        return f"TensorVariable({self.node!r}, {str(self.meta.dtype)[6:]}{list(self.meta.shape)})"


class SequenceVariable(Variable):
    """Common ground of lists and tuples: a Python list of item Variables."""

    def __init__(self, items, source=None):
        self.items, self.source = list(items), source

    def reconstruct_kind(self):
        return "container"

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
            raise Unsupported("eager_error", f"{self.python_type().__name__} index is not an int")
        if not -len(self.items) <= index < len(self.items):
            raise Unsupported("eager_error", f"{self.python_type().__name__} index out of range")
        return self.items[index]

    def call_method(self, tx, name, args, kwargs):
        if name == "index" and not kwargs:
            keys = [item.as_python_constant() for item in self.items]
            return ConstantVariable(tx.run_python(keys.index, *constant_args(args, {})[0]))
        if name == "count" and len(args) == 1:
            keys = [item.as_python_constant() for item in self.items]
            return ConstantVariable(keys.count(args[0].as_python_constant()))
        return super().call_method(tx, name, args, kwargs)

    def __repr__(self):
        return f"{type(self).__name__}({self.items!r})"


class TupleVariable(SequenceVariable):
    """A tuple; `tuple_type` keeps a named tuple's class (`torch.return_types.max`)."""

    def __init__(self, items, source=None, tuple_type=tuple):
        super().__init__(items, source)
        self.tuple_type = tuple_type

    def python_type(self):
        return self.tuple_type


class ListVariable(SequenceVariable):
    """A list. One read from outside (`source` set) may not be changed: the change would be lost."""

    def python_type(self):
        return list

    def check_mutable(self, what):
        if self.source is not None:
            raise Unsupported(
                "unsupported_mutation",
                f"{what} changes {self.source.describe()}, a list from outside",
            )

    def setitem(self, tx, key, value):
        self.check_mutable("item assignment")
        index = key.as_python_constant()
        if isinstance(index, slice):
            self.items[index] = value.unpack(tx)
        else:
            self.getitem(tx, key)  # raises if out of range
            self.items[index] = value

    def call_method(self, tx, name, args, kwargs):
        if name in ("append", "extend", "pop", "insert", "reverse", "clear"):
            self.check_mutable(f"`list.{name}`")
        if name == "append" and len(args) == 1:
            self.items.append(args[0])
        elif name == "extend" and len(args) == 1:
            self.items.extend(args[0].unpack(tx))
        elif name == "insert" and len(args) == 2:
            self.items.insert(args[0].as_python_constant(), args[1])
        elif name == "pop" and len(args) <= 1:
            if not self.items:
                raise Unsupported("eager_error", "pop from empty list")
            return self.items.pop(*constant_args(args, {})[0])
        elif name == "reverse" and not args:
            self.items.reverse()
        elif name == "clear" and not args:
            self.items.clear()
        elif name == "copy" and not args:
            return ListVariable(self.items)
        else:
            return super().call_method(tx, name, args, kwargs)
        return ConstantVariable(None)


class DictVariable(Variable):
    """A dict with constant keys (strings, ints, ...) and Variable values."""

    def __init__(self, items: dict, source=None):
        self.items, self.source = dict(items), source

    def reconstruct_kind(self):
        return "container"

    def python_type(self):
        return dict

    def get_attr(self, tx, name):
        return self.method(name)

    def truth(self, tx):
        return bool(self.items)

    def unpack(self, tx):
        return [ConstantVariable(k) for k in self.items]

    def getitem(self, tx, key):
        k = key.as_python_constant()
        if k not in self.items:
            raise Unsupported("eager_error", f"KeyError: {k!r}")
        return self.items[k]

    def setitem(self, tx, key, value):
        if self.source is not None:
            raise Unsupported("unsupported_mutation", f"assignment into {self.source.describe()}")
        self.items[key.as_python_constant()] = value

    def call_method(self, tx, name, args, kwargs):
        if name in ("keys", "values", "items") and not args:
            if name == "keys":
                return DictViewVariable(self.unpack(tx), name)
            if name == "values":
                return DictViewVariable(list(self.items.values()), name)
            pairs = [TupleVariable([ConstantVariable(k), v]) for k, v in self.items.items()]
            return DictViewVariable(pairs, name)
        if name == "get" and 1 <= len(args) <= 2:
            default = args[1] if len(args) == 2 else ConstantVariable(None)
            return self.items.get(args[0].as_python_constant(), default)
        if name in ("update", "pop", "setdefault", "clear") and self.source is not None:
            raise Unsupported("unsupported_mutation", f"`dict.{name}` on {self.source.describe()}")
        if name == "update" and len(args) <= 1:
            self.items.update(args[0].items if args else {})
            self.items.update(kwargs)
            return ConstantVariable(None)
        if name == "pop" and len(args) == 1:
            self.getitem(tx, args[0])  # raises KeyError's Unsupported when missing
            return self.items.pop(args[0].as_python_constant())
        if name == "copy" and not args:
            return DictVariable(self.items)
        return super().call_method(tx, name, args, kwargs)

    def __repr__(self):
        return f"DictVariable({self.items!r})"


class DictViewVariable(Variable):
    """`d.keys()`, `d.values()`, `d.items()`: something to iterate over, not a value to return."""

    def __init__(self, items, kind):
        self.items, self.kind = items, kind

    def reconstruct_kind(self):
        return "unreconstructable"

    def unpack(self, tx):
        return list(self.items)


class IteratorVariable(Variable):
    """An iterator over a known list of items (range, list, zip, enumerate ...), unrolled."""

    def __init__(self, items):
        self.items, self.index = list(items), 0

    def reconstruct_kind(self):
        return "iterator"

    def next_item(self):
        """The next item, or None when the iterator is exhausted."""
        if self.index == len(self.items):
            return None
        self.index += 1
        return self.items[self.index - 1]

    def unpack(self, tx):
        rest, self.index = self.items[self.index :], len(self.items)
        return rest


class LazyVariable(Variable):
    """An outside value not yet read: wrapped (and assumed about) only when the code reads it.

    The root frame's arguments start like this, so an argument that the
    function never reads makes no assumption (torch/_dynamo: LazyVariableTracker).
    """

    def __init__(self, value, source):
        self.value, self.source = value, source

    def realize(self, tx):
        return tx.wrap(self.value, self.source)


class CellVariable(Variable):
    """A closure cell. `source` is set for a cell of a function from outside (read-only for us)."""

    def __init__(self, contents=None, source=None):
        self.contents, self.source = contents, source

    def reconstruct_kind(self):
        return "cell" if self.source is None else "source"


class BoundMethodVariable(Variable):
    """`obj.name`, a method of a tensor, list, dict or constant, answered by `call_method`."""

    def __init__(self, obj, name):
        self.obj, self.name = obj, name

    def reconstruct_kind(self):
        return "method"

    def call(self, tx, args, kwargs):
        return self.obj.call_method(tx, self.name, args, kwargs)

    def __repr__(self):
        return f"BoundMethodVariable({self.obj!r}.{self.name})"


class ObjectVariable(Variable):
    """An outside object the VM does not model (a class, a user object): it can only be passed on.

    Its identity can be relied on (`x is Foo`, `isinstance(v, Foo)`), which is an "id"
    assumption, unless it was found inside something already assumed (`torch.Tensor`: trace=None).
    """

    def __init__(self, value, source=None, trace=None):
        self.value, self.source, self.trace = value, source, trace

    def python_type(self):
        return type(self.value)

    def as_python_object(self):
        if self.trace is not None:
            self.trace.assume("id", self.source)
        return self.value

    def get_attr(self, tx, name):
        if isinstance(self.value, types.ModuleType) and hasattr(self.value, name):
            return tx.wrap(getattr(self.value, name), AttrSource(self.source, name))
        return super().get_attr(tx, name)

    def call(self, tx, args, kwargs):
        name = getattr(self.value, "__qualname__", type(self.value).__name__)
        module = getattr(self.value, "__module__", None)
        shown = f"{module}.{name}" if module else name
        raise Unsupported("untraceable_call", f"call to `{shown}`, which the VM cannot look inside")

    def __repr__(self):
        return f"ObjectVariable({type(self.value).__name__} {self.source or ''})"
