"""Wrapping an outside value (an argument, a global, an attribute) into a Variable.

This is where the trace starts to rely on the outside world, so this is where
most assumptions are made: a tensor becomes an `input` node and a "tensor"
assumption, a list fixes its type and length, a module or a class its
identity, a function its code. Constants are assumed only when their value is
used (ConstantVariable.as_python_constant). torch/_dynamo/variables/builder.py
(VariableBuilder) does the same, with many more cases.

An assumption may only be about something that existed before the call (a
guard runs before the next call, on that call's values): so a function is
recognised by its code, not by its identity (a lambda passed to a resume
function is made anew on every call), a bound method by its function and its
object, an instance of a user class by its type and the attributes read.
A value with no source (found inside something made during the trace) is
wrapped without any assumption.
"""

import collections
import functools
import types

import torch

from .dynamic_shapes import shapes
from .errors import Unsupported
from .functions import (
    GRAD_MODES,
    TORCH_CONSTANT_CLASSES,
    TORCH_MODULES,
    AutogradFunctionVariable,
    ConstantResultVariable,
    GradModeClassVariable,
    GradModeVariable,
    NNModuleVariable,
    PartialVariable,
    TorchVariable,
    UserFunctionVariable,
    is_torch_function,
    torch_query,
)
from .python.builtins_table import (
    PYTHON_MODULES,
    BuiltinVariable,
    PythonModuleVariable,
    is_modeled_builtin,
)
from .python.containers import DictVariable, ListVariable, SetVariable, TupleVariable
from .python.iterators import ListIteratorVariable, SequenceIteratorVariable
from .python.objects import UserClassVariable, UserObjectVariable, is_python_class
from .sources import ReducedSource, attr_of, item_of
from .variables import (
    BoundMethodVariable,
    ConstantVariable,
    LazyVariable,
    ObjectVariable,
    TensorVariable,
    compared_by_identity,
    is_constant_value,
)

DICT_TYPES = (dict, collections.OrderedDict, collections.defaultdict, types.MappingProxyType)
LIST_ITERATORS = (type(iter([])), type(reversed([])))


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
# functions and classes are guarded by what they are.
MUTABLE_TYPES = (list, set, *DICT_TYPES[:-1], *LIST_ITERATORS)  # not a read-only mappingproxy


def has_identity(value) -> bool:
    if type(value) in MUTABLE_TYPES or isinstance(value, (torch.Tensor, torch.nn.Module)):
        return True
    if isinstance(value, (type, tuple)) or is_constant_value(value):  # a namedtuple, an enum
        return False
    return is_python_class(type(value))


