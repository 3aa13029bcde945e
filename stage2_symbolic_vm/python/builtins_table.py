"""Python builtins and the standard library the VM models: one small function each, one table.

Most builtins fold: on constants they are simply called (`min(2, 3)` is 2 in
the trace). The ones that build iterators (`range`, `enumerate`, `zip`, `map`,
`filter`, `itertools.*`) make an iterator Variable that a `for` loop unrolls.
`operator` functions on tensors are recorded like the Python operators they
stand for. Anything not in the table is a call the VM cannot trace, such as
`print` (torch/_dynamo/variables/builtin.py is this table, at torch's scale).
"""

import builtins
import collections
import functools
import inspect
import itertools
import math
import operator
import re
import sys
import types

import torch

from ..dynamic_shapes.shapes import SymNodeVariable
from ..errors import ObservedAttributeError, ObservedException, Unsupported
from ..functions import UserFunctionVariable
from ..sources import attr_of
from ..variables import (
    UNKNOWN,
    BoundMethodVariable,
    ConstantVariable,
    TensorVariable,
    Variable,
    constant_args,
    is_constant_value,
)
from . import container_subclasses, signatures, texts
from .callables import PartialVariable, SuperVariable
from .class_statements import build_class, made_property, made_wrapper
from .constants import all_constants
from .containers import FakeIdVariable, is_none
from .dicts import DictVariable, new_dict
from .exceptions import ExceptionVariable, exc_info, handled_exception
from .iterators import (
    CallableIteratorVariable,
    FilterIteratorVariable,
    IteratorVariable,
    MapIteratorVariable,
    ZipIteratorVariable,
    call_reversed,
)
from .itertools_module import ITERTOOLS, ChainIteratorVariable
from .objects import (
    SLOT_TYPES,
    BuiltinSlotVariable,
    UserClassVariable,
    UserObjectVariable,
    bare_instance,
    builtin_new,
    is_python_class,
)
from .operator_module import OPERATOR_FUNCTIONS
from .operators import binary_op, sort_order, unary_op
from .outside_objects import ObjectVariable
from .sequences import ListVariable, SequenceVariable, TupleVariable, new_deque
from .sets import SetVariable, as_argument, stand_in

# Builtins that are pure functions of constants: folded when every argument is a constant.
FOLDABLE = {abs, all, any, bool, chr, complex, divmod, float, int, max, min, ord, pow, round}
FOLDABLE |= {sorted, str, repr, format, slice, hash, bin, hex, oct, ascii, bytes}
# Builtins that a tensor answers with a tensor op (`abs(x)` is `x.__abs__()`).
TENSOR_BUILTINS = {abs, pow, divmod, round}
PYTHON_MODULES = (math, operator, itertools, functools, collections)


def is_python_module(value) -> bool:
    """A module of the standard library whose functions the table models (builder.py)."""
    return any(value is m for m in PYTHON_MODULES)


