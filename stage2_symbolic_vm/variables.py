"""Symbolic values: what the VM pushes on its stack instead of real Python objects.

Each class answers the few operations it supports (an attribute, an item, a
call, iteration, truth) and raises `Unsupported` with a reason for the rest,
like the VariableTracker subclasses of torch/_dynamo/variables/. The VM never
looks inside a value itself: it asks the value.

This file holds the protocol every kind answers, and the kinds a tiny model needs
besides its functions and modules (functions.py): constants, tensors, values not
read yet, closure cells and bound methods. The breadth of Python has its kinds in
python/: lists and tuples (sequences.py), dicts (dicts.py), sets (sets.py), their
shared base (containers.py), iterators and generators (iterators.py), instances of
user classes and objects the VM does not model (objects.py), method objects,
partials and `super()` (callables.py), exceptions (exceptions.py).

Stage 4 rebuilds Python values from these at a graph break: each Variable
says how with `reconstruct(cg)`, where `cg` is stage 4's code generator
(torch/_dynamo's `VariableTracker.reconstruct(codegen)`). A value read from
outside keeps its source, and is rebuilt by reading it again (so that it
stays the same object); a value made in the trace is rebuilt from its parts.
"""

import enum
import operator
import types

import torch

from .errors import CannotReconstruct, ObservedAttributeError, ObservedException, Unsupported

UNKNOWN = object()  # what `Variable.identity()` says of a value with no Python object yet


class Variable:
    """A symbolic value. `source` is set when the value was read from outside the function."""

    source = None

    def python_type(self) -> type:
        """Its identity's type, where that is known (a class, a builtin, a module)."""
        obj = self.identity()
        if obj is UNKNOWN:
            raise Unsupported("unsupported_value", f"the type of {self} is not known to the VM")
        return type(obj)

    def is_python_constant(self) -> bool:
        return False

    def as_python_constant(self):
        raise Unsupported("unsupported_value", f"{self} is not a Python constant")

    def get_attr(self, tx, name: str) -> "Variable":
        raise Unsupported("unsupported_value", f"cannot read attribute {name!r} of {self}")

    def set_attr(self, tx, name: str, value: "Variable") -> None:
        raise Unsupported("unsupported_mutation", f"cannot assign attribute {name!r} of {self}")

    def call(self, tx, args: list, kwargs: dict) -> "Variable":
        raise Unsupported("untraceable_call", f"cannot call {self}")

    def bound_to(self, obj: "Variable") -> "Variable":
        """`types.MethodType(self, obj)`: a method whose call calls this value with `obj` first
        (UserFunctionVariable binds its own way)."""
        from .python.callables import MethodVariable  # callables.py builds on this file

        return MethodVariable(self, obj)

    def call_method(self, tx, name: str, args: list, kwargs: dict) -> "Variable":
        raise Unsupported("unsupported_value", f"cannot call method {name!r} of {self}")

    def getitem(self, tx, key: "Variable") -> "Variable":
        raise Unsupported("unsupported_value", f"cannot index {self}")

    def setitem(self, tx, key: "Variable", value: "Variable") -> None:
        raise Unsupported("unsupported_mutation", f"cannot assign an item of {self}")

    def unpack(self, tx) -> list:
        """The items, for iteration, unpacking and `*args`."""
        raise Unsupported("unsupported_value", f"cannot iterate over {self}")

    def iterate(self, tx) -> "Variable":
        """`iter(value)`: an iterator Variable over it (iterators are their own iterator)."""
        from .python.iterators import ListIteratorVariable

        return ListIteratorVariable(self.unpack(tx))

    def next_item(self, tx) -> "Variable | None":
        """The next item of an iterator (None when exhausted); only iterators answer."""
        raise Unsupported(
            "unsupported_value",
            f"cannot step {self} as an iterator: an iterator the function received keeps "
            "its position outside the trace",
        )

    def truth(self, tx) -> bool:
        raise Unsupported("unsupported_value", f"cannot test the truth of {self}")

    def identity(self):
        """The Python object this value stands for when `is` compares it (UNKNOWN: made in
        the trace, or not modeled)."""
        return UNKNOWN

    def reconstruct(self, cg) -> None:
        """Push this value's Python object on stage 4's stack (see the module docstring)."""
        if self.source is not None:
            cg.load_source(self.source)
            return
        if self.identity() is not UNKNOWN:  # an object from before the call (a class in a set
            cg.load_const(self.identity())  # read from outside): the new code holds it itself
            return
        raise CannotReconstruct(f"{self} exists only inside the trace")

    def __repr__(self):
        return f"{type(self).__name__}({self.source or ''})"


class NullVariable(Variable):
    """The NULL that LOAD_GLOBAL / LOAD_ATTR / PUSH_NULL put below a callable; an unbound local."""

    def reconstruct(self, cg):
        cg.push_null()

    def __repr__(self):
        return "NULL"


NULL = NullVariable()


def is_constant_value(value) -> bool:
    """Values the VM treats as Python constants: immutable, compared by value (or singletons)."""
    if type(value) is frozenset or (isinstance(value, tuple) and not hasattr(value, "_fields")):
        return all(is_constant_value(v) for v in value)  # torch.Size is a tuple
    if isinstance(value, slice):
        return all(is_constant_value(v) for v in (value.start, value.stop, value.step))
    return isinstance(value, CONSTANT_TYPES)


def compared_by_identity(value) -> bool:
    """Is `value == other` the same as `value is other` (a class, a function, a plain object)?"""
    kind = type(value)
    return kind.__eq__ is object.__eq__ and kind.__hash__ is object.__hash__


