"""NumPy's scalars (np.float32(2.0), np.int64(8), `a.sum()`): 0-d arrays in the trace.

A NumPy scalar has a dtype of its own, and NumPy 2 promotes by it (NEP 50): `f32 +
np.float64(1)` is float64, where `f32 + 1.0` stays float32. So a NumPy scalar the trace
meets is a 0-d NdarrayVariable (`scalar=True`, NumPy's type when it leaves), as torch.compile
makes it, never a Python number:

* one the function receives is read as `torch.as_tensor(L['z'])`, guarded by its type and
  dtype, not its value (torch.compile does not recompile for another value either);
* one made from constants (`np.float32(2.0)`, or an np.float64, which is a Python float
  too) becomes a node that makes it where it meets an array;
* one that meets a torch.Tensor in an operator (`x + a.sum()`) is, as in eager, a Python
  number of its kind to torch (torch's wrapped number): it is cast to the dtype torch gives
  a tensor and such a number, so that the result has eager's dtype (`int_tensor *
  np.float64(1.5)` is float32, not float64 as a 0-d float64 tensor would make it).
"""

import operator

import torch

from ..variables import ConstantVariable, TensorVariable
from . import in_graph
from .arrays import NdarrayVariable, NumpyTensorSource, numpy

# The operators torch applies to a tensor and a NumPy scalar as to a tensor and a number.
BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and_", "or_", "xor")
BINARY += ("lshift", "rshift")
NUMBER_OPERATORS = {getattr(operator, name) for name in (*BINARY, "lt", "le", "gt", "ge", "eq")}
NUMBER_OPERATORS |= {operator.ne} | {getattr(operator, "i" + name.strip("_")) for name in BINARY}
# `s += 1` on a scalar makes a new scalar (NumPy's scalars are immutable): `s + 1`.
OUT_OF_PLACE = {getattr(operator, "i" + n.strip("_")): getattr(operator, n) for n in BINARY}
# The Python number torch reads a NumPy scalar as, by the kind of its dtype: an integer for
# NumPy's ints, a float for the rest (np.bool_ too: `bool_tensor * np.True_` is float32).
SAMPLES = {"b": 1.0, "i": 1, "u": 1, "f": 1.0}


def is_numpy_scalar(value) -> bool:
    """A NumPy scalar of a dtype torch has (not a string, a date, a float128)."""
    np = numpy()
    return np is not None and isinstance(value, np.generic) and has_tensor(value)


def has_tensor(value) -> bool:
    return in_graph.torch_dtype(value.dtype) is not None and value.dtype.isnative


def wrap_numpy_scalar(tx, value, source):
    """A NumPy scalar the function receives: the 0-d tensor `torch.as_tensor(L['z'])`."""
    from .. import builder  # builder.py lists this maker among its WRAPPERS

    if source is None:
        return scalar_array(tx, value)
    tx.trace.assume("type", source)
    var = builder.wrap_tensor(tx, torch.as_tensor(value), NumpyTensorSource(source, "as_tensor"))
    return NdarrayVariable(var.node, var.meta, var.device, source=source, scalar=True)


def scalar_array(tx, value) -> NdarrayVariable:
    """A NumPy scalar known now (`np.float32(2.0)`): a node that makes it as a 0-d array."""
    target = in_graph.function("asarray")
    args, kwargs = (value.item(),), {"dtype": value.dtype.name}
    meta = target(*args, **kwargs).to("meta")
    node = tx.trace.add_node("call_function", target, args, kwargs, meta=meta, lineno=tx.lineno)
    return NdarrayVariable(node, meta, torch.device("cpu"), scalar=True)


def strong_scalars(tx, values: list) -> list:
    """NumPy scalars held as constants (an np.float64 is a float) as 0-d arrays, which NumPy's
    promotion rules treat by their dtype; Python numbers stay numbers."""
    np = numpy()
    found = [getattr(v, "value", None) if v.is_python_constant() else None for v in values]
    return [
        scalar_array(tx, f) if isinstance(f, np.generic) and has_tensor(f) else v
        for v, f in zip(values, found, strict=True)
    ]


def as_number(tx, scalar: NdarrayVariable, tensor: TensorVariable) -> TensorVariable:
    """NumPy scalar `scalar` met by `tensor` in an operator: torch takes it as a Python number
    of its kind, so it is given the dtype that torch gives `tensor` and such a number."""
    sample = SAMPLES[in_graph.numpy_dtype(scalar.meta.dtype).kind]
    dtype = torch.result_type(tensor.meta, sample)
    plain = TensorVariable(scalar.node, scalar.meta, scalar.device)
    return tx.record_call("to", [plain, ConstantVariable(dtype)], {})


def mixed_operator(tx, target, args: list) -> TensorVariable | None:
    """`x + a.sum()`, `np.float32(2) * x`: a tensor and NumPy scalars in an operator, as eager
    computes it; None for anything else (an array with more dimensions, a method)."""
    tensors = [a for a in args if isinstance(a, TensorVariable)]
    plain = [t for t in tensors if not isinstance(t, NdarrayVariable)]
    scalars = [t for t in tensors if isinstance(t, NdarrayVariable)]
    numbers = all(s.scalar and not s.meta.dtype.is_complex for s in scalars)  # `float(1j)`
    if target not in NUMBER_OPERATORS or len(plain) != 1 or not numbers:
        return None
    args = [as_number(tx, a, plain[0]) if isinstance(a, NdarrayVariable) else a for a in args]
    return tx.record_call(target, args, {})
