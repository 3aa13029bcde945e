"""Wrapping an outside value (an argument, a global, an attribute) into a Variable.

This is where the trace starts to rely on the outside world, so this is where
most assumptions are made: a tensor becomes an `input` node and a "tensor"
assumption, a list fixes its type and length, a module or a class its
identity, a function its code. Constants are assumed only when their value is
used (ConstantVariable.as_python_constant). torch/_dynamo/variables/builder.py
(VariableBuilder) does the same, with many more cases.

What each kind of value becomes is one table, WRAPPERS: a test and a maker per
kind, tried in order. The kinds a small model needs are made here; the makers
of the rest live with their Variables, in the subpackages.

An assumption may only be about something that existed before the call (a
guard runs before the next call, on that call's values): so a function is
recognised by its code, not by its identity (a lambda passed to a resume
function is made anew on every call), a bound method by its function and its
object, an instance of a user class by its type and the attributes read.
A value with no source (found inside something made during the trace) is
wrapped without any assumption.
"""

import functools
import types

import torch

from . import functions, numpy_interop, sources
from .dynamic_shapes import shapes
from .errors import Unsupported
from .functions import NNModuleVariable, TorchVariable, UserFunctionVariable
from .like_eager import in_place
from .python import builtins_table, callables, dicts, iterators, objects, sequences, sets
from .python.annotations import is_annotation, wrap_annotation
from .python.outside_objects import ObjectVariable, is_method_of_self
from .python.sequences import ListVariable, TupleVariable
from .torch_api import autocast, disabled, grad_modes, torchscript, vmap
from .torch_api.autograd_function import AutogradFunctionVariable
from .torch_api.queries import ConstantResultVariable, torch_query
from .variables import ConstantVariable, LazyVariable, TensorVariable, is_constant_value


def wrap(tx, value, source):
    """The Variable for an outside `value` found at `source`: one Variable per source, and
    one per object whose identity the code can observe, however many paths reach it."""
    if source is None:
        return wrap_new(tx, value, None)
    cache = tx.wrapped
    if source in cache:
        return cache[source]
    tracked = has_identity(value)
    var = tx.side_effects.variable_of(value, source) if tracked else None
    if var is None:
        var = wrap_new(tx, value, source)
        if tracked and var.source == source:  # not a stand-in with a source of its own
            tx.side_effects.track(value, var)
    cache[source] = var
    return var


# The objects whose identity a program can observe: it changes them in place, or a change
# through one path must show through another. Tuples, strings and numbers cannot change;
# functions and classes are guarded by what they are; a mappingproxy is read-only.
MUTABLE_TYPES = (list, set, sequences.deque, *dicts.DICT_TYPES[:-1], *iterators.LIST_ITERATORS)


def has_identity(value) -> bool:
    if type(value) in MUTABLE_TYPES or isinstance(value, (torch.Tensor, torch.nn.Module)):
        return True
    if isinstance(value, (type, tuple)) or is_constant_value(value):  # a namedtuple, an enum
        return False
    return objects.is_python_class(type(value))


def wrap_new(tx, value, source):
    """A new Variable for `value`, made by the first entry of WRAPPERS that knows its kind."""
    return next(make for is_kind, make in WRAPPERS if is_kind(value))(tx, value, source)


def assume(tx, kind, source):
    if source is not None:  # a value made in the trace: nothing to assume about it
        tx.trace.assume(kind, source)


def wrap_tensor(tx, value, source):
    """An input tensor: an `input` node whose meta tensor copies shape, strides and dtype
    (a FakeTensor, with symbols for its dynamic sizes, in a trace with symbols:
    dynamic_shapes/shapes.py)."""
    if source is None:
        raise Unsupported("unsupported_value", "a tensor the frame cannot reach again")
    tx.trace.assume("tensor", source)
    meta = tx.trace.shapes.fake_input(tx, value, source)
    if meta is None:
        meta = in_place.stand_in(value)
    node = tx.trace.add_node("input", None, source=source, meta=meta, lineno=tx.lineno)
    return TensorVariable(node, meta, value.device, source=source, type_=type(value))


def wrap_constant(tx, value, source):
    """An int, a float, a string, a dtype, a tuple of them...: assumed about when used. An int
    the frame received may be a symbol instead (dynamic_shapes/shapes.py)."""
    if type(value) is int and source is not None:
        symbolic = tx.trace.shapes.symbolic_int(tx, value, source)
        if symbolic is not None:
            return symbolic
    return ConstantVariable(value, source, tx.trace if source is not None else None)


def wrap_tuple(tx, value, source):
    """A tuple of constants is one constant, unless the frame received it with an int in it:
    it is wrapped item by item, as torch wraps every tuple, so that `f(x, (b, 1))` and
    `x.view(*shape)` make `b` a symbol (`L['shape'][0]`) when it changes, not a new constant
    tuple each time."""
    if is_constant_value(value) and not shapes.holds_int_argument(value, source):
        return wrap_constant(tx, value, source)
    return wrap_sequence(tx, value, source)


