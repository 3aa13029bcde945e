"""C functions of the standard library, traced through their pure-Python twins.

`heapq` and `bisect` are written in Python, and CPython replaces their functions with C
ones (`_heapq`, `_bisect`) where it can; its test suite holds both to the same answers
(Lib/test/test_heapq.py runs every test on `py_heapq` and on `c_heapq`). The VM cannot
look inside the C ones, so a call to one runs its Python twin in the VM instead: the same
list operations and comparisons, traced, with the caller's list changed as eager changes
it (torch/_dynamo/polyfills/heapq.py does the same for heapq).
"""

import importlib.util
import sys
import types

from ..errors import ObservedException
from ..sources import AttrSource, ImportSource


def python_module(name: str, accelerator: str) -> types.ModuleType:
    """A fresh module `name` with its C `accelerator` blocked, as CPython's tests load it
    (test.support.import_helper.import_fresh_module): its `from _heapq import *` fails, and
    its own Python functions stay. It is not put in sys.modules."""
    spec = importlib.util.find_spec(name)
    module = importlib.util.module_from_spec(spec)
    saved = sys.modules.get(accelerator)
    sys.modules[accelerator] = None  # an import of it raises ImportError
    try:
        spec.loader.exec_module(module)
    finally:
        if saved is None:
            del sys.modules[accelerator]
        else:
            sys.modules[accelerator] = saved
    return module


# The Python modules, not in sys.modules: the twins' globals are theirs, which the guards read
# through this module (`call`).
py_heapq = python_module("heapq", "_heapq")
py_bisect = python_module("bisect", "_bisect")
ACCELERATED = {"_heapq": "py_heapq", "_bisect": "py_bisect"}  # C module -> its twin's name here


def call(tx, value, args, kwargs):
    """A call of a C function of `ACCELERATED` run as its Python twin, or None when it has
    none. The twin is laxer than the C function in two ways, where eager raises: `_heapq`
    takes no keywords, and wants a list (the twin would change any mutable sequence)."""
    if not isinstance(value, types.BuiltinFunctionType):
        return None
    holder = ACCELERATED.get(getattr(value, "__module__", None))
    found = getattr(globals().get(holder), value.__name__, None)
    if not isinstance(found, types.FunctionType):  # no Python twin
        return None
    if holder == "py_heapq" and kwargs:
        raise ObservedException(TypeError(f"{value.__name__}() takes no keyword arguments"))
    if holder == "py_heapq" and args and not issubclass(args[0].python_type(), list):
        raise ObservedException(TypeError("heap argument must be a list"))
    source = AttrSource(AttrSource(ImportSource(__name__), holder), value.__name__)
    return tx.wrap(found, source).call(tx, args, kwargs)
