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

import warnings

import torch
from torch.utils._pytree import tree_map_only

from .. import tensor_ops
from ..errors import Unsupported
from ..functions import is_torch_function
from ..python.outside_objects import ObjectVariable, exact_type
from ..python.sequences import ListVariable, SequenceVariable, TupleVariable
from ..trace import target_name
from ..variables import ConstantVariable, TensorVariable, Variable, is_constant_value
from . import in_graph, scalars
from .arrays import NdarrayVariable, as_ndarray, is_ndarray, numpy

# The torch functions that take an ndarray and share its memory (torch.tensor copies it).
SHARING = (torch.from_numpy, torch.as_tensor, torch.asarray)
# torch's legacy constructors of a list: `torch.LongTensor([a[0], a[2]])` is a torch.tensor.
LEGACY = {torch.LongTensor: torch.int64, torch.IntTensor: torch.int32, torch.BoolTensor: torch.bool}
LEGACY |= {torch.FloatTensor: torch.float32, torch.DoubleTensor: torch.float64}
# What NumPy gives back as the very array it was given, where torch does too.
SAME_ARRAY = {"numpy_asarray", "numpy_asanyarray", "numpy_ascontiguousarray", "ndarray_view"}
# NumPy's functions that give a view with a negative stride (refuse_reversed_view).
REVERSED_VIEWS = {"flip", "fliplr", "flipud", "rot90"}
# NumPy orders complex numbers (by the real part, then the imaginary); torch has no kernel.
ORDERING = {"lt", "le", "gt", "ge", "less", "less_equal", "greater", "greater_equal", "max"}
ORDERING |= {"min", "amax", "amin", "maximum", "minimum", "fmax", "fmin", "argmax", "argmin"}
ORDERING |= {"sort", "argsort", "clip", "ptp", "median", "percentile", "quantile", "floor"}
ORDERING |= {"ceil", "trunc", "floor_divide", "floordiv", "remainder", "mod", "ifloordiv", "imod"}
# NumPy's functions and methods whose 0-d result is an array: NumPy gives every other
# 0-d result (of a ufunc, a reduction, an index) as a scalar.
ARRAY_RESULTS = {"array", "asarray", "asanyarray", "ascontiguousarray", "copy", "reshape"}
ARRAY_RESULTS |= {"zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like"}
ARRAY_RESULTS |= {"full_like", "astype", "squeeze", "transpose", "view", "atleast_1d"}
ARRAY_RESULTS |= {"atleast_2d", "atleast_3d", "ravel", "flatten", "swapaxes", "moveaxis"}


def numpy_path(value) -> str | None:
    """Where torch._numpy has NumPy function `value` (`"sum"`, `"linalg.norm"`, a scalar type
    `"float32"`, `"dtype"`), or None: not NumPy's, another class, the random generator, or
    one torch._numpy lacks."""
    np = numpy()
    module, name = getattr(value, "__module__", None) or "", getattr(value, "__name__", "")
    if np is None or module.split(".")[0] != "numpy" or not is_numpy_callable(np, value):
        return None
    path = name if module.count(".") == 0 else f"{module.split('.')[-1]}.{name}"
    if path.startswith("random.") or lookup(np, path) is not value:
        return None
    return path if lookup(in_graph.tnp, path) is not None else None


def is_numpy_callable(np, value) -> bool:
    """A function, a scalar type (`np.float32(2.0)`, `np.float32(a)`) or `np.dtype`."""
    if not isinstance(value, type):
        return True
    return value is np.dtype or (issubclass(value, np.generic) and is_concrete(np, value))


def is_concrete(np, scalar_type) -> bool:
    try:
        return np.dtype(scalar_type).type is scalar_type  # not np.integer, np.floating
    except TypeError:
        return False


def hands_back_to_torch(function) -> bool:
    """Does NumPy's `function`, given a torch.Tensor, answer with torch's answer? A ufunc wraps
    its result in a tensor again (`np.exp(t)` is a tensor, `np.isnan(t)` a uint8 one), and
    fromnumeric.py's functions call the tensor's method of that name (`np.sum(t)` calls
    `t.sum(axis=None)`, a TypeError). The rest convert it (`np.where(t > 0, t, 0)` is an
    ndarray), as torch._numpy does."""
    if isinstance(function, numpy().ufunc):
        return True
    code = getattr(getattr(function, "_implementation", function), "__code__", None)
    return code is not None and code.co_filename.endswith("fromnumeric.py")


def draws_from_numpy_random(value) -> bool:
    """`np.random.rand`, `np.random.default_rng(0)`, `rng.normal(...)`: NumPy's generators."""
    owner = getattr(value, "__self__", None)
    modules = (getattr(value, "__module__", None), type(owner).__module__ if owner else None)
    return any((module or "").startswith("numpy.random") for module in modules)