class BuiltinVariable(Variable):
    """A builtin function or class, or a function of the standard library the VM models."""

    def __init__(self, fn, source=None):
        self.fn, self.source = fn, source

    def identity(self):
        return self.fn

    def get_attr(self, tx, name):
        if isinstance(self.fn, type) and isinstance(
            inspect.getattr_static(self.fn, name, None), METHOD_TYPES
        ):
            return BoundMethodVariable(self, name)
        if name in ("__name__", "__qualname__", "__module__"):
            return ConstantVariable(getattr(self.fn, name))
        if not hasattr(self.fn, name):
            raise ObservedAttributeError(f"{self.fn!r} has no attribute {name!r}")
        raise Unsupported("unsupported_value", f"attribute {name!r} of {self.fn!r}")

    def unpack(self, tx):
        kind = type(self.fn)  # a builtin function, or a class whose metaclass is not iterable
        if hasattr(kind, "__iter__") or hasattr(kind, "__getitem__"):
            return super().unpack(tx)
        raise ObservedException(TypeError(f"'{kind.__name__}' object is not iterable"))

    def call_method(self, tx, name, args, kwargs):
        """`dict.fromkeys(...)`, `str.join(sep, parts)`: a class method, given the class it was
        called through (`defaultdict.fromkeys` makes a defaultdict), or a method called through
        its class with the object first."""
        handler = class_method(self.fn, name)
        if handler is not None:
            return handler(tx, self, *args, **kwargs)
        if isinstance(inspect.getattr_static(self.fn, name, None), FOLDED_METHOD_TYPES):
            return self.fold_class_method(tx, name, args, kwargs)
        if not args:
            raise ObservedException(TypeError(f"{self.fn.__name__}.{name}() needs an object"))
        slot = getattr(self.fn, name, None)
        if isinstance(args[0], UserObjectVariable) and isinstance(slot, SLOT_TYPES):
            # `object.__setattr__(self, k, v)`: the builtin's own behaviour, not the class's
            return BuiltinSlotVariable(slot, args[0]).call(tx, args[1:], kwargs)
        return args[0].call_method(tx, name, args[1:], kwargs)

    def getitem(self, tx, key):
        """`list[int]`, `dict[str, Any]`: a generic alias of a builtin class (the annotation a
        nested function's definition evaluates: torch's pytree helpers), made now from the
        objects the key stands for."""
        items = key.items if isinstance(key, TupleVariable) else [key]
        known = [item.identity() for item in items]
        if not hasattr(self.fn, "__class_getitem__") or UNKNOWN in known:
            return super().getitem(tx, key)
        alias = self.fn[tuple(known) if isinstance(key, TupleVariable) else known[0]]
        return tx.wrap(alias, None)

    def fold_class_method(self, tx, name, args, kwargs):
        """`int.from_bytes(data, "big")`, `str.maketrans("ab", "xy")`: a class or static method
        of a builtin class that the table does not model makes a new value from its arguments
        alone, so on constants it is called now."""
        if not all(a.is_python_constant() for a in [*args, *kwargs.values()]):
            raise Unsupported("untraceable_call", f"`{self.fn.__name__}.{name}` of non-constants")
        args, kwargs = constant_args(args, kwargs)
        method = getattr(self.fn, name)
        return tx.wrap_constant_result(tx.run_python(method, *args, **kwargs), name)

    def call(self, tx, args, kwargs):
        handler = HANDLERS.get(self.fn)
        if handler is not None:
            takes(handler, self.fn, args, kwargs)
            return handler(tx, *args, **kwargs)
        if any(isinstance(a, TensorVariable) for a in args):
            if self.fn in (int, float, bool, complex, str, repr, format):
                raise Unsupported("item_call", f"`{self.fn.__name__}()` of a tensor reads its data")
            if self.fn in TENSOR_BUILTINS or getattr(self.fn, "__module__", "") == "_operator":
                return operator_call(tx, self.fn, args, kwargs)
        if any(isinstance(a, SymNodeVariable) for a in args):  # `int(x.size(0) / 2)`
            return symbolic_call(tx, self.fn, args, kwargs)
        if self.fn in (sorted, all, any) and len(args) == 1 and not args[0].is_python_constant():
            args = [TupleVariable(args[0].unpack(tx))]  # `sorted(d)`, `all(flags)`: fold the items
        foldable = self.fn in FOLDABLE or getattr(self.fn, "__module__", "") in (
            "math",
            "_operator",
        )
        if foldable and all(a.is_python_constant() for a in [*args, *kwargs.values()]):
            args, kwargs = constant_args(args, kwargs)
            return tx.wrap_constant_result(
                tx.run_python(self.fn, *args, **kwargs), self.fn.__name__
            )
        if isinstance(self.fn, type) and issubclass(self.fn, BaseException):
            args, kwargs = constant_args(args, kwargs)  # an exception about to be raised
            return ExceptionVariable(self.fn(*args, **kwargs))
        if self.fn is bool and len(args) == 1:
            return ConstantVariable(args[0].truth(tx))
        if self.fn in (str, repr) and len(args) == 1:
            return texts.text_of(tx, self.fn, args[0])
        raise Unsupported(
            "untraceable_call", f"call to `{self.fn.__name__}`, which the VM does not trace"
        )

    def __repr__(self):
        return f"BuiltinVariable({getattr(self.fn, '__name__', self.fn)})"


