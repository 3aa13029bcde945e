"""Callables beyond a plain function: method objects, partials, `super()`, attributes.

`FunctionObject` is the part of UserFunctionVariable (functions.py) that treats a
function as a Python object: the attributes CPython gives it (`__name__`, `__code__`,
`__defaults__`), the ones the code assigns (`functools.wraps` sets `__wrapped__`), and
how stage 4's new code rebuilds it. A method object of another callable, a partial and
`super()` each forward a call or an attribute to the callable they hold.
"""

import functools
import sys
import types

import torch

from ..errors import ObservedAttributeError, Unsupported
from ..sources import AttrSource, ImportSource, attr_of, item_of
from ..variables import UNKNOWN, BoundMethodVariable, ConstantVariable, Variable
from .dicts import DictVariable
from .objects import (
    SLOT_TYPES,
    BuiltinSlotVariable,
    UserClassVariable,
    UserObjectVariable,
    bound_qualname,
    class_attribute,
)
from .sequences import TupleVariable


class FunctionObject:
    """A UserFunctionVariable's attributes, and how the new code makes the function again."""

    def truth(self, tx):
        return True  # a function or a bound method has neither __bool__ nor __len__

    def identity(self):
        if self.value is None or self.self_arg is not None:
            return UNKNOWN
        if self.source is not None:  # `f is g` relies on the very object, not only its code
            self.trace.assume("id", self.source)
        return self.value

    def get_attr(self, tx, name):
        if self.self_arg is not None and name in ("__self__", "__func__"):
            return self.self_arg if name == "__self__" else self.bound_to(None)
        for assigned in (self.slots, self.attrs):  # `functools.wraps` sets __name__ ...
            if name in assigned:
                return assigned[name]
        if name == "__dict__" and self.value is None:
            view = DictVariable({})
            view.items = self.attrs  # the same dict: a change through it is an attribute's
            return view
        if self.value is not None:  # a function from outside: what it has now, guarded
            if not hasattr(self.value, name):
                raise ObservedAttributeError(f"function {self.name!r} has no attribute {name!r}")
            return tx.wrap(getattr(self.value, name), attr_of(self.source, name))
        if name == "__defaults__":
            return TupleVariable(list(self.defaults)) if self.defaults else ConstantVariable(None)
        if name == "__annotations__":  # none given: CPython makes an empty dict and keeps it
            self.slots[name] = DictVariable({})
            return self.slots[name]
        first = self.code.co_consts[0] if self.code.co_consts else None
        made = {  # a function made in the trace (MAKE_FUNCTION): what CPython gives it
            "__name__": self.code.co_name,
            "__qualname__": self.code.co_qualname,
            "__module__": self.globals.get("__name__"),
            "__doc__": first if isinstance(first, str) else None,  # its docstring, a constant
            "__code__": self.code,
        }
        if name not in made:
            raise ObservedAttributeError(f"function {self.name!r} has no attribute {name!r}")
        return ConstantVariable(made[name])

    def set_attr(self, tx, name, value):
        if self.value is not None:
            tx.side_effects.store_attr(self, name, value)
        (self.slots if name in FUNCTION_SLOTS else self.attrs)[name] = value

    def reconstruct(self, cg):
        if self.self_arg is not None:  # a method bound by the VM: MethodType(function, self)
            unbound = self.bound_to(None)
            cg.call_callable(
                types.MethodType,
                lambda: cg.reconstruct(unbound),
                lambda: cg.reconstruct(self.self_arg),
            )
        elif self.source is not None:
            cg.load_source(self.source)
        elif self.value is not None:  # from outside, reached without a path (a set's item):
            cg.load_const(self.value)  # the very object, not a new function of its code
        elif self.slots or self.attrs:  # made, then given attributes (`functools.wraps`)
            cg.call_callable(
                with_attributes,
                lambda: cg.make_function(self),
                lambda: cg.build_map({**self.slots, **self.attrs}),
            )
        else:
            cg.make_function(self)


def globals_source(fn, source):
    """Where a function's globals are read from: its module's `__dict__` when it has one (so
    every function of a module reads a global through one source, and guards it once)."""
    module = sys.modules.get(fn.__module__) if isinstance(fn.__module__, str) else None
    if module is not None and vars(module) is fn.__globals__:
        return AttrSource(ImportSource(fn.__module__), "__dict__")
    return attr_of(source, "__globals__")


# The attributes a function keeps in itself, not in its `__dict__` (CPython's func_getsetlist
# and func_memberlist).
FUNCTION_SLOTS = {"__name__", "__qualname__", "__module__", "__doc__", "__code__"}
FUNCTION_SLOTS |= {"__defaults__", "__kwdefaults__", "__annotations__"}