def compare_dtype(fn, dtype, other):
    """`a.dtype == np.float64`, `a.dtype != "int32"`: a NumPy dtype cannot change, so its
    comparison with a constant, a scalar type or another dtype is answered now (None: not a
    dtype, or `other` is not known now)."""
    if numpy() is None or not isinstance(dtype, numpy().dtype):
        return None
    if other.is_python_constant():
        return ConstantVariable(fn(dtype, other.as_python_constant()))
    if isinstance(other, ObjectVariable):  # a scalar type (`np.float64`), a dtype
        return ConstantVariable(fn(dtype, other.identity()))
    return None


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
    plain_tensors = [t for t in tensors if not isinstance(t, NdarrayVariable)]
    if plain_tensors and hands_back_to_torch(lookup(numpy(), path)):
        why = "NumPy hands it back to torch (the tensor's own method, or __array_wrap__)"
        raise Unsupported("untraceable_call", f"{shown} given a torch.Tensor: {why}")
    if path in REVERSED_VIEWS:  # `np.flip(a)`: a view with a negative stride
        refuse_reversed_view(ConstantVariable(slice(None, None, -1)), shown)
    if path in ("array", "asarray") and stacks(args, kwargs):
        path = "stack"  # `np.array([a, b])`: torch._numpy would read the arrays' data
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
    values = [v.identity() if isinstance(v, ObjectVariable) else v for v in args]  # np.integer
    values = [tensor_ops.to_values(v, True) if isinstance(v, Variable) else v for v in values]
    named = tensor_ops.to_values(kwargs, True)
    result = tx.run_python(lookup(numpy(), path), *values, **named)
    if isinstance(result, numpy().generic) and not is_constant_value(result):
        return scalars.scalar_array(tx, result)  # `np.float32(2.0)`: NumPy's scalar
    if isinstance(result, numpy().dtype):
        return tx.wrap(result, None)  # `np.dtype("float")`
    if not isinstance(result, numpy().ndarray):
        return tx.wrap_constant_result(result, shown)  # `np.prod((2, 3))`, `np.float64(2.0)`
    if in_graph.torch_dtype(result.dtype) is None:  # `np.asarray(["L", "U"])`
        raise Unsupported("untraceable_call", f"{shown} gives an array of {result.dtype}")
    if tx.trace.shapes.active:  # its meta tensor would meet FakeTensors
        raise Unsupported("untraceable_call", f"{shown} of constants, in a trace with symbols")
    target = in_graph.function(path)
    made = run_on_values(target, values, named, shown)  # on the CPU: `np.full(3, 7)` reads 7
    meta = torch.empty_strided(made.shape, made.stride(), dtype=made.dtype, device="meta")
    node = tx.trace.add_node("call_function", target, values, named, meta=meta, lineno=tx.lineno)
    return NdarrayVariable(node, meta, torch.device("cpu"), scalar=path not in ARRAY_RESULTS)


def refuse_reversed_view(key, shown):
    """NumPy's `a[::-1]` (and `np.flip(a)`) is a view with a negative stride, which a torch
    tensor cannot have: torch._numpy copies, and a write through the copy would not reach
    `a` (torch.compile writes into the copy). The VM stops before it: NumPy makes the view."""
    parts = key.as_python_constant() if key.is_python_constant() else None
    parts = parts if isinstance(parts, tuple) else (parts,)
    if any(isinstance(p, slice) and p.step is not None and p.step < 0 for p in parts):
        why = "NumPy's view has a negative stride, which no torch tensor has"
        raise Unsupported("untraceable_call", f"{shown}: {why}")


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
        scalar_type = scalar_type and is_concrete(np, found)  # not np.integer
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
    args = scalars.strong_scalars(tx, args)  # an np.float64 promotes as NumPy's, not a float
    kwargs = dict(zip(kwargs, scalars.strong_scalars(tx, list(kwargs.values())), strict=True))
    if tx.trace.shapes.active:  # FakeTensors need their mode: recorded, they run in it
        return arrays_of(tensor_ops.record_call(tx, target, args, kwargs), scalar)
    tensors = tensor_ops.tensor_variables([*args, *kwargs.values()])
    if target.__name__.split("_", 1)[1].strip("_") in ORDERING and any(
        t.meta.dtype.is_complex for t in tensors
    ):
        raise Unsupported("untraceable_call", f"{shown} orders complex numbers, as torch does not")
    versions = [t.meta._version for t in tensors]
    found = run_on_meta(target, args, kwargs, shown)
    check_kernels(target, args, kwargs, shown)
    wrote = [t.meta._version for t in tensors] != versions
    if found is None and wrote:  # `a.fill(0)`: recorded as the array it changes
        tensor_ops.record_call(tx, in_graph.in_place(target), args, kwargs)
        return ConstantVariable(None)
    if not tensor_ops.tensors_in_meta(found):
        if is_constant_value(found):  # `np.shape(a)`, `np.ndim(a)`: metadata, static here
            return ConstantVariable(found)
        raise Unsupported("untraceable_call", f"{shown} gives a {type(found).__name__}")
    result = tensor_ops.record_call(tx, target, args, kwargs)
    same = target.__name__ in SAME_ARRAY and not getattr(result, "scalar", False)
    if any(result is t for t in tensors) and not wrote and not same:
        # torch gave back its input (`x.to(x.dtype)`), NumPy a new array (`a.astype(a.dtype)`,
        # `np.asarray(a.sum())`: a 0-d array of NumPy's scalar)
        result = tensor_ops.record_call(tx, "clone", [TensorVariable(*plain(result))], {})
    return arrays_of(result, scalar)