# What a builtin is for symbolic ints: torch's `sym_*` functions, which give a symbolic answer
# where Python's would need the number (`max(s0, 2)` would compare, and guard, instead).
SYMBOLIC_BUILTINS = {float: torch.sym_float, max: torch.sym_max, min: torch.sym_min}


def symbolic_call(tx, fn, args, kwargs):
    """A builtin or `math` function of symbolic ints: symbolic where torch's SymInt answers
    symbolically (`int(s0 / 2)`, `math.floor`, `abs`), else the number, specialised (guarded)."""
    foldable = fn in FOLDABLE or getattr(fn, "__module__", "") in ("math", "_operator")
    if kwargs or not foldable:
        raise Unsupported("untraceable_call", f"`{fn.__name__}()` of a symbolic size")
    if fn is int and isinstance(args[0].value, torch.SymInt):
        return args[0]
    if fn is int:
        fn = torch.sym_int
    return tx.trace.shapes.arithmetic(tx, SYMBOLIC_BUILTINS.get(fn, fn), list(args))


def operator_call(tx, fn, args, kwargs):
    """`operator.add(x, 1)`, `abs(x)`: the same as the Python operator in the code."""
    if fn is operator.getitem and len(args) == 2:
        return args[0].getitem(tx, args[1])
    if len(args) == 2 and not kwargs:
        return binary_op(tx, fn, *args)
    if len(args) == 1 and not kwargs:
        return unary_op(tx, fn, args[0])
    return tx.record_call(fn, args, kwargs)


class PythonModuleVariable(Variable):
    """`math`, `operator`, `itertools`, `functools`, `collections`: modules the VM knows."""

    def __init__(self, module, source):
        self.module, self.source = module, source

    def identity(self):
        return self.module

    def get_attr(self, tx, name):
        if not hasattr(self.module, name):
            raise ObservedAttributeError(f"module {self.module.__name__!r} has no {name!r}")
        value = getattr(self.module, name)
        if isinstance(value, types.ModuleType) or not callable(value):
            return tx.wrap(value, None)
        if not is_modeled_builtin(value) and (
            isinstance(value, types.FunctionType) or is_python_class(value)
        ):  # written in Python (`collections.Counter`, `functools.wraps`): run like the user's
            return tx.wrap(value, attr_of(self.source, name))
        return BuiltinVariable(value)


@functools.cache
def handler_signature(handler) -> inspect.Signature:
    return inspect.signature(handler)


def takes(handler, fn, args, kwargs):
    """A handler takes the builtin's arguments after `tx`: a call it cannot take is the
    builtin's TypeError (`collections.deque(a, b, c)`), not a failure of the VM."""
    try:
        handler_signature(handler).bind(None, *args, **kwargs)
    except TypeError as error:
        name = getattr(fn, "__name__", repr(fn))
        raise ObservedException(TypeError(f"{name}(): {error}")) from None


def length(tx, value):
    if isinstance(value, TensorVariable):
        if value.meta.dim() == 0:
            raise ObservedException(TypeError("len() of a 0-d tensor"))
        return tx.trace.shapes.size_of(tx, value, 0, value.meta.shape[0])  # maybe a symbol
    if isinstance(value, (SequenceVariable, DictVariable, SetVariable)):
        return ConstantVariable(len(value.items))
    if value.is_python_constant():
        return ConstantVariable(tx.run_python(len, value.as_python_constant()))
    if hasattr(value, "module"):  # a ModuleList, Sequential or ModuleDict
        return ConstantVariable(len(value.unpack(tx)))
    if isinstance(value, UserObjectVariable):  # its class's `__len__`, as CPython's len() asks
        return user_length(tx, value)
    return value.call_method(tx, "__len__", [], {})


def user_length(tx, value):
    """len() of a user's object, with CPython's errors (`builtin_len`, `PyObject_Size`): no
    `__len__` in its class is a TypeError, and the answer must be an int of at least 0."""
    name = value.cls.__name__
    if not hasattr(value.cls, "__len__"):
        raise ObservedException(TypeError(f"object of type '{name}' has no len()"))
    found = value.special(tx, "__len__", [])
    if not found.is_python_constant():
        return found  # a size that is a symbol
    answer = found.as_python_constant()
    if not isinstance(answer, int):
        kind = type(answer).__name__
        raise ObservedException(TypeError(f"'{kind}' object cannot be interpreted as an integer"))
    if answer < 0:
        raise ObservedException(ValueError("__len__() should return >= 0"))
    return ConstantVariable(int(answer))