def wrap_sequence(tx, value, source):
    """A list or a tuple: its type and length, and each item."""
    assume(tx, "type", source)
    assume(tx, "length", source)
    items = [tx.read(LazyVariable(v, sources.item_of(source, i))) for i, v in enumerate(value)]
    return ListVariable(items, source) if type(value) is list else TupleVariable(items, source)


def wrap_function(tx, value, source):
    """A Python function, inlined when called and recognised by its code (see the module
    docstring); torch's (`F.leaky_relu`, recorded), the standard library's the VM models
    (`inspect.signature`) and the ones marked constant are recognised by identity."""
    if getattr(value, ConstantResultVariable.MARK, 0):
        kind = ConstantResultVariable
    elif functions.is_torch_function(value) or torch_query(value) is not None:
        kind = TorchVariable
    elif builtins_table.is_modeled_builtin(value):
        kind = builtins_table.BuiltinVariable
    else:
        assume(tx, "function", source)
        return UserFunctionVariable.from_function(tx, value, source)
    assume(tx, "id", source)
    return kind(value, source)


def wrap_module(tx, value, source):
    """A module is guarded by its type and by what the trace reads of it (its parameters'
    metadata, the attributes it uses, the absence of hooks), not by its identity: identical
    layers share one compiled code, as under torch's `inline_inbuilt_nn_modules`."""
    assume(tx, "type", source)
    return NNModuleVariable(value, source)


def wrap_other(tx, value, source):
    """A module, a class, a library's function: this very object, and its kind in BY_IDENTITY.
    Any other object (a NumPy array, a C library's object): its type, and its identity only
    where the code compares it with `is` (ObjectVariable.identity assumes it then)."""
    trace = tx.trace if source is not None else None
    if not (isinstance(value, (types.ModuleType, type)) or callable(value)):
        assume(tx, "type", source)
        return ObjectVariable(value, source, trace)
    assume(tx, "id", source)
    kind = next((kind for is_kind, kind in BY_IDENTITY if is_kind(value)), None)
    return kind(value, source) if kind else ObjectVariable(value, source, trace)


def is_autograd_function(value) -> bool:
    return objects.is_python_class(value) and issubclass(value, torch.autograd.Function)


# What a module, a class or a library's function is, by identity, in order.
BY_IDENTITY = (
    (functions.is_torch_object, TorchVariable),  # torch, torch.nn.functional, torch.sin, torch.Size
    (builtins_table.is_python_module, builtins_table.PythonModuleVariable),  # math, itertools
    (builtins_table.is_modeled_builtin, builtins_table.BuiltinVariable),  # len, dict
    (is_autograd_function, AutogradFunctionVariable),
    (objects.is_python_class, objects.UserClassVariable),
)

# What each kind of outside value becomes, in order: the first test that holds wraps it.
WRAPPERS = (
    (lambda v: isinstance(v, torch.Tensor), wrap_tensor),
    (numpy_interop.is_numpy_value, numpy_interop.wrap_numpy_value),  # an ndarray: its tensor
    (lambda v: type(v) is tuple, wrap_tuple),  # before constants: an int in it may be a symbol
    (is_constant_value, wrap_constant),  # int, str, dtype, an enum, a tuple of constants
    (lambda v: type(v) is list, wrap_sequence),
    (lambda v: type(v) is sequences.deque, sequences.wrap_deque),
    (sequences.is_namedtuple, sequences.wrap_namedtuple),
    (lambda v: type(v) in iterators.LIST_ITERATORS, iterators.wrap_list_iterator),
    (lambda v: type(v) in dicts.DICT_TYPES, dicts.wrap_dict),
    (lambda v: type(v) in (set, frozenset), sets.wrap_set),
    (grad_modes.is_grad_mode, grad_modes.wrap_grad_mode),  # torch.no_grad, torch.no_grad()
    (autocast.is_autocast, autocast.wrap_autocast),  # torch.autocast, torch.autocast(...)
    (objects.is_cached_function, callables.wrap_cached_function),  # functools.lru_cache
    (disabled.is_disabled_or_decorator, disabled.wrap),  # torch.compiler.disable, and its work
    (torchscript.is_script_function, torchscript.wrap_script_function),  # its Python original
    (vmap.is_vmap, vmap.wrap_vmap),  # torch.vmap: batched aten ops in the graph
    (lambda v: isinstance(v, types.FunctionType), wrap_function),
    (lambda v: isinstance(v, types.MethodType), callables.wrap_method),
    (is_method_of_self, callables.wrap_method_of_self),  # xs.append
    (lambda v: isinstance(v, functools.partial), callables.wrap_partial),
    (lambda v: isinstance(v, torch.nn.Module), wrap_module),
    (lambda v: isinstance(v, functions.TORCH_OPS_TYPES), wrap_other),  # `aten = torch.ops.aten`
    (is_annotation, wrap_annotation),  # `Optional[int]`, `int | None`: typing's objects
    (objects.is_user_object, objects.wrap_user_object),  # an instance of a class in Python
    (lambda v: True, wrap_other),
)