def plain(array):
    return array.node, array.meta, array.device


def plain_scalar(item):
    """A NumPy scalar given to torch in a list: the 0-d tensor of its value and dtype."""
    if isinstance(item, NdarrayVariable):
        return TensorVariable(*plain(item)) if item.scalar else None
    return None if isinstance(item, TensorVariable) else item


def run_on_meta(target, args, kwargs, shown):
    """`target` on meta tensors: the values of the arguments (Variables)."""
    args, kwargs = tensor_ops.to_values(args, True), tensor_ops.to_values(kwargs, True)
    return run_on_values(target, args, kwargs, shown)


def check_kernels(target, args, kwargs, shown):
    """Does torch have the CPU kernels torch._numpy calls here? A meta tensor does not say:
    `np.cumsum` of a bool array is NumPy's int64 sum, but torch's cumsum has no bool kernel;
    torch refuses `-` of bools with another error than NumPy's. So the operation runs once
    more, on tensors of one element of the same dtypes (an error of the shapes, which such
    tensors would meet, is not this question)."""
    small = tree_map_only(
        torch.Tensor,
        lambda m: torch.ones((1,) * m.dim(), dtype=m.dtype),
        (tensor_ops.to_values(args, True), tensor_ops.to_values(kwargs, True)),
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            target(*small[0], **small[1])
        return
    except Exception as error:  # any error of the stand-ins (`a.reshape(2, 6)`) but these
        if not any(words in str(error) for words in ("not implemented for", "not supported")):
            return
        why = str(error).split("\n")[0]  # `bool_array - False`: NumPy's TypeError, torch's
    raise Unsupported("untraceable_call", f"{shown}: torch has no kernel for it ({why})")


def run_on_values(target, args, kwargs, shown):
    try:
        return target(*args, **kwargs)
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
    if target == "numpy" and not arrays:
        return numpy_of(tx, args[0], kwargs)
    if not arrays:
        return tensor_ops.record_call(tx, target, args, kwargs)
    shown = f"`.{target}()`" if isinstance(target, str) else f"`{target_name(target)}`"
    if not isinstance(target, str) and is_torch_function(target):
        return torch_call(tx, target, args, kwargs, shown)
    if isinstance(args[0], NdarrayVariable) and args[0].scalar:
        target = scalars.OUT_OF_PLACE.get(target, target)  # `s += 1`: a new scalar
    if len(arrays) != len(tensors):  # `x + a.sum()`; `t + a` gives a tensor, `a + t` raises
        result = scalars.mixed_operator(tx, target, args)
        if result is None:
            raise Unsupported("untraceable_call", f"{shown} mixes a NumPy array and a tensor")
        return result
    if isinstance(target, str):
        return arrays[0].call_method(tx, target, args[1:], kwargs)
    return record(tx, in_graph.operator(target), args, kwargs, shown)  # `a + 1`, `abs(a)`


def numpy_of(tx, tensor, kwargs):
    """`x.numpy()`: the same memory, seen as an ndarray; `x.numpy(force=True)` first detaches
    the tensor and brings it to the CPU, as eager does."""
    force = kwargs.pop("force", ConstantVariable(False)).truth(tx)
    if force and tensor.meta.requires_grad:
        tensor = tensor_ops.record_call(tx, "detach", [tensor], {})
    if force and tensor.device.type != "cpu":
        tensor = tensor_ops.record_call(tx, "cpu", [tensor], {})
    return as_ndarray(tensor, "`.numpy()`")


def stacks(args, kwargs) -> bool:
    """`np.array([a, b])`, all of whose items are arrays: `np.stack([a, b])` (with its dtype)."""
    items = getattr(args[0], "items", None) if len(args) == 1 else None
    arrays = items and all(isinstance(item, NdarrayVariable) for item in items)
    return bool(arrays) and set(kwargs) <= {"dtype"}


def torch_call(tx, target, args, kwargs, shown):
    """`torch.from_numpy(a)`, `torch.as_tensor(a)`: the array's tensor; `torch.tensor(a)` a
    copy of it. Other torch functions take no ndarray (eager raises a TypeError)."""
    array, *rest = args
    if target in (torch.tensor, torch.as_tensor, *LEGACY) and isinstance(array, SequenceVariable):
        items = [plain_scalar(item) for item in array.items]  # `torch.tensor([a[0], a[1]])`
        if all(item is not None for item in items) and not (target in LEGACY and (rest or kwargs)):
            if target in LEGACY:
                target, kwargs = torch.tensor, {"dtype": ConstantVariable(LEGACY[target])}
            return tensor_ops.record_call(tx, target, [type(array)(items), *rest], kwargs)
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
