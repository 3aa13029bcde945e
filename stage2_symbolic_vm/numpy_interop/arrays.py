"""An ndarray in the trace is a tensor: NdarrayVariable, and how arrays enter and leave.

`x.numpy()` and `np.asarray(x)` share the tensor's memory, and `torch.from_numpy(a)` the
array's: so an NdarrayVariable is the very node of the tensor it views, with NumPy's
type, attributes, methods and operators (torch/_dynamo/variables/tensor.py's
NumpyNdarrayVariable, a TensorVariable too). Only its Python face differs:

* an ndarray the function receives is read as `torch.from_numpy(L['a'])` (a
  NumpyTensorSource), which shares its memory, and guarded as that tensor (dtype, shape,
  strides), after its type;
* an ndarray that leaves the graph (returned, or alive at a graph break) is rebuilt with
  `.numpy()`, a real numpy.ndarray with NumPy's dtype; one the function received and
  returns as it is is read again, the same object;
* a 0-d result that NumPy gives as a scalar (`np.sum(a)`, `a.max()`, `a[0, 1]`) leaves as
  that scalar (np.float64); torch's Dynamo leaves it a 0-d array.
"""

import collections
import operator
import sys
import types
from dataclasses import dataclass

import torch

from .. import tensor_ops
from ..errors import ObservedAttributeError, Unsupported
from ..sources import Source
from ..variables import BoundMethodVariable, ConstantVariable, TensorVariable
from . import in_graph

# Ways to read an array's data into Python: a meta tensor has none (tensor_ops.DATA_OPS).
DATA_METHODS = {"item", "tolist", "tobytes", "tofile", "dump", "dumps", "__array__"}
DATA_METHODS |= {"__bool__", "__int__", "__float__", "__index__", "__complex__", "__repr__"}
DATA_METHODS |= {"__str__", "__format__"}


def numpy():
    """NumPy, where the program has imported it (stage 2 does not depend on it)."""
    return sys.modules.get("numpy")


def is_ndarray(value) -> bool:
    return numpy() is not None and type(value) is numpy().ndarray


def is_numpy_value(value) -> bool:
    """An ndarray, a NumPy scalar (scalars.py), or a function of NumPy's written in Python that
    torch._numpy has (`np.ones`, `np.full`): the VM calls torch._numpy's, and does not inline
    NumPy's code, whose C calls (`empty(..., device=...)`) torch._numpy does not take."""
    from .calls import numpy_path  # calls.py and scalars.py build on this file
    from .scalars import is_numpy_scalar

    python_function = isinstance(value, types.FunctionType) and bool(numpy_path(value))
    return is_ndarray(value) or is_numpy_scalar(value) or python_function


def wrap_numpy_value(tx, value, source):
    from .. import builder  # builder.py lists this maker among its WRAPPERS
    from .scalars import is_numpy_scalar, wrap_numpy_scalar

    if is_ndarray(value):
        return wrap_ndarray(tx, value, source)
    if is_numpy_scalar(value):
        return wrap_numpy_scalar(tx, value, source)
    return builder.wrap_other(tx, value, source)  # an ObjectVariable, called by its path


@dataclass(frozen=True)
class NumpyTensorSource(Source):
    """The tensor that shares the memory of the ndarray at `base` (torch/_dynamo's
    NumpyTensorSource), or holds the value of a NumPy scalar (`function="as_tensor"`): what
    the graph takes and the tensor guard checks."""

    base: Source
    function: str = "from_numpy"

    def name(self):
        return f"B.__import__('torch').{self.function}({self.base.name()})"

    def describe(self):
        kind = "ndarray" if self.function == "from_numpy" else "NumPy scalar"
        return f"the tensor of {kind} {self.base.describe()}"


def wrap_ndarray(tx, value, source):
    """An ndarray the function receives: its type, and the tensor of its memory as an input.
    One torch cannot share (an object or string dtype, a read-only or reversed array) stays an
    object the VM does not model, whose uses break."""
    from .. import builder  # builder.py lists this maker among its WRAPPERS

    shareable = value.dtype.isbuiltin and value.dtype.kind in "biufc" and value.flags.writeable
    if source is None or not shareable or any(s < 0 for s in value.strides):
        return builder.wrap_other(tx, value, source)
    try:
        tensor = torch.from_numpy(value)
    except TypeError:  # a dtype torch has no tensor of (float128, a byte-swapped one)
        return builder.wrap_other(tx, value, source)
    tx.trace.assume("type", source)
    var = builder.wrap_tensor(tx, tensor, NumpyTensorSource(source))
    return NdarrayVariable(var.node, var.meta, var.device, source=source)


