"""Objects the VM does not model: an outside object of a class written in C (a NumPy array,
a compiled regular expression, a C library's handle) or a module, as an ObjectVariable.

It can be passed on and compared with `is` (an "id" assumption), its attributes read
through their source. Calling it, or one of its methods, stops the VM with the reason,
except where the answer is a pure function of constants and is computed now: a NumPy
ufunc of numbers (`np.sqrt(d_model)`), a pattern's or a match's methods (`PURE_METHODS`),
and the C functions that have a Python twin (pure_python.py). A NumPy function that
torch._numpy has is traced as torch.compile traces it (numpy_interop/).
"""

import re
import sys
import types

from ..errors import ObservedAttributeError, Unsupported
from ..sources import attr_of
from ..variables import Variable, constant_args
from . import pure_python
from .constants import all_constants

# Methods of C objects that cannot change, pure functions of their arguments: a compiled
# regular expression and a match of it.
PURE_METHODS = {
    re.Pattern: {"search", "match", "fullmatch", "findall", "split", "sub", "subn"},
    re.Match: {"group", "groups", "groupdict", "start", "end", "span", "expand"},
}


def is_numpy_ufunc(value) -> bool:
    """A NumPy ufunc (`np.sqrt`), where the program has imported NumPy."""
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.ufunc)


class ObjectVariable(Variable):
    """An outside object the VM does not model (a C object, a class): it can only be passed on.

    Its identity can be relied on (`x is Foo`, `isinstance(v, Foo)`), which is an "id"
    assumption, unless it was found inside something already assumed (`torch.Tensor`: trace=None).
    """

    def __init__(self, value, source=None, trace=None, name=None):
        self.value, self.source, self.trace = value, source, trace
        self.name = name  # how a break names it, where its own names do not say

    def python_type(self):
        return type(self.value)

    def identity(self):
        if self.trace is not None:
            self.trace.assume("id", self.source)
        return self.value

    def get_attr(self, tx, name):
        """An attribute of a module, or of an object of a class written in C, read now (and
        guarded through its source, if the object has one)."""
        if not hasattr(self.value, name):
            raise ObservedAttributeError(f"{type(self.value).__name__} has no attribute {name!r}")
        return tx.wrap(getattr(self.value, name), attr_of(self.source, name))

    def call(self, tx, args, kwargs):
        if (result := pure_python.call(tx, self.value, args, kwargs)) is not None:
            return result  # `heapq.heappush`: its Python twin, traced
        method = self.value  # `list.copy(xs)`, for xs of exactly that class: `xs.copy()`
        descriptor = isinstance(method, types.MethodDescriptorType)
        if descriptor and args and exact_type(args[0]) is method.__objclass__:
            return args[0].call_method(tx, method.__name__, args[1:], kwargs)
        shown = self.name or callable_name(self.value)
        if is_numpy_ufunc(self.identity()) and all_constants(args, kwargs):
            # `np.sqrt(self.d_model)` (CTRL): a pure function of numbers, computed now, as
            # torch.compile folds it; its answer is NumPy's scalar (np.float64, a float)
            args, kwargs = constant_args(args, kwargs)
            return tx.wrap_constant_result(tx.run_python(self.value, *args, **kwargs), shown)
        from ..numpy_interop import call_function, draws_from_numpy_random, numpy_path

        if (path := numpy_path(self.identity())) is not None:  # `np.sum(a, axis=0)`
            return call_function(tx, path, args, kwargs)  # torch._numpy's, on the tensors
        if draws_from_numpy_random(self.value):  # torch.compile breaks here too, by default
            why = "NumPy's random generator is not traced: the graph would draw other numbers"
            raise Unsupported("untraceable_call", f"call to `{shown}`: {why}")
        raise Unsupported("untraceable_call", f"call to `{shown}`, which the VM cannot look inside")

    def truth(self, tx):
        """True when its class has neither `__bool__` nor `__len__` (CPython's default for any
        object): a function, a method descriptor, a class. `copy.copy` tests the copier it
        found so (`if copier:`)."""
        kind = type(self.value)
        if hasattr(kind, "__bool__") or hasattr(kind, "__len__"):
            raise Unsupported("unsupported_value", f"cannot test the truth of {self}")
        self.identity()  # relied on: this object, whose class says it is true
        return True

    def call_method(self, tx, name, args, kwargs):
        kind = type(self.value)
        if name in PURE_METHODS.get(kind, ()) and all_constants(args, kwargs):
            # `pattern.search(message)`: the object cannot change, its method is a function
            # of constants, called now (unittest's assertRaisesRegex)
            self.identity()  # relied on: this very pattern
            args, kwargs = constant_args(args, kwargs)
            result = tx.run_python(getattr(self.value, name), *args, **kwargs)
            if isinstance(result, re.Match):
                return tx.wrap(result, None)
            return tx.wrap_constant_result(result, name)
        raise Unsupported(
            "untraceable_call",
            f"method `{name}` of a {kind.__module__}.{kind.__qualname__} object: its C code "
            "(NumPy's, the standard library's, another library's) runs outside the trace",
        )

    def reconstruct(self, cg):
        if self.source is not None:
            cg.load_source(self.source)
        else:
            cg.load_const(self.value)  # an object made by the VM (an exception about to be raised)

    def __repr__(self):
        return f"ObjectVariable({type(self.value).__name__} {self.source or ''})"


def is_method_of_self(value) -> bool:
    """A C method bound to its object (`xs.append`, `dict.fromkeys`), not a C function whose
    `__self__` is a module (`math.sqrt`) or pybind11's record of it
    (`torch._C._get_tracing_state`)."""
    if not isinstance(value, types.BuiltinMethodType):
        return False
    owner = value.__self__
    if isinstance(owner, (types.ModuleType, type(None))):
        return False
    return isinstance(owner, type) or hasattr(type(owner), value.__name__)


def callable_name(value) -> str:
    """A callable as a user writes it: `math.sqrt`, `list.append`, `np.sqrt`. CPython names a
    C function after the class of its `__self__` unless that is a module; a pybind11
    function's `__self__` is pybind11's record of it, which no user knows
    (`torch._C._functorch.pybind11_detail_function_record_v1_..._vmap_increment_nesting`):
    a C function that is not a method of its `__self__` is named by its module."""
    name = getattr(value, "__qualname__", None) or type(value).__name__
    if isinstance(value, types.BuiltinFunctionType) and not is_method_of_self(value):
        name = value.__name__
    module = getattr(value, "__module__", None)
    return f"{module}.{name}" if isinstance(module, str) else name


def exact_type(var: Variable):
    """The class of the value, or None where the VM does not know it."""
    try:
        return var.python_type()
    except Unsupported:
        return None