def with_attributes(fn, attrs: dict):
    """A function the new code made again, given the attributes the trace assigned to it."""
    for name, value in attrs.items():
        setattr(fn, name, value)
    return fn


class MethodVariable(Variable):
    """A method object (`types.MethodType`) of a callable that is not a Python function: a
    Cython function bound to its object (NumPy's `np.random.rand` is `RandomState.rand` bound
    to numpy's generator), a partial. A call passes `obj` first, as CPython's method object
    does (`method_vectorcall`); whether that call can be traced is the callable's to say."""

    def __init__(self, function: Variable, obj: Variable):
        self.function, self.obj = function, obj

    def python_type(self):
        return types.MethodType

    def get_attr(self, tx, name):
        if name in ("__func__", "__self__"):
            return self.function if name == "__func__" else self.obj
        return self.function.get_attr(tx, name)  # a method forwards the rest to its function

    def call(self, tx, args, kwargs):
        return self.function.call(tx, [self.obj, *args], kwargs)

    def reconstruct(self, cg):
        cg.call_callable(
            types.MethodType,
            lambda: cg.reconstruct(self.function),
            lambda: cg.reconstruct(self.obj),
        )

    def __repr__(self):
        return f"MethodVariable({self.function!r} bound to {self.obj!r})"


def method_attribute(method: BoundMethodVariable, name: str) -> Variable:
    """An attribute of a modelled value's method (`[].pop`, `x.add`, `"a".split`), as CPython's
    method objects answer it: `__self__` is the value, the name and the docstring are those of
    the type's method, and the qualified name is CPython's for a bound method (`bound_qualname`:
    `x.add.__qualname__` is "Tensor.add")."""
    if name == "__self__":
        return method.obj
    kind = method.obj.python_type()
    found = getattr(kind, method.name, None)
    if name == "__qualname__" and found is not None:
        return ConstantVariable(bound_qualname(kind, found))
    if name in ("__name__", "__doc__") and found is not None:
        return ConstantVariable(getattr(found, name))
    raise Unsupported("unsupported_value", f"attribute {name!r} of the method {method}")


class PartialVariable(Variable):
    """`functools.partial(fn, *args, **kwargs)`: a call adds its arguments after these."""

    def __init__(self, fn, args, kwargs, source=None):
        self.fn, self.args, self.kwargs, self.source = fn, list(args), dict(kwargs), source

    def python_type(self):
        return functools.partial

    def get_attr(self, tx, name):
        parts = {"func": self.fn, "args": TupleVariable(self.args), "keywords": None}
        if name not in parts:
            raise ObservedAttributeError(f"functools.partial has no attribute {name!r}")
        return parts[name] or DictVariable(self.kwargs)

    def call(self, tx, args, kwargs):
        return self.fn.call(tx, [*self.args, *args], {**self.kwargs, **kwargs})

    def reconstruct(self, cg):
        if self.source is not None:
            cg.load_source(self.source)
            return
        pushers = [lambda: cg.reconstruct(self.fn)]
        pushers += [lambda v=v: cg.reconstruct(v) for v in self.args]
        cg.call_callable(functools.partial, *pushers, kwargs=self.kwargs)


class SuperVariable(Variable):
    """`super()` inside a method: attribute lookup that starts after `cls` in the object's MRO."""

    def __init__(self, cls, obj: Variable):
        self.cls, self.obj = cls, obj

    def get_attr(self, tx, name):
        if isinstance(self.obj, UserClassVariable):  # in `__new__` or a classmethod
            return self.class_attr(tx, name)
        mro = self.obj.python_type().__mro__
        cls_var = self.obj.cls_var if isinstance(self.obj, UserObjectVariable) else None
        for index in range(mro.index(self.cls) + 1, len(mro)):
            attr = mro[index].__dict__.get(name)
            if attr is None:
                continue
            source = None
            if self.obj.source is not None:
                mro_source = attr_of(attr_of(self.obj.source, "__class__"), "__mro__")
                source = item_of(attr_of(item_of(mro_source, index), "__dict__"), name)
            elif cls_var is not None:  # an object made in the trace: through its class
                source = cls_var.attribute_source(index, name)
            from ..functions import NNModuleVariable  # functions.py builds on this file

            if attr is torch.nn.Module.__call__ and isinstance(self.obj, NNModuleVariable):
                return BoundMethodVariable(self.obj, "__call__")  # hooks, then forward
            if isinstance(attr, types.FunctionType):  # a class statement's: the trace's own
                made_here = cls_var.own_attribute(index, name) if cls_var is not None else None
                return (made_here or tx.wrap(attr, source)).bound_to(self.obj)
            if isinstance(attr, SLOT_TYPES) and isinstance(self.obj, UserObjectVariable):
                return BuiltinSlotVariable(attr, self.obj)
            break
        raise Unsupported("unsupported_value", f"super().{name} is not a plain method")

    def class_attr(self, tx, name):
        """`super(C, cls).name`: found after C in `cls`'s MRO, bound as the class sees it (a
        static method, `__new__` among them, unbound; a classmethod bound to `cls`); a
        builtin's `__new__` is its handler (builtins_table.CLASS_METHODS), given `cls`."""
        from .builtins_table import CLASS_METHODS  # builtins_table.py builds on this file

        mro = self.obj.cls.__mro__
        for index in range(mro.index(self.cls) + 1, len(mro)):
            attr = mro[index].__dict__.get(name)
            if attr is None:
                continue
            handler = CLASS_METHODS.get((mro[index], name))
            if handler is not None:
                return ClassHandlerVariable(handler, self.obj)
            if isinstance(attr, (staticmethod, classmethod, types.FunctionType)):
                return class_attribute(tx, None, self.obj, name, index, attr)  # as Cls.name
            break
        raise Unsupported("unsupported_value", f"super().{name} of a class is not modelled")


