"""NumPy in the trace, as torch.compile traces it: an ndarray is a tensor, NumPy's rules
come from torch._numpy.

arrays.py    NdarrayVariable (a tensor with NumPy's face), ndarrays the function receives
             and returns, `x.numpy()`
calls.py     `np.fn(...)`, an array's methods and operators, `torch.from_numpy(a)`: every
             recorded operation passes through `record_call` here
in_graph.py  what the graph calls: torch._numpy's functions on the graph's tensors

What torch._numpy cannot do, NumPy's random generator, and reading an array's data
(`a.item()`, `float(a)`, `if a.any():`) stop the VM with the reason, as for tensors.
"""

from .arrays import NdarrayVariable, NumpyTensorSource, is_ndarray, output_of, wrap_ndarray
from .calls import call_function, numpy_path, record_call

__all__ = [
    "NdarrayVariable",
    "NumpyTensorSource",
    "call_function",
    "is_ndarray",
    "numpy_path",
    "output_of",
    "record_call",
    "wrap_ndarray",
]
