"""NumPy calls in the trace: `np.fn(...)`, an array's methods and operators, conversions.

Every tensor operation the VM records passes through `record_call` (the VM's
`tx.record_call`): where an ndarray takes part, it is recorded as NumPy's operation
instead (in_graph.py), and `x.numpy()`, `torch.from_numpy(a)` and `torch.as_tensor(a)`
are the same node seen from the other side. A call of a NumPy function reaches
`call_function` from the object the VM holds for it (python/outside_objects.py).

Each NumPy operation is first run on the meta tensors alone: what torch._numpy cannot
do there (a boolean mask, whose result's size is in the data; an argument it does not
take) stops the VM with its reason, and a question about metadata (`np.shape(a)`,
`np.ndim(a)`) is answered now. torch/_dynamo/variables/misc.py (NumpyVariable) and
tensor.py (NumpyNdarrayVariable) do the same, except that Dynamo runs FakeTensors.
NumPy's random generator is left out, as in torch.compile (whose
`use_numpy_random_stream` is off by default): its calls break, because the graph would
draw other numbers than NumPy's.
"""

import torch

from .. import tensor_ops
from ..errors import Unsupported
from ..functions import is_torch_function
from ..python.outside_objects import exact_type
from ..python.sequences import ListVariable, TupleVariable
from ..trace import target_name
from ..variables import ConstantVariable, TensorVariable, is_constant_value
from . import in_graph
from .arrays import NdarrayVariable, as_ndarray, is_ndarray, numpy

# The torch functions that take an ndarray and share its memory (torch.tensor copies it).
SHARING = (torch.from_numpy, torch.as_tensor, torch.asarray)
# What NumPy gives back as the very array it was given, where torch does too.
SAME_ARRAY = {"numpy_asarray", "numpy_asanyarray", "numpy_ascontiguousarray", "ndarray_view"}
# NumPy's functions and methods whose 0-d result is an array: NumPy gives every other
# 0-d result (of a ufunc, a reduction, an index) as a scalar.
ARRAY_RESULTS = {"array", "asarray", "asanyarray", "ascontiguousarray", "copy", "reshape"}
ARRAY_RESULTS |= {"zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like"}
ARRAY_RESULTS |= {"full_like", "astype", "squeeze", "transpose", "view", "atleast_1d"}
ARRAY_RESULTS |= {"atleast_2d", "atleast_3d", "ravel", "flatten", "swapaxes", "moveaxis"}


def numpy_path(value) -> str | None:
    """Where torch._numpy has NumPy function `value` (`"sum"`, `"linalg.norm"`), or None: not
    NumPy's, a class (`np.float32(x)`), the random generator, or one torch._numpy lacks."""
    np = numpy()
    module, name = getattr(value, "__module__", None) or "", getattr(value, "__name__", "")
    if np is None or isinstance(value, type) or module.split(".")[0] != "numpy":
        return None
    path = name if module.count(".") == 0 else f"{module.split('.')[-1]}.{name}"
    if path.startswith("random.") or lookup(np, path) is not value:
        return None
    return path if lookup(in_graph.tnp, path) is not None else None


def lookup(namespace, path: str):
    for part in path.split("."):
        namespace = getattr(namespace, part, None)
    return namespace


def call_function(tx, path: str, args: list, kwargs: dict):
    """`np.<path>(*args, **kwargs)`. Given no array or tensor, NumPy computes it now: a number
    is a constant, an array becomes a node that makes it (`np.arange(4)`)."""
    shown = f"`numpy.{path}`"
    args, kwargs = dtype_arguments(args), dtype_keywords(kwargs)
    tensors = tensor_ops.tensor_variables([*args, *kwargs.values()])
    if not tensors:
        return made_from_constants(tx, path, args, kwargs, shown)
    arrays = {id(t): as_ndarray(t, shown) for t in tensors}  # NumPy converts a tensor so
    args = [arrays.get(id(a), a) for a in args]
    kwargs = {k: arrays.get(id(v), v) for k, v in kwargs.items()}
    return record(tx, in_graph.function(path), args, kwargs, shown, path not in ARRAY_RESULTS)


def made_from_constants(tx, path, args, kwargs, shown):
    held = [v.value for v in [*args, *kwargs.values()] if is_ndarray(getattr(v, "value", None))]
    if held:  # arrays.wrap_ndarray left it an object: NumPy's C code would run on it
        dtype = held[0].dtype
        why = f"dtype {dtype}" if dtype.kind not in "biufc" else "read-only or reversed"
        raise Unsupported("untraceable_call", f"{shown} of an array torch cannot share ({why})")
    values, named = tensor_ops.to_values(args, True), tensor_ops.to_values(kwargs, True)
    result = tx.run_python(lookup(numpy(), path), *values, **named)
    if not isinstance(result, numpy().ndarray):
        return tx.wrap_constant_result(result, shown)  # `np.prod((2, 3))`, `np.float64(2.0)`
    if tx.trace.shapes.active:  # its meta tensor would meet FakeTensors
        raise Unsupported("untraceable_call", f"{shown} of constants, in a trace with symbols")
    target = in_graph.function(path)
    with torch.device("meta"):
        meta = target(*values, **named)
    node = tx.trace.add_node("call_function", target, values, named, meta=meta, lineno=tx.lineno)
    return NdarrayVariable(node, meta, torch.device("cpu"), scalar=path not in ARRAY_RESULTS)