def class_of(value):
    """The class(es) named by the second argument of isinstance."""
    if isinstance(value, TupleVariable):
        return tuple(class_of(v) for v in value.items)
    if value.is_python_constant() and isinstance(value.as_python_constant(), tuple):
        return value.as_python_constant()
    if value.identity() is UNKNOWN:
        raise Unsupported("unsupported_value", f"isinstance() against {value}")
    return value.identity()


def is_instance(tx, value, classes):
    if not isinstance(value, TensorVariable) and value.source is not None:
        tx.trace.assume("type", value.source)
    return ConstantVariable(tx.run_python(issubclass, value.python_type(), class_of(classes)))


def is_subclass(tx, cls, classes):
    return ConstantVariable(tx.run_python(issubclass, class_of(cls), class_of(classes)))


def call_type(tx, value, *rest):
    """`type(x)`: the class, with a source when x has one (its attributes can be guarded)."""
    if rest:
        raise Unsupported("untraceable_call", "type() with three arguments makes a class")
    if isinstance(value, UserObjectVariable):
        return value.cls_var
    return tx.wrap(value.python_type(), attr_of(value.source, "__class__"))


def call_enumerate(tx, iterable, start=None):
    first = 0 if start is None else tx.run_python(operator.index, start.as_python_constant())
    counter = ITERTOOLS[itertools.count](tx, ConstantVariable(first))
    return ZipIteratorVariable([counter, iterable.iterate(tx)])


def call_zip(tx, *iterables, strict=None):
    strict = strict is not None and strict.as_python_constant()
    return ZipIteratorVariable([it.iterate(tx) for it in iterables], strict)


def call_next(tx, iterator, *default):
    if not isinstance(iterator, IteratorVariable):
        if isinstance(iterator, ObjectVariable) and hasattr(iterator.python_type(), "__next__"):
            # an iterator from outside that the VM does not model (a list_iterator argument)
            raise Unsupported("untraceable_call", f"next() of an iterator from outside: {iterator}")
        raise ObservedException(TypeError(f"{iterator} is not an iterator"))
    item = iterator.next_item(tx)
    if item is None and not default:
        raise ObservedException(iterator.stop_iteration())
    return default[0] if item is None else item


def call_iter(tx, value, *sentinel):
    """`iter(iterable)`, or `iter(callable, sentinel)`: call until the sentinel comes."""
    if len(sentinel) > 1:
        raise ObservedException(
            TypeError(f"iter expected at most 2 arguments, got {1 + len(sentinel)}")
        )
    if sentinel:
        return CallableIteratorVariable(value, sentinel[0])
    return value.iterate(tx)


def default_dict(tx, *args, **kwargs):
    factory = args[0] if args else ConstantVariable(None)
    if not is_none(factory) and not call_callable(tx, factory).value:
        raise ObservedException(TypeError("first argument must be callable or None"))
    return new_dict(tx, collections.defaultdict, list(args[1:]), kwargs, factory)


def fromkeys(tx, cls, keys, value=None):
    """`cls.fromkeys(keys, value)`, as CPython's `dict.fromkeys`: `cls()`, then each key set
    through the new object's own `__setitem__` (a subclass's runs)."""
    value = value if value is not None else ConstantVariable(None)
    result = cls.call(tx, [], {})
    for key in keys.unpack(tx):
        result.setitem(tx, key, value)
    return result


def call_sum(tx, iterable, start=None):
    total = start if start is not None else ConstantVariable(0)
    for item in iterable.unpack(tx):
        total = binary_op(tx, operator.add, total, item)
    return total


def all_any(want):
    """`all` / `any` stop at the first item that decides, as eager does."""

    def fold(tx, iterable):
        iterator = iterable.iterate(tx)
        while (item := iterator.next_item(tx)) is not None:
            if item.truth(tx) == want:
                return ConstantVariable(want)
        return ConstantVariable(not want)

    return fold