def wrap_new(tx, value, source):
    trace = tx.trace

    def assume(kind):
        if source is not None:
            trace.assume(kind, source)

    def item(v, key):
        return LazyVariable(v, item_of(source, key))

    if isinstance(value, torch.Tensor):
        if source is None:
            raise Unsupported("unsupported_value", "a tensor the frame cannot reach again")
        return wrap_tensor(tx, value, source)
    if type(value) is int and source is not None:  # an int argument may be a symbol
        symbolic = tx.trace.shapes.symbolic_int(tx, value, source)
        if symbolic is not None:
            return symbolic
    if type(value) is tuple and source is not None and holds_int_argument(value, source):
        # item by item, as torch wraps every tuple: `f(x, (b, 1))` and `x.view(*shape)` make
        # `b` a symbol (`L['shape'][0]`) when it changes, not a new constant tuple each time
        assume("type")
        assume("length")
        return TupleVariable([tx.read(item(v, i)) for i, v in enumerate(value)], source)
    if is_constant_value(value):
        return ConstantVariable(value, source, trace if source is not None else None)
    if type(value) in (list, tuple):
        assume("type")
        assume("length")
        items = [tx.read(item(v, i)) for i, v in enumerate(value)]
        return (ListVariable if type(value) is list else TupleVariable)(items, source)
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):  # a namedtuple
        assume("type")
        items = [tx.read(item(v, i)) for i, v in enumerate(value)]
        return TupleVariable(items, source, tuple_type=type(value))
    if type(value) in LIST_ITERATORS and source is not None:
        return wrap_list_iterator(tx, value, source)
    if type(value) in DICT_TYPES:
        if not all(is_constant_value(k) for k in value):
            raise Unsupported(
                "unsupported_value", f"{_where(source)} has keys that are not constants"
            )
        assume("type")
        assume("dict_keys")
        factory = getattr(value, "default_factory", None)
        factory_var = None
        if factory is not None:
            factory_var = tx.read(LazyVariable(factory, attr_of(source, "default_factory")))
        items = {k: item(v, k) for k, v in value.items()}  # read (and assumed about) when used
        if source is None:
            items = {k: tx.read(v) for k, v in items.items()}
        return DictVariable(items, source, type(value), factory_var)
    if type(value) in (set, frozenset):
        # dataclasses' `_ATOMIC_TYPES` is a frozenset of classes: items equal only to
        # themselves (classes, functions) are guarded by the set's `==` as well as constants
        if not all(is_constant_value(v) or compared_by_identity(v) for v in value):
            raise Unsupported("unsupported_value", f"{_where(source)} holds items with own __eq__")
        assume("constant")
        return SetVariable([wrap(tx, v, None) for v in value], source, type(value))
    if isinstance(value, type) and value in GRAD_MODES:
        assume("id")
        return GradModeClassVariable(value, source)
    if GRAD_MODES.get(type(value)) is not None:  # a `torch.no_grad()` made before the call
        assume("type")
        return GradModeVariable(type(value), GRAD_MODES[type(value)], source)
    if isinstance(value, functools._lru_cache_wrapper) and isinstance(
        value.__wrapped__, types.FunctionType
    ):  # torch/_dynamo does the same (and warns): the function is traced, its cache skipped,
        # which gives the cache's answer for the pure functions lru_cache is meant for
        assume("type")
        return wrap(tx, value.__wrapped__, attr_of(source, "__wrapped__"))
    if isinstance(value, types.FunctionType) and getattr(value, ConstantResultVariable.MARK, 0):
        assume("id")
        return ConstantResultVariable(value, source)
    if isinstance(value, types.FunctionType) and (
        is_torch_function(value) or torch_query(value) is not None
    ):  # `F.leaky_relu` is recorded, `torch.manual_seed` answered (or refused): not inlined
        assume("id")
        return TorchVariable(value, source)
    if isinstance(value, types.FunctionType) and is_modeled_builtin(value):
        assume("id")  # a Python function of the standard library the VM models (signature)
        return BuiltinVariable(value, source)
    if isinstance(value, types.FunctionType):
        assume("function")  # the code, not the object: see the module docstring
        return UserFunctionVariable.from_function(tx, value, source)
    if isinstance(value, types.MethodType):
        assume("type")
        function = wrap(tx, value.__func__, attr_of(source, "__func__"))
        return function.bound_to(wrap(tx, value.__self__, attr_of(source, "__self__")))
    if isinstance(value, types.BuiltinMethodType) and is_method_of_self(value):
        # `xs.append`, `dict.fromkeys`: a method of an object, by its object and name
        assume("type")
        if source is not None:
            trace.assume("constant", attr_of(source, "__name__"))
        return BoundMethodVariable(
            wrap(tx, value.__self__, attr_of(source, "__self__")), value.__name__
        )
    if isinstance(value, functools.partial):
        assume("type")
        fn = wrap(tx, value.func, attr_of(source, "func"))
        args = wrap(tx, value.args, attr_of(source, "args")).unpack(tx)
        keywords = wrap(tx, value.keywords, attr_of(source, "keywords"))
        kwargs = {k: keywords.value(tx, k) for k in list(keywords.items)}
        return PartialVariable(fn, args, kwargs, source)
    if isinstance(value, torch.nn.Module):
        assume("id")
        return NNModuleVariable(value, source)
    if not isinstance(value, type) and is_python_class(type(value)):
        assume("type")  # an instance of a user class: its type and the attributes read
        cls_var = wrap(tx, type(value), attr_of(source, "__class__"))
        return UserObjectVariable(value, cls_var, source, trace if source is not None else None)
    if not (isinstance(value, (types.ModuleType, type)) or callable(value)):
        # Any other object (a NumPy array, a C library's object): its type, and its identity
        # only where the code compares it with `is` (ObjectVariable.identity assumes it then).
        assume("type")
        return ObjectVariable(value, source, trace if source is not None else None)
    assume("id")  # a module, a class, a function of a library: this very object
    if any(value is m for m in TORCH_MODULES) or is_torch_function(value):
        return TorchVariable(value, source)
    if torch_query(value) is not None:  # `torch._C._get_tracing_state`
        return TorchVariable(value, source)
    if any(value is c for c in TORCH_CONSTANT_CLASSES):
        return TorchVariable(value, source)
    if any(value is m for m in PYTHON_MODULES):
        return PythonModuleVariable(value, source)
    if is_modeled_builtin(value):
        return BuiltinVariable(value, source)
    if is_python_class(value) and issubclass(value, torch.autograd.Function):
        return AutogradFunctionVariable(value, source)
    if is_python_class(value):
        return UserClassVariable(value, source)
    return ObjectVariable(value, source, trace if source is not None else None)