class ClassHandlerVariable(Variable):
    """A builtin class's method reached through `super()` from a class (`super().__new__`
    reaching `object.__new__`): its handler, given the class it was reached from."""

    def __init__(self, handler, cls_var):
        self.handler, self.cls_var = handler, cls_var

    def call(self, tx, args, kwargs):
        return self.handler(tx, self.cls_var, *args, **kwargs)


# --- callables from outside (builder.py's WRAPPERS) ----------------------------------------------


class CachedFunctionVariable(Variable):
    """A function under `functools.lru_cache` from outside. A call traces the function it
    wraps, skipping the cache, as torch/_dynamo does (and warns): that gives the cache's
    answer for the pure functions lru_cache is meant for. The new code calls the cache
    itself, as eager does: at a graph break inside it, `logger.warning_once(message)`
    (Hugging Face's, an lru_cache'd Logger method) runs through the cache, which knows
    whether the message was logged already; the function under it would log it again."""

    CACHE_METHODS = ("cache_info", "cache_clear", "cache_parameters")

    def __init__(self, value, function: Variable, source=None, trace=None):
        self.value, self.function, self.source, self.trace = value, function, source, trace

    def python_type(self):
        return type(self.value)

    def identity(self):
        if self.trace is not None:
            self.trace.assume("id", self.source)
        return self.value

    def truth(self, tx):
        return True

    def get_attr(self, tx, name):
        if name in self.CACHE_METHODS:  # the cache's own state, outside the trace
            raise Unsupported("unsupported_value", f"`{name}` of an lru_cache, read in the trace")
        if name == "__wrapped__":
            return self.function
        return self.function.get_attr(tx, name)  # functools.update_wrapper copied the rest

    def call(self, tx, args, kwargs):
        return self.function.call(tx, args, kwargs)

    def __repr__(self):
        return f"CachedFunctionVariable({self.function!r})"


def wrap_cached_function(tx, value, source):
    """An lru_cache'd function from outside: the cache (its type guarded), and the function
    under it (guarded as any function)."""
    trace = None
    if source is not None:
        tx.trace.assume("type", source)
        trace = tx.trace
    function = tx.wrap(value.__wrapped__, attr_of(source, "__wrapped__"))
    return CachedFunctionVariable(value, function, source, trace)


def wrap_method_of_self(tx, value, source):
    """`xs.append` from outside (outside_objects.is_method_of_self): a method of an object, by
    its object and name."""
    if source is not None:
        tx.trace.assume("type", source)
        tx.trace.assume("constant", attr_of(source, "__name__"))
    return BoundMethodVariable(tx.wrap(value.__self__, attr_of(source, "__self__")), value.__name__)


def wrap_partial(tx, value, source):
    """`functools.partial(fn, *args, **kwargs)` from outside: its three parts, each guarded."""
    if source is not None:
        tx.trace.assume("type", source)
    fn = tx.wrap(value.func, attr_of(source, "func"))
    args = tx.wrap(value.args, attr_of(source, "args")).unpack(tx)
    keywords = tx.wrap(value.keywords, attr_of(source, "keywords"))
    kwargs = {k: keywords.value(tx, k) for k in list(keywords.items)}
    return PartialVariable(fn, args, kwargs, source)


def wrap_method(tx, value, source):
    """A bound method: its function and its object, each wrapped (and guarded) on its own."""
    if source is not None:
        tx.trace.assume("type", source)
    function = tx.wrap(value.__func__, attr_of(source, "__func__"))
    return function.bound_to(tx.wrap(value.__self__, attr_of(source, "__self__")))