def min_max(fn):
    def fold(tx, *args, key=None, default=None):
        values = args[0].unpack(tx) if len(args) == 1 else list(args)
        if not values and default is not None:
            return default
        keys = values if key is None else [key.call(tx, [v], {}) for v in values]
        if key is None and len(values) > 1 and any(isinstance(v, SymNodeVariable) for v in values):
            return functools.reduce(lambda a, b: symbolic_call(tx, fn, [a, b], {}), values)
        if not all(k.is_python_constant() for k in keys):
            raise Unsupported(
                "data_dependent_branch", f"`{fn.__name__}()` of tensors compares their values"
            )
        constants = [k.as_python_constant() for k in keys]
        best = tx.run_python(fn, range(len(values)), key=constants.__getitem__)
        return values[best]

    return fold


def call_sorted(tx, iterable, *more, key=None, reverse=None):
    if more:
        raise ObservedException(TypeError(f"sorted expected 1 argument, got {1 + len(more)}"))
    values = iterable.unpack(tx)
    return ListVariable([values[i] for i in sort_order(tx, values, key, reverse)])


def call_super(tx, *args):
    """`super()` reads the method's `__class__` cell and first argument, as CPython does."""
    if args:
        cls, obj = args
        return SuperVariable(class_of(cls), obj)
    cell = tx.cells.get("__class__")
    first = tx.code.co_varnames[0] if tx.code.co_argcount else None
    if cell is None or cell.contents is None or first is None:
        raise Unsupported("unsupported_value", "super() outside a method")
    return SuperVariable(class_of(tx.read(cell.contents)), tx.read_local(first))


def call_getattr(tx, obj, name, *default):
    if not default:
        return obj.get_attr(tx, name.as_python_constant())
    try:
        return obj.get_attr(tx, name.as_python_constant())
    except ObservedAttributeError:
        return default[0]


def call_hasattr(tx, obj, name):
    try:
        obj.get_attr(tx, name.as_python_constant())
    except ObservedAttributeError:
        return ConstantVariable(False)
    return ConstantVariable(True)


def call_setattr(tx, obj, name, value):
    obj.set_attr(tx, name.as_python_constant(), value)
    return ConstantVariable(None)


def call_delattr(tx, obj, name):
    obj.del_attr(tx, name.as_python_constant())
    return ConstantVariable(None)


def call_locals(tx):
    """`locals()`: a new dict of the frame's bound variables, its cells' too, in the code's
    order (CPython 3.11 and 3.12 make a snapshot: a write to it changes no variable)."""
    code, items = tx.code, {}
    for name in (*code.co_varnames, *code.co_cellvars, *code.co_freevars):
        if name in tx.cells and tx.cells[name].contents is not None:
            items[name] = tx.read(tx.cells[name].contents)
        elif name in tx.locals and name not in tx.cells:
            items[name] = tx.read(tx.locals[name])
    return DictVariable(items)


def call_id(tx, value):
    """`id(obj)` of an object from outside: its real address, a constant of the trace that
    holds while it is this very object (an "id" assumption, torch/_dynamo's ID_MATCH). An
    object made in the trace has no address until the code runs: an id that only compares
    and keys a dict (containers.FakeIdVariable)."""
    obj = UNKNOWN if isinstance(value, TensorVariable) else value.identity()
    if obj is UNKNOWN:  # a tensor or a container from outside: its one Variable's object
        found = tx.side_effects.objects.values()
        obj = next((o for o, var in found if var is value), UNKNOWN)
    if value.source is None or obj is UNKNOWN:
        return FakeIdVariable(value)
    tx.trace.assume("id", value.source)
    return ConstantVariable(id(obj))


def call_callable(tx, value):
    if value.is_python_constant():
        return ConstantVariable(callable(value.as_python_constant()))
    # An object is callable when its class (or a base) defines __call__, as CPython's tp_call.
    return ConstantVariable(any("__call__" in vars(k) for k in value.python_type().__mro__))


def reduce(tx, fn, iterable, *initial):
    items = iterable.unpack(tx)
    if not items and not initial:
        raise ObservedException(TypeError("reduce() of empty iterable"))
    total, rest = (initial[0], items) if initial else (items[0], items[1:])
    for item in rest:
        total = fn.call(tx, [total, item], {})
    return total