def dtype_arguments(values) -> list:
    """NumPy's dtypes and scalar types (`np.float32`, `a.dtype`, `float`) as their names,
    which torch._numpy takes and a graph can hold (torch/_dynamo passes names too)."""
    np = numpy()
    converted = []
    for value in values:
        kind = None if value.is_python_constant() else exact_type(value)  # no assumption yet
        dtype_like = kind is type or (kind is not None and issubclass(kind, np.dtype))
        found = value.identity() if dtype_like else None
        scalar_type = isinstance(found, type) and issubclass(found, np.generic)  # np.float32
        if isinstance(found, np.dtype) or scalar_type or found in (bool, int, float, complex):
            value = ConstantVariable(np.dtype(found).name)
        converted.append(value)
    return converted


def dtype_keywords(kwargs: dict) -> dict:
    return dict(zip(kwargs, dtype_arguments(kwargs.values()), strict=True))


def record(tx, target, args, kwargs, shown, scalar=True):
    """Record NumPy's operation `target` (in_graph.py) on arrays; its arrays are ndarrays
    (`scalar`: a 0-d one is NumPy's scalar)."""
    args, kwargs = dtype_arguments(args), dtype_keywords(kwargs)
    if tx.trace.shapes.active:  # FakeTensors need their mode: recorded, they run in it
        return arrays_of(tensor_ops.record_call(tx, target, args, kwargs), scalar)
    tensors = tensor_ops.tensor_variables([*args, *kwargs.values()])
    versions = [t.meta._version for t in tensors]
    found = run_on_meta(target, args, kwargs, shown)
    wrote = [t.meta._version for t in tensors] != versions
    if found is None and wrote:  # `a.fill(0)`: recorded as the array it changes
        tensor_ops.record_call(tx, in_graph.in_place(target), args, kwargs)
        return ConstantVariable(None)
    if not tensor_ops.tensors_in_meta(found):
        if is_constant_value(found):  # `np.shape(a)`, `np.ndim(a)`: metadata, static here
            return ConstantVariable(found)
        raise Unsupported("untraceable_call", f"{shown} gives a {type(found).__name__}")
    result = tensor_ops.record_call(tx, target, args, kwargs)
    if any(result is t for t in tensors) and not wrote and target.__name__ not in SAME_ARRAY:
        # torch gave back its input (`x.to(x.dtype)`), NumPy a new array (`a.astype(a.dtype)`)
        result = tensor_ops.record_call(tx, "clone", [TensorVariable(*plain(result))], {})
    return arrays_of(result, scalar)


def plain(array):
    return array.node, array.meta, array.device


def run_on_meta(target, args, kwargs, shown):
    try:
        return target(*tensor_ops.to_values(args, True), **tensor_ops.to_values(kwargs, True))
    except (NotImplementedError, RuntimeError, TypeError, ValueError, IndexError) as error:
        # a shape error of the program's own breaks too: eager then raises it
        reason = f"{shown}: torch._numpy cannot trace it here ({type(error).__name__}: {error})"
        raise Unsupported("untraceable_call", reason.split("\n")[0]) from None


def arrays_of(result, scalar: bool):
    """The tensors of a NumPy result as ndarrays (a tuple of them: `np.linalg.eigh(a)`)."""
    if isinstance(result, NdarrayVariable):
        return result  # an in-place operator (`a += 1`) gives back its array
    if isinstance(result, TensorVariable):
        return NdarrayVariable(result.node, result.meta, result.device, scalar=scalar)
    items = [arrays_of(item, scalar) for item in result.items]
    return ListVariable(items) if isinstance(result, ListVariable) else TupleVariable(items)


def record_call(tx, target, args, kwargs):
    """`tx.record_call`: a tensor operation, or NumPy's where an ndarray takes part."""
    args, kwargs = list(args), dict(kwargs)
    tensors = tensor_ops.tensor_variables([*args, *kwargs.values()])
    arrays = [t for t in tensors if isinstance(t, NdarrayVariable)]
    if target == "numpy" and not arrays and not kwargs.get("force", ConstantVariable(0)).truth(tx):
        return as_ndarray(args[0], "`.numpy()`")  # the same memory, seen as an ndarray
    if not arrays:
        return tensor_ops.record_call(tx, target, args, kwargs)
    shown = f"`.{target}()`" if isinstance(target, str) else f"`{target_name(target)}`"
    if not isinstance(target, str) and is_torch_function(target):
        return torch_call(tx, target, args, kwargs, shown)
    if len(arrays) != len(tensors):  # `t + a` gives a tensor, `a + t` raises: not modeled
        raise Unsupported("untraceable_call", f"{shown} mixes a NumPy array and a torch.Tensor")
    if isinstance(target, str):
        return arrays[0].call_method(tx, target, args[1:], kwargs)
    return record(tx, in_graph.operator(target), args, kwargs, shown)  # `a + 1`, `abs(a)`


def torch_call(tx, target, args, kwargs, shown):
    """`torch.from_numpy(a)`, `torch.as_tensor(a)`: the array's tensor; `torch.tensor(a)` a
    copy of it. Other torch functions take no ndarray (eager raises a TypeError)."""
    array, *rest = args
    if not isinstance(array, NdarrayVariable) or target not in (*SHARING, torch.tensor):
        raise Unsupported("untraceable_call", f"{shown} given a NumPy array")
    if target is torch.from_numpy and array.scalar:  # eager: a NumPy scalar is no array
        raise Unsupported("untraceable_call", f"{shown} given a NumPy scalar")
    tensor = TensorVariable(*plain(array))
    if target is torch.tensor:
        tensor = tensor_ops.record_call(tx, "clone", [tensor], {})
    if not rest and not kwargs:
        return tensor
    return tensor_ops.record_call(tx, torch.as_tensor, [tensor, *rest], kwargs)  # `dtype=`
