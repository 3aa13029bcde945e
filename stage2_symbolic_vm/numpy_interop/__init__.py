"""NumPy in the trace, as torch.compile traces it: an ndarray is a tensor, NumPy's rules
come from torch._numpy.

arrays.py    NdarrayVariable (a tensor with NumPy's face), ndarrays the function receives
             and returns, `x.numpy()`
scalars.py   NumPy's scalars: 0-d arrays that promote by their dtype, numbers to torch
calls.py     `np.fn(...)`, an array's methods and operators, `torch.from_numpy(a)`: every
             recorded operation passes through `record_call` here
in_graph.py  what the graph calls: torch._numpy's functions on the graph's tensors

What torch._numpy cannot do, NumPy's random generator, and reading an array's data
(`a.item()`, `float(a)`, `if a.any():`) stop the VM with the reason, as for tensors.
"""

from .arrays import NdarrayVariable, NumpyTensorSource, is_numpy_value, output_of, wrap_numpy_value
from .calls import call_function, compare_dtype, draws_from_numpy_random, numpy_path, record_call

__all__ = [
    "NdarrayVariable",
    "NumpyTensorSource",
    "call_function",
    "compare_dtype",
    "draws_from_numpy_random",
    "is_numpy_value",
    "numpy_path",
    "output_of",
    "record_call",
    "wrap_numpy_value",
]