def signature(tx, fn, *, follow_wrapped=None):
    """`inspect.signature(fn)` of a Python function: the parameters of its code, read now."""
    value = getattr(fn, "value", None)
    if not isinstance(fn, UserFunctionVariable) or value is None:
        raise Unsupported("untraceable_call", f"inspect.signature of {fn}")
    follow = follow_wrapped is None or follow_wrapped.as_python_constant()
    result = tx.run_python(signatures.signature, value, follow_wrapped=follow)
    if fn.self_arg is not None:  # a bound method does not show `self`
        result = result.replace(parameters=list(result.parameters.values())[1:])
    return ObjectVariable(result)


def partial(fn, args, kwargs):
    """`functools.partial(fn, ...)`; a partial of a partial is flattened, as CPython does."""
    if isinstance(fn, PartialVariable):
        return PartialVariable(fn.fn, [*fn.args, *args], {**fn.kwargs, **kwargs})
    return PartialVariable(fn, args, kwargs)


def call_set(set_type):
    """`set(iterable)`: CPython builds it from an object that iterates as `iterable` does
    (a set's own keys, a dict's: sets.stand_in), in CPython's order."""

    def make(tx, iterable=None, /):
        if iterable is None:
            return SetVariable([], set_type=set_type)
        keys, key_vars = stand_in(tx, iterable)
        argument = as_argument(tx, iterable)  # for the set's recipe (sets.py)
        made = None if argument is None else ("new", set_type, (argument,))
        return SetVariable.of_keys(tx.run_python(set_type, keys), key_vars, made)

    return make


# Each builtin's handler. One named after its builtin is `call_<name>`, as Dynamo's
# BuiltinVariable names them: a trailing `_` would read as torch's in-place.
def sequence_of(kind):
    """`list(iterable)`, `tuple(iterable)`, with CPython's errors for other arguments."""

    def make(tx, *args, **kwargs):
        if kwargs:
            raise ObservedException(TypeError(f"{kind.__name__}() takes no keyword arguments"))
        if len(args) > 1:
            message = f"{kind.__name__} expected at most 1 argument, got {len(args)}"
            raise ObservedException(TypeError(message))
        items = args[0].unpack(tx) if args else []
        return ListVariable(items) if kind is list else TupleVariable(items)

    return make


def regex_function(fn):
    """`re.compile(pattern)`, `re.search(pattern, text)`: pure functions of constants, called
    now (re's own cache included: `re.compile(p) is re.compile(p)` as in CPython), where
    inlining them reached `_sre`'s C compiler. unittest's `assertRaisesRegex` compiles one."""

    def call(tx, *args, **kwargs):
        if not all_constants(args, kwargs):
            raise Unsupported("untraceable_call", f"re.{fn.__name__} of values not constants")
        args, kwargs = constant_args(args, kwargs)
        result = tx.run_python(fn, *args, **kwargs)
        return ConstantVariable(result) if is_constant_value(result) else tx.wrap(result, None)

    return call


REGEX_FUNCTIONS = (re.compile, re.escape, re.search, re.match, re.fullmatch, re.findall)
REGEX_FUNCTIONS += (re.split, re.sub, re.subn)

