"""What a graph calls for a NumPy operation: torch._numpy on the graph's tensors.

Inside a graph an ndarray is a tensor. A NumPy call becomes one node whose target wraps
the tensors it is given in `torch._numpy.ndarray`, calls the function of the same name in
`torch._numpy` (NumPy's API written with torch ops, and NumPy's dtype rules: float64 by
default, NumPy's promotions), and unwraps the result. torch/_dynamo/utils.py does the same
with `numpy_to_tensor_wrapper`, `numpy_method_wrapper` and `numpy_operator_wrapper`; as
there, AOTAutograd (or our inductors, through an extern) see the torch ops inside.

The targets are made once per name, and named after what they compute (`numpy_sum`,
`ndarray_mean`), so that a graph reads as the program did; one that writes into its array
ends with `_`, as torch's in-place ops do (`ndarray_iadd_`, `ndarray_fill_`), which is how
the trace and the backends know to keep it (like_eager/in_place.py).

Each runs with torch's default dtype set to NumPy's default float: torch._numpy leaves a
few results to torch's default (an int array divided by an int is float32 there, under
torch.compile too, where NumPy gives float64).
"""

import contextlib
import functools
import sys

import torch
import torch._numpy as tnp
from torch._numpy import _dtypes_impl
from torch.utils._pytree import tree_map_only

from ..like_eager.in_place import INPLACE_OPERATORS


@contextlib.contextmanager
def numpy_default_float():
    saved = torch.get_default_dtype()
    torch.set_default_dtype(_dtypes_impl.default_dtypes().float_dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(saved)


def to_ndarrays(value):
    """Every tensor inside `value` (in lists too: `np.concatenate([a, b])`) as an ndarray."""
    return tree_map_only(torch.Tensor, tnp.ndarray, value)


def to_tensors(value):
    """Every torch._numpy ndarray inside a result as its tensor."""
    return tree_map_only(tnp.ndarray, lambda array: array.tensor, value)


def named(fn, name: str):
    fn.__name__ = fn.__qualname__ = name
    return fn


@functools.cache
def function(path: str):
    """`numpy.<path>` (`"sum"`, `"linalg.norm"`) as torch._numpy computes it."""
    found = functools.reduce(getattr, path.split("."), tnp)

    def call(*args, **kwargs):
        with numpy_default_float():
            return to_tensors(found(*to_ndarrays(args), **to_ndarrays(kwargs)))

    return named(call, "numpy_" + path.replace(".", "_"))


@functools.cache
def method(name: str):
    """`array.<name>(...)`, a method of an ndarray (`a.mean(axis=0)`, `a.astype("float32")`)."""

    def call(array, *args, **kwargs):
        bound = getattr(tnp.ndarray(array), name)
        with numpy_default_float():
            return to_tensors(bound(*to_ndarrays(args), **to_ndarrays(kwargs)))

    return named(call, f"ndarray_{name.strip('_')}")


@functools.cache
def attribute(name: str):
    """`array.<name>` that is an array (`a.T`, `a.real`)."""

    def read(array):
        with numpy_default_float():
            return to_tensors(getattr(tnp.ndarray(array), name))

    return named(read, f"ndarray_{name}")


@functools.cache
def operator(fn):
    """`a + b`, `-a`, `a[1:]`, `a < b` with NumPy's rules (`operator.add` on the ndarrays)."""

    def call(*args):
        with numpy_default_float():
            return to_tensors(fn(*to_ndarrays(args)))

    name = fn.__name__.strip("_")
    return named(call, f"ndarray_{name}_" if name in INPLACE_OPERATORS else f"ndarray_{name}")


@functools.cache
def in_place(target):
    """A method that changes its array and returns None (`a.fill(0)`, `a.sort()`), as an
    operation that gives back the array it changed (what the trace records)."""

    def call(array, *args, **kwargs):
        target(array, *args, **kwargs)
        return array

    return named(call, target.__name__ + "_")


def to_numpy(tensor: torch.Tensor):
    """An ndarray that leaves the graph: the tensor's memory as a real numpy.ndarray."""
    return tensor.numpy()


def to_numpy_scalar(tensor: torch.Tensor):
    """A 0-d result NumPy gives as a scalar (`np.sum(a)` is an np.float64, not an array)."""
    return tensor.numpy()[()]


def numpy_dtype(dtype: torch.dtype):
    """NumPy's dtype for a torch dtype (`torch.float32` -> `dtype('float32')`), or None where
    NumPy has none (bfloat16, the float8s)."""
    numpy = sys.modules["numpy"]
    try:
        return numpy.dtype(tnp.dtype(dtype).name)
    except (TypeError, KeyError):
        return None


def torch_dtype(dtype) -> torch.dtype | None:
    """torch's dtype for NumPy's `dtype`, or None where torch has none (strings, objects,
    dates, float128)."""
    try:
        return tnp.dtype(dtype.name).torch_dtype
    except (TypeError, KeyError):
        return None