def wrap_list_iterator(tx, value, source):
    """`iter(xs)` or `reversed(xs)` from outside (a loop's iterator that a resume function
    receives): an iterator over the very list, at its position, both read through what
    CPython pickles it as. It reads the list as it steps, so the items the rest of the loop
    appends are reached, and the real iterator is moved as the trace moved it."""
    tx.trace.assume("type", source)
    _, (sequence,), *position = value.__reduce__()
    if not position:  # exhausted: it holds no list any more
        tx.trace.assume("length", ReducedSource(source, (1, 0)))
        return ListIteratorVariable([])
    items = tx.read(LazyVariable(sequence, ReducedSource(source, (1, 0))))
    tx.trace.assume("constant", ReducedSource(source, (2,)))
    backwards = type(value) is LIST_ITERATORS[1]
    return SequenceIteratorVariable(items, backwards, position[0], source)


def holds_int_argument(value: tuple, source) -> bool:
    """A tuple the frame received with an int in it (also in a tuple in it), which shapes.py
    may make a symbol; a module's or a global's tuple stays one constant."""
    if not shapes.is_argument(source):
        return False
    inner = [v for v in value if type(v) is tuple]
    return any(type(v) is int for v in value) or any(holds_int_argument(v, source) for v in inner)


def is_method_of_self(value) -> bool:
    """A C method bound to its object (`xs.append`), not a C function whose `__self__` is a
    module (`math.sqrt`) or pybind11's record of it (`torch._C._get_tracing_state`)."""
    owner = value.__self__
    if isinstance(owner, (types.ModuleType, type(None))):
        return False
    return isinstance(owner, type) or hasattr(type(owner), value.__name__)


def _where(source) -> str:
    return source.describe() if source is not None else "a value"


def wrap_tensor(tx, value, source):
    """An input tensor: an `input` node whose meta tensor copies shape, strides and dtype
    (a FakeTensor, with symbols for its dynamic sizes, in a trace with symbols: shapes.py)."""
    tx.trace.assume("tensor", source)
    meta = tx.trace.shapes.fake_input(tx, value, source)
    if meta is None:
        meta = torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta")
        meta.requires_grad_(value.requires_grad)
    node = tx.trace.add_node("input", None, source=source, meta=meta, lineno=tx.lineno)
    return TensorVariable(node, meta, value.device, source=source, type_=type(value))