HANDLERS = {
    len: length,
    builtins.__build_class__: build_class,  # a class statement
    property: made_property,  # ... and its decorators
    staticmethod: made_wrapper(staticmethod),
    classmethod: made_wrapper(classmethod),
    isinstance: is_instance,
    issubclass: is_subclass,
    type: call_type,
    range: lambda tx, *args: ConstantVariable(tx.run_python(range, *constant_args(args, {})[0])),
    enumerate: call_enumerate,
    zip: call_zip,
    map: lambda tx, fn, *its: MapIteratorVariable(fn, [it.iterate(tx) for it in its]),
    filter: lambda tx, fn, it: FilterIteratorVariable(
        None if fn.is_python_constant() and fn.as_python_constant() is None else fn,
        it.iterate(tx),
    ),
    reversed: call_reversed,
    iter: call_iter,
    next: call_next,
    list: sequence_of(list),
    tuple: sequence_of(tuple),
    set: call_set(set),
    frozenset: call_set(frozenset),
    dict: lambda tx, *args, **kwargs: new_dict(tx, dict, args, kwargs),
    sum: call_sum,
    all: all_any(False),
    any: all_any(True),
    min: min_max(min),
    max: min_max(max),
    sorted: call_sorted,
    super: call_super,
    getattr: call_getattr,
    hasattr: call_hasattr,
    setattr: call_setattr,
    delattr: call_delattr,
    callable: call_callable,
    id: call_id,
    vars: lambda tx, obj=None: call_locals(tx) if obj is None else obj.get_attr(tx, "__dict__"),
    locals: call_locals,
    inspect.signature: signature,
    collections.OrderedDict: lambda tx, *args, **kwargs: new_dict(
        tx, collections.OrderedDict, args, kwargs
    ),
    collections.defaultdict: default_dict,
    collections.deque: new_deque,
    functools.partial: lambda tx, fn, *args, **kwargs: partial(fn, args, kwargs),
    functools.reduce: reduce,
    **OPERATOR_FUNCTIONS,
    **ITERTOOLS,
    **{fn: regex_function(fn) for fn in REGEX_FUNCTIONS},
    sys.exc_info: exc_info,
    sys.exception: handled_exception,  # (3.11) the exception alone
}


# Methods of builtin classes called on the class: `dict.fromkeys(keys)`, by the class that
# defines them. Each handler is given the class it was called through first (a subclass:
# `defaultdict.fromkeys` is dict's, and makes a defaultdict).
def base_new(tx, _base, cls, *args, **kwargs):
    """A builtin's `__new__` (dict's, set's, tuple's ...) given a class (CLASS_METHODS)."""
    kind = cls.cls if isinstance(cls, UserClassVariable) else class_of(cls)
    if issubclass(kind, tuple) and hasattr(kind, "_fields"):
        items = args[0].unpack(tx) if args else []  # a namedtuple's __new__ and _make
        return TupleVariable(items, tuple_type=kind)
    if not isinstance(cls, UserClassVariable):
        raise Unsupported("unsupported_value", f"__new__ of {cls}, not a class written in Python")
    return builtin_new(tx, cls, args, kwargs)


CLASS_METHODS = {
    (dict, "fromkeys"): fromkeys,
    (collections.OrderedDict, "fromkeys"): fromkeys,
    (itertools.chain, "from_iterable"): lambda tx, cls, its: ChainIteratorVariable(its.unpack(tx)),
    # a namedtuple's __new__ and _make end in `tuple.__new__(cls, iterable)`, a static method
    (object, "__new__"): bare_instance,  # copy.deepcopy's `cls.__new__(cls)`
}
# `set.__new__(cls)`, `super().__new__(cls, items)` in a `__new__` written in Python: an
# instance made in the trace (objects.builtin_new); a namedtuple's is a TupleVariable.
CLASS_METHODS |= {(base, "__new__"): base_new for base in container_subclasses.BASES}


# What a builtin class holds that `Class.name(...)` calls: a method (given its object first),
# a class or static method (`str.maketrans`), or a builtin bound to it (`tuple.__new__`).
FOLDED_METHOD_TYPES = (types.ClassMethodDescriptorType, staticmethod)
METHOD_TYPES = (*SLOT_TYPES, *FOLDED_METHOD_TYPES, types.BuiltinMethodType)


def class_method(cls, name):
    """The handler of `cls.name` in CLASS_METHODS, found in the class of `cls`'s MRO that
    defines `name` (as CPython's attribute lookup finds it), or None."""
    for klass in getattr(cls, "__mro__", ()):
        if name in vars(klass):
            return CLASS_METHODS.get((klass, name))
    return None


def is_modeled_builtin(value) -> bool:
    """A function or class in the table (only those are hashed: `obj in HANDLERS` would run
    any object's own __hash__)."""
    if not isinstance(value, (types.BuiltinFunctionType, types.FunctionType, type)):
        return False
    if value in HANDLERS:
        return True
    return isinstance(value, (types.BuiltinFunctionType, type)) and (
        getattr(builtins, getattr(value, "__name__", ""), None) is value
        or getattr(value, "__module__", None) in ("math", "_operator")
    )