CONSTANT_TYPES = (
    *(int, float, bool, complex, str, bytes, range, type(None), type(...), type(NotImplemented)),
    *(torch.dtype, torch.device, torch.layout, torch.memory_format, types.CodeType),
    *(torch.finfo, torch.iinfo),  # `torch.finfo(x.dtype).min`: made anew each call, read-only
    enum.Enum,  # members are singletons, compared by identity
)


class ConstantVariable(Variable):
    """A Python constant. Read from outside (`source` set), using its value is an assumption."""

    def __init__(self, value, source=None, trace=None):
        assert is_constant_value(value), value
        self.value, self.source, self.trace = value, source, trace

    def python_type(self):
        return type(self.value)

    def is_python_constant(self):
        return True

    def as_python_constant(self):
        if self.source is not None:  # the trace now depends on this value: stage 3 guards it
            self.trace.assume("constant", self.source)
        return self.value

    def identity(self):
        return self.as_python_constant()

    def get_attr(self, tx, name):
        from .python.constants import attribute  # constants.py builds on this file

        return attribute(tx, self, name)  # `(2.5).real`, `"a,b".split`

    def call_method(self, tx, name, args, kwargs):
        from .python.constants import fold_method  # constants.py builds on this file

        return fold_method(tx, self, name, args, kwargs)  # `"a,b".split(",")`: run now

    def getitem(self, tx, key):
        value = tx.run_python(operator.getitem, self.as_python_constant(), key.as_python_constant())
        return ConstantVariable(value)

    def setitem(self, tx, key, value):  # constants are immutable
        kind = type(self.as_python_constant()).__name__
        raise ObservedException(TypeError(f"'{kind}' object does not support item assignment"))

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
    real device travels beside them (torch/_dynamo uses FakeTensors, meta
    tensors that also remember a device).
    """

    # attributes that are plain Python values: shapes and dtypes are static in this stage
    CONSTANT_ATTRS = ("shape", "dtype", "ndim", "requires_grad", "layout", "is_leaf")
    CONSTANT_ATTRS += ("is_sparse", "is_quantized", "is_meta", "is_nested")
    TENSOR_ATTRS = ("T", "mT", "H", "mH", "real", "imag", "data")

    def __init__(self, node, meta, device, source=None, type_=torch.Tensor):
        self.node, self.meta, self.device = node, meta, device
        self.source, self.type_ = source, type_

    def python_type(self):
        return self.type_

    def get_attr(self, tx, name):
        if name == "device":
            return ConstantVariable(self.device)
        if name in ("is_cuda", "is_cpu"):  # `x.is_cuda`: "cuda", of the real device
            return ConstantVariable(self.device.type == name.removeprefix("is_"))
        if name == "__class__":
            return tx.wrap(self.type_, None)
        if name == "shape" and tx.trace.shapes.active:  # sizes may be symbols: as `x.size()`
            return tx.record_call("size", [self], {})
        if name in self.CONSTANT_ATTRS:
            return ConstantVariable(getattr(self.meta, name))
        if name in self.TENSOR_ATTRS:
            return tx.record_call(getattr, [self, ConstantVariable(name)], {})
        if callable(getattr(torch.Tensor, name, None)):
            return BoundMethodVariable(self, name)
        if not hasattr(torch.Tensor, name):
            raise ObservedAttributeError(f"'Tensor' object has no attribute {name!r}")
        raise Unsupported("unsupported_value", f"tensor attribute {name!r} is not modeled")

    def call_method(self, tx, name, args, kwargs):
        if name == "type":  # `x.type()` names the real device's tensor type
            from .like_eager.devices import tensor_type  # devices.py builds on this file

            return tensor_type(tx, self, args, kwargs)
        return tx.record_call(name, [self, *args], kwargs)

    def getitem(self, tx, key):
        return tx.record_call(operator.getitem, [self, key], {})

    def setitem(self, tx, key, value):
        tx.record_call(operator.setitem, [self, key, value], {})

    def unpack(self, tx):
        if self.meta.dim() == 0:
            raise ObservedException(TypeError("iteration over a 0-d tensor"))
        length = int(self.meta.shape[0])  # a symbolic length is specialised (and guarded)
        return [self.getitem(tx, ConstantVariable(i)) for i in range(length)]

    def truth(self, tx):
        raise Unsupported(
            "data_dependent_branch",
            f"branch on the value of tensor {self.node!r} (`if tensor:` or `if x.sum() > 0:`)",
        )

    def reconstruct(self, cg):
        cg.load_node(self.node)

    def __repr__(self):
        return f"TensorVariable({self.node!r}, {str(self.meta.dtype)[6:]}{list(self.meta.shape)})"


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

    def reconstruct(self, cg):
        cg.load_cell(self)


class BoundMethodVariable(Variable):
    """`obj.name`, a method of a tensor, list, dict or constant, answered by `call_method`."""

    def __init__(self, obj, name):
        self.obj, self.name = obj, name

    def call(self, tx, args, kwargs):
        return self.obj.call_method(tx, self.name, args, kwargs)

    def get_attr(self, tx, name):
        from .python.callables import method_attribute  # callables.py builds on this file

        return method_attribute(self, name)  # `a.pop.__name__`, which assertRaises reads

    def reconstruct(self, cg):
        cg.reconstruct(self.obj)
        cg.load_attr(self.name)

    def __repr__(self):
        return f"BoundMethodVariable({self.obj!r}.{self.name})"