def as_ndarray(tensor: TensorVariable, what: str) -> "NdarrayVariable":
    """`x.numpy()`, `np.asarray(x)`: the tensor's node with NumPy's face; eager's refusals
    (a tensor that needs grad, one on a GPU, a dtype NumPy lacks) stop the VM with a reason."""
    if isinstance(tensor, NdarrayVariable):
        return tensor
    refused = (
        tensor.meta.requires_grad and "it requires grad (call `.detach()` first)",
        tensor.device.type != "cpu" and f"it is on {tensor.device} (call `.cpu()` first)",
        in_graph.numpy_dtype(tensor.meta.dtype) is None and f"NumPy has no {tensor.meta.dtype}",
    )
    reason = next((r for r in refused if r), None)
    if reason is not None:
        raise Unsupported("untraceable_call", f"{what} of a tensor: {reason}")
    return NdarrayVariable(tensor.node, tensor.meta, tensor.device)


class NdarrayVariable(TensorVariable):
    """A NumPy array (or NumPy scalar, `scalar`) whose value is the tensor of `node`."""

    def __init__(self, node, meta, device, source=None, scalar=False):
        super().__init__(node, meta, device, source, type_=torch.Tensor)
        self.scalar = scalar and meta.dim() == 0

    def python_type(self):
        if self.scalar:
            return in_graph.numpy_dtype(self.meta.dtype).type
        return numpy().ndarray

    def get_attr(self, tx, name):
        """What torch._numpy's ndarray answers: a constant (`shape`, `ndim`, `size`), an array
        (`T`, `real`, recorded), a method, or NumPy's dtype."""
        from .calls import record  # calls.py builds on this file

        if name == "__class__":
            return tx.wrap(self.python_type(), None)
        if name == "dtype":
            return tx.wrap(in_graph.numpy_dtype(self.meta.dtype), None)
        found = getattr(in_graph.tnp.ndarray(self.meta), name, None)
        if found is None:
            if hasattr(numpy().ndarray, name):
                raise Unsupported("untraceable_call", f"torch._numpy has no `ndarray.{name}`")
            raise ObservedAttributeError(f"'numpy.ndarray' object has no attribute {name!r}")
        if callable(found):
            return BoundMethodVariable(self, name)
        if isinstance(found, in_graph.tnp.ndarray):
            return record(tx, in_graph.attribute(name), [self], {}, f"`ndarray.{name}`")
        return ConstantVariable(found)

    def call_method(self, tx, name, args, kwargs):
        from .calls import record  # calls.py builds on this file

        if name in DATA_METHODS:
            raise Unsupported("item_call", f"`ndarray.{name}()` reads the data of an array")
        return record(tx, in_graph.method(name), [self, *args], kwargs, f"`ndarray.{name}()`")

    def getitem(self, tx, key):
        from .calls import record, refuse_reversed_view  # calls.py builds on this file

        refuse_reversed_view(key, "`array[::-1]`")
        return record(tx, in_graph.operator(operator.getitem), [self, key], {}, "`array[...]`")

    def setitem(self, tx, key, value):
        """`a[i] = v` writes into the tensor, as NumPy writes into the array (casting `v`)."""
        if isinstance(value, TensorVariable) and not isinstance(value, NdarrayVariable):
            raise Unsupported("untraceable_call", "a torch.Tensor stored into a NumPy array")
        tensor_ops.record_call(tx, operator.setitem, [self, key, value], {})  # not NumPy's again

    def reconstruct(self, cg):
        if self.source is not None:  # the caller's own array, unchanged in identity
            cg.load_source(self.source)
            return
        convert = in_graph.to_numpy_scalar if self.scalar else in_graph.to_numpy
        cg.call_callable(convert, lambda: cg.load_node(self.node))

    def __repr__(self):
        kind = "NumpyScalar" if self.scalar else "Ndarray"
        return f"{kind}Variable({self.node!r}, {str(self.meta.dtype)[6:]}{list(self.meta.shape)})"


class AsNdarray(collections.namedtuple("AsNdarray", "node scalar")):
    """An ndarray in a trace's output: replayed (trace.map_nodes makes it anew from the
    tensor), it is that tensor as NumPy's array or scalar."""

    __slots__ = ()

    def __new__(cls, node, scalar):
        if isinstance(node, torch.Tensor):  # the replayed value: the function's result
            return in_graph.to_numpy_scalar(node) if scalar else in_graph.to_numpy(node)
        return super().__new__(cls, node, scalar)


def output_of(value):
    """What a trace's output holds for a tensor: its node, or an AsNdarray of it."""
    if isinstance(value, NdarrayVariable):
        return AsNdarray(value.node, value.scalar)
    return value.node
