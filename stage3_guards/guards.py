"""Guards: the assumptions a trace made, turned into checks on the next call's values.

The symbolic VM records, for every value it relied on, an `Assumption(kind,
source)`: "the trace is only right if local 'x' is a float32 tensor of size
(4, 8)", "... if global 'torch' is still this module". A guard is the check
that the assumption still holds. Each kind of assumption has one builder in
`GUARD_BUILDERS` below; a builder reads the value the trace saw (through the
source) and returns a `Guard` made of `Check`s, each a Python expression over
`L` (arguments by name), `G` (globals), `F` (the function object) and `B` (builtins).

torch/_dynamo/guards.py builds the same guards into a C++ GuardManager tree;
early Dynamo generated one Python lambda from their expressions. We do the
latter (see guard_function.py).
"""

import builtins
import enum
import keyword
import math
import re
import sys
import types
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from stage2_symbolic_vm.python.dicts import is_checkable_key
from stage2_symbolic_vm.python.outside_objects import callable_name, is_method_of_self
from stage2_symbolic_vm.sources import Assumption, AttrSource, BuiltinSource, Source
from stage2_symbolic_vm.torch_api.autocast import AUTOCAST_DEVICES
from stage2_symbolic_vm.torch_api.grad_modes import inference_mode_enabled
from stage2_symbolic_vm.torch_api.module_hooks import GLOBAL_HOOKS, MODULE_HOOKS


class GuardError(Exception):
    """A value the trace relied on that we do not know how to guard: compile nothing."""


def _dtype(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _show(value) -> str:
    """How messages print a value: `float32`, `cpu`, and the repr of anything else."""
    if isinstance(value, torch.dtype):
        return _dtype(value)
    return str(value) if isinstance(value, torch.device) else repr(value)


@dataclass(frozen=True)
class Check:
    """One comparison: `code` is True when the value still is what the trace saw.

    `what` names the compared property for messages ("dtype", "size"), `actual`
    is an expression for the property's value now, and `show` formats both
    that and `expected`, so a failure can say "size of local 'x' changed:
    expected 4, got 8".
    """

    code: str
    what: str
    expected: object
    actual: str
    show: Callable[[object], str] = _show


@dataclass(frozen=True)
class Guard:
    """All the checks made for one assumption, printable as torch prints guards."""

    kind: str  # TENSOR_MATCH, TYPE_MATCH, ID_MATCH, CONSTANT_MATCH, LENGTH_CHECK, ...
    source: Source | None  # None for global state (grad mode, default dtype)
    summary: str  # what the trace saw, in words: "float32, cpu, size=(4, 8), stride=(8, 1)"
    checks: tuple[Check, ...]
    names: dict = field(default_factory=dict, compare=False)  # name -> object the code uses
    # TENSOR_MATCH: a weak reference to the tensor the trace saw, and the sizes and strides
    # the guard compares (None for a symbolic one), from which the guard function builds
    # torch's C++ check of all its tensors at once (guard_function.py)
    example: object = field(default=None, compare=False, repr=False)
    dims: tuple | None = field(default=None, compare=False, repr=False)

    def __str__(self):
        where = f"{self.source.describe()} " if self.source is not None else ""
        return f"{where}{self.kind}: {self.summary}"

    @property
    def code(self) -> list[str]:
        """The checks as source expressions: `L['x'].size() == (4, 8)` (torch's `code_parts`)."""
        return [check.code for check in self.checks]

    def failure(self, L: dict, G: dict, F) -> str | None:
        """Why this guard fails on these values, in words; None when it passes."""
        scope = {"L": L, "G": G, "F": F, "B": builtins, **self.names}
        for check in self.checks:
            try:
                if eval(check.code, scope):  # our own generated expression
                    continue
                actual = check.show(eval(check.actual, scope))
            except Exception as error:  # the value is not even shaped like before
                actual = f"{type(error).__name__}: {error}"
            if self.kind == "SHAPE_ENV":  # a relation: "L['x'].size()[0] >= 2 failed: ... = 1"
                return f"{check.code} failed: {actual}"
            if self.kind == "ALIAS":  # a relation of two objects: said whole
                return check.what
            if self.kind == "DISTINCT":
                return actual
            where = f" of {self.source.describe()}" if self.source is not None else ""
            expected = check.show(check.expected)
            return f"{check.what}{where} changed: expected {expected}, got {actual}"
        return None


class Names:
    """Gives the objects that generated code refers to readable, unique names.

    `torch.float32` and `int` are written as such; any other object (a user's
    module, function or class) gets a name from its own, bound in the
    namespace the generated code runs in. The guard keeps those objects alive,
    so an identity check can never match a new object that reuses an old id.
    """

    RESERVED = frozenset({"L", "G", "F", "B"})

    def __init__(self):
        self.objects: dict[str, object] = {}  # name -> object, the generated code's globals

    def __call__(self, obj, hint: str | None = None) -> str:
        for existing, value in self.objects.items():
            if value is obj or (isinstance(obj, torch.device) and _same_device(value, obj)):
                return existing
        if isinstance(obj, types.ModuleType):
            return self._bind(self.fresh(obj.__name__), obj)  # torch, math, ...
        name = getattr(obj, "__name__", None)
        if isinstance(name, str) and getattr(builtins, name, None) is obj:
            return name  # int, float, tuple, len: builtins of every generated function
        if isinstance(name, str) and getattr(torch, name, None) is obj:
            return f"{self(torch)}.{name}"  # torch.Tensor, torch.sin
        if isinstance(obj, (torch.dtype, torch.layout, torch.memory_format)):
            short = str(obj).removeprefix("torch.")  # torch.float32, torch.strided, ...
            if getattr(torch, short, None) is obj:
                return f"{self(torch)}.{short}"
        if not isinstance(name, str):  # an instance: `linear` for a Linear module
            name = type(obj).__name__.lower()
        return self._bind(self.fresh(hint or name), obj)

    def _bind(self, name: str, obj) -> str:
        self.objects[name] = obj
        return name

    def fresh(self, hint: str) -> str:
        base = re.sub(r"[\W_]+", "_", hint).strip("_") or "obj"
        if base[0].isdigit() or base in self.RESERVED or keyword.iskeyword(base):
            base = f"obj_{base}"
        name, n = base, 0
        while name in self.objects or hasattr(builtins, name):
            n += 1
            name = f"{base}_{n}"
        return name


def type_name(cls) -> str:
    return cls.__name__ if getattr(builtins, cls.__name__, None) is cls else cls.__qualname__


# ---------------------------------------------------------------------------
# One builder per assumption kind: (source, the value the trace saw, names) -> Guard.


def type_match(source: Source, value, names: Names) -> Guard:
    check = _type_check(source.name(), type(value), names)
    return Guard("TYPE_MATCH", source, type_name(type(value)), (check,), names.objects)


def _type_check(expr: str, cls: type, names: Names) -> Check:
    return Check(f"type({expr}) is {names(cls)}", "type", cls, f"type({expr})", type_name)


def id_match(source: Source, value, names: Names) -> Guard:
    """This very object: a module, a function, a class read from a global or an attribute."""
    expr = source.name()
    checks = [Check(f"{expr} is {names(value)}", "object", value, expr, _short_repr)]
    if isinstance(source, BuiltinSource):  # a global of the same name would be found first
        name = repr(source.builtin)
        checks.insert(0, Check(f"{name} not in G", "shadowing by a global", False, f"{name} in G"))
    return Guard("ID_MATCH", source, _short_repr(value), tuple(checks), names.objects)


def function_match(source: Source, value, names: Names) -> Guard:
    """A function with this code. Not its identity: a function made anew on every call (a
    lambda handed to a resume function) would fail that guard every time. What the trace
    read of its closure, defaults and globals has guards of its own."""
    expr = source.name()
    checks = (
        _type_check(expr, type(value), names),
        Check(f"{expr}.__code__ is {names(value.__code__, 'code_' + value.__name__)}",
              "code", value.__code__, f"{expr}.__code__", _short_repr),
    )  # fmt: skip
    return Guard("FUNCTION_MATCH", source, value.__qualname__, checks, names.objects)


def module_hooks(source: Source, value, names: Names) -> Guard:
    """The module and the process have no hooks: the trace inlined forward() alone, so a hook
    registered later must recompile (a module with hooks is traced through `_call_impl`)."""
    present = [h for h in MODULE_HOOKS if getattr(value, h, None)]
    modules = torch.nn.modules.module
    present += [h for h in GLOBAL_HOOKS if getattr(modules, h)]
    if present:
        raise GuardError(f"{source.describe()} has hooks ({', '.join(present)}): not traced")
    # Read from the instance's __dict__, which the ABSENT checks of the module's attributes
    # read already: a dict's item costs half of an nn.Module's attribute (a class with a
    # __getattr__ gets no fast path in CPython's LOAD_ATTR).
    table = AttrSource(source, "__dict__").name()
    reads = [f"{table}[{h!r}]" for h in MODULE_HOOKS]
    if not all(h in object.__getattribute__(value, "__dict__") for h in MODULE_HOOKS):
        reads = [f"{source.name()}.{h}" for h in MODULE_HOOKS]  # a module that skipped __init__
    checks = [
        Check(f"not {read}", h, "none", f"len({read})", str)
        for h, read in zip(MODULE_HOOKS, reads, strict=True)
    ]
    mod = names(modules, "module_hooks")
    checks += [Check(f"not {mod}.{h}", h, "none", f"len({mod}.{h})", str) for h in GLOBAL_HOOKS]
    return Guard("NO_HOOKS", source, "no hooks", tuple(checks), names.objects)


def tensor_match(source: Source, value, names: Names) -> Guard:
    """Everything about a tensor that a trace can depend on, except its data.

    Dynamo checks the same properties (plus dispatch keys) in C++, comparing
    sizes one by one so that dynamic shapes can relax single dimensions. Here the
    sizes are static, so a whole-tuple comparison says the same, faster (a tensor
    with symbolic sizes has its own builder: dynamic_shapes/shape_guards.py).
    """
    if not isinstance(value, torch.Tensor):
        raise GuardError(f"{source.describe()} was assumed to be a tensor, but is {type(value)}")
    if value.layout is not torch.strided or value.is_nested:
        raise GuardError(f"{source.describe()} is a {value.layout} tensor; only strided ones")
    expr = source.name()
    size, stride = tuple(value.size()), value.stride()
    dtype, device, grad = value.dtype, value.device, value.requires_grad
    checks = (
        _type_check(expr, type(value), names),
        Check(f"{expr}.dtype is {names(dtype)}", "dtype", dtype, f"{expr}.dtype", _dtype),
        Check(f"{expr}.device == {names(device, str(device))}", "device", device, f"{expr}.device"),
        Check(f"{expr}.size() == {size!r}", "size", size, f"tuple({expr}.size())", _shape),
        Check(f"{expr}.stride() == {stride!r}", "stride", stride, f"{expr}.stride()", _shape),
        Check(f"{expr}.requires_grad is {grad}", "requires_grad", grad, f"{expr}.requires_grad"),
    )
    summary = f"{_dtype(value.dtype)}, {value.device}, size={size}, stride={stride}"
    if type(value) is not torch.Tensor:
        summary = f"{type_name(type(value))}, {summary}"
    if value.requires_grad:
        summary += ", requires_grad=True"
    example, dims = weakref.ref(value), (size, stride)
    return Guard("TENSOR_MATCH", source, summary, checks, names.objects, example, dims)


def constant_match(source: Source, value, names: Names) -> Guard:
    """A Python scalar, string or tuple of them that the trace used by value."""
    expr = source.name()
    checks = tuple(Check(code, "value", value, expr) for code in _same_constant(expr, value, names))
    return Guard("CONSTANT_MATCH", source, repr(value), checks, names.objects)


SINGLETONS = (torch.dtype, torch.layout, torch.memory_format, types.CodeType)
BY_VALUE = (int, float, complex, str, bytes, tuple, torch.Size, range, slice, frozenset, set)
BY_VALUE += (torch.device,)  # compared with ==: torch.device("cpu") is made anew each time
BY_VALUE += (torch.finfo, torch.iinfo)  # made anew too; == compares every field


def _same_constant(expr: str, value, names: Names):
    """Type first (so `True` never passes for `1`, nor `1.0`), then the value."""
    kind = type(value)
    if value is None or value is Ellipsis or value is NotImplemented or kind is bool:
        yield f"{expr} is {value!r}"
        return
    if kind in SINGLETONS or isinstance(value, enum.Enum):  # one object per value
        yield f"{expr} is {names(value)}"
        return
    if kind not in BY_VALUE:
        raise GuardError(f"cannot guard on a constant of type {kind.__name__}: {value!r}")
    yield f"type({expr}) is {names(kind)}"
    if kind in (tuple, torch.Size):
        yield f"len({expr}) == {len(value)}"
        for i, item in enumerate(value):
            yield from _same_constant(f"{expr}[{i}]", item, names)
    elif kind in (range, slice):  # range(0) == range(5, 5), but .start tells them apart
        for part in ("start", "stop", "step"):
            yield from _same_constant(f"{expr}.{part}", getattr(value, part), names)
    elif kind is complex:
        yield from _same_constant(f"{expr}.real", value.real, names)
        yield from _same_constant(f"{expr}.imag", value.imag, names)
    elif kind in (frozenset, set) and all(type(item) is str for item in value):
        yield f"{expr} == {set(value)!r}" if value else f"not {expr}"
    elif kind in (frozenset, set):  # {1} == {True} == {1.0}, but the trace saw which
        if not all(is_checkable_key(item) for item in value):
            raise GuardError(f"cannot guard on a set of things with their own ==: {value!r}")
        yield in_order_by_shape(expr, list(value), names, "the_items")  # the order it saw
    elif kind in (torch.device, torch.finfo, torch.iinfo):
        yield f"{expr} == {names(value, str(value))}"
    elif kind is float and math.isnan(value):
        yield f"{names(math)}.isnan({expr})"
    elif kind is float and math.isinf(value):
        yield f"{expr} == {'-' if value < 0 else ''}{names(math)}.inf"
    elif kind is float and value == 0.0:  # 0.0 == -0.0, but 1 / x tells them apart
        yield f"{names(math)}.copysign(1.0, {expr}) == {math.copysign(1.0, value)}"
        yield f"{expr} == 0.0"
    else:
        yield f"{expr} == {value!r}"


def length_check(source: Source, value, names: Names) -> Guard:
    expr = source.name()
    check = Check(f"len({expr}) == {len(value)}", "length", len(value), f"len({expr})")
    return Guard("LENGTH_CHECK", source, str(len(value)), (check,), names.objects)


DICT_KEY_TYPES = (str, int, bool, bytes)  # compared by value, and written back by repr()


def dict_keys_match(source: Source, value, names: Names) -> Guard:
    """The keys of a dict, in order: a trace that iterated over them unrolled that order. A
    class or a function is a key by identity (`int`, `torch.Tensor`), so it is named, and kept
    alive, by the guard."""
    keys = list(value.keys())
    expr = source.name()
    if any(type(key) not in DICT_KEY_TYPES for key in keys):
        return _dict_keys_by_shape(source, keys, names)
    checks = [Check(f"list({expr}.keys()) == {keys!r}", "keys", keys, f"list({expr}.keys())")]
    key_types = [type(key) for key in keys]
    if any(t is not str for t in key_types):  # {1: a} == {True: a}; the trace saw which
        code = f"[type(k) for k in {expr}] == [{', '.join(t.__name__ for t in key_types)}]"
        checks.append(Check(code, "key types", key_types, f"[type(k) for k in {expr}]"))
    return Guard("DICT_KEYS", source, repr(keys), tuple(checks), names.objects)


def _dict_keys_by_shape(source: Source, keys: list, names: Names) -> Guard:
    """Keys that `repr` cannot write (classes, functions, enum members, tuples of them):
    compared as `key_shape`s, held by the guard."""
    if not all(is_checkable_key(key) for key in keys):
        raise GuardError(f"{source.describe()} has keys with their own ==: {keys!r}")
    expr = source.name()
    code = in_order_by_shape(expr, keys, names, "keys")
    check = Check(code, "keys", keys, f"list({expr}.keys())", _short_keys)
    return Guard("DICT_KEYS", source, _short_keys(keys), (check,), names.objects)


def in_order_by_shape(expr: str, items: list, names: Names, label: str) -> str:
    """The check that iterating `expr` gives `items`' `key_shape`s, in order: what the dict
    keys guard and the set guard ask of the keys and items they cannot write by `repr`."""
    return (
        f"[{names(key_shape)}(k) for k in {expr}] == {names([key_shape(i) for i in items], label)}"
    )


def _short_keys(keys) -> str:
    return f"[{', '.join(_short_repr(key) for key in keys)}]"


def key_shape(key):
    """A key with what tells it apart from keys that `==` finds equal to it (1, 1.0 and True
    are one key to a dict, but the trace saw which): its type, all the way down a tuple.
    A class or a function is itself, and `==` compares it by identity."""
    kind = type(key)
    if kind in (tuple, frozenset):
        return kind, kind(key_shape(k) for k in key)
    if kind is float:  # 0.0 == -0.0
        return kind, math.copysign(1.0, key), key
    return kind, key


def absent(source: Source, value, names: Names) -> Guard:
    """`key not in container`: an attribute the trace found missing from an instance dict."""
    key, base = source.index, source.base.name()
    check = Check(f"{key!r} not in {base}", "absence", False, f"{key!r} in {base}")
    return Guard("ABSENT", source, f"{key!r} not present", (check,), names.objects)


def alias(source: Source, value, names: Names, other: Source) -> Guard:
    """Two paths to one object, which the trace gave one Variable (a list held as a local and
    as the `__self__` of a method on the stack): a change through one showed through both."""
    expr, same = source.name(), other.name()
    what = f"{source.describe()} and {other.describe()} are two objects now, one before"
    check = Check(f"{expr} is {same}", what, None, "None")
    return Guard("ALIAS", source, f"is {same}", (check,), names.objects)


def distinct(sources: list[Source], names: Names) -> Guard:
    """Objects the trace kept apart (it changed one of two objects of a type, or asked
    `a is b`): passed as one object, a change through one path would show through the
    other. All of them at once, as torch's NO_TENSOR_ALIASING guard checks its tensors."""
    exprs = [source.name() for source in sources]
    code = f"len({{{', '.join(f'id({e})' for e in exprs)}}}) == {len(exprs)}"
    shared = names(first_shared, "first_shared")
    described = [source.describe() for source in sources]
    actual = f"{shared}([{', '.join(exprs)}], {described!r})"
    check = Check(code, "distinctness", None, actual, str)
    summary = f"{len(exprs)} objects, no two the same"
    return Guard("DISTINCT", None, summary, (check,), names.objects)


def first_shared(values: list, described: list[str]) -> str:
    """Which two of the objects are one now: what a failed DISTINCT guard says."""
    seen = {}
    for value, where in zip(values, described, strict=True):
        if id(value) in seen:
            return f"{seen[id(value)]} and {where} are one object now, two before"
        seen[id(value)] = where
    return "no two are the same"


def grad_mode(source: None, value, names: Names) -> Guard:
    enabled = torch.is_grad_enabled()
    code = f"{names(torch)}.is_grad_enabled() is {enabled}"
    check = Check(code, "grad mode", enabled, f"{names(torch)}.is_grad_enabled()", _on_off)
    return Guard("GRAD_MODE", None, _on_off(enabled), (check,), names.objects)


def inference_mode(source: None, value, names: Names) -> Guard:
    """The caller's inference mode, which the code asked for (the compile runs outside it:
    `outside_inference_mode` in stage2_symbolic_vm/torch_api/grad_modes.py)."""
    enabled = inference_mode_enabled()
    actual = f"{names(torch)}.is_inference_mode_enabled()"
    check = Check(f"{actual} is {enabled}", "inference mode", enabled, actual, _on_off)
    return Guard("INFERENCE_MODE", None, _on_off(enabled), (check,), names.objects)


def default_device(source: None, value, names: Names) -> Guard:
    device = torch.get_default_device()
    actual = f"{names(torch)}.get_default_device()"
    check = Check(f"{actual} == {names(device, str(device))}", "default device", device, actual)
    return Guard("DEFAULT_DEVICE", None, str(device), (check,), names.objects)


def autocast(source: None, value, names: Names) -> Guard:
    """Whether autocast is on for each device type, and its dtype: they change what ops compute."""
    checks = []
    for device in AUTOCAST_DEVICES:
        enabled = torch.is_autocast_enabled(device)
        actual = f"{names(torch)}.is_autocast_enabled({device!r})"
        checks.append(Check(f"{actual} is {enabled}", f"autocast on {device}", enabled, actual))
        if enabled:
            dtype = torch.get_autocast_dtype(device)
            actual = f"{names(torch)}.get_autocast_dtype({device!r})"
            code = f"{actual} is {names(dtype)}"
            checks.append(Check(code, f"autocast dtype on {device}", dtype, actual, _dtype))
    summary = ", ".join(
        f"{d} {_dtype(torch.get_autocast_dtype(d)) if torch.is_autocast_enabled(d) else 'off'}"
        for d in AUTOCAST_DEVICES
    )
    return Guard("AUTOCAST", None, summary, tuple(checks), names.objects)


def default_dtype(source: None, value, names: Names) -> Guard:
    dtype = torch.get_default_dtype()
    code = f"{names(torch)}.get_default_dtype() is {names(dtype)}"
    check = Check(code, "default dtype", dtype, f"{names(torch)}.get_default_dtype()", _dtype)
    return Guard("DEFAULT_DTYPE", None, _dtype(dtype), (check,), names.objects)


def caller_exception(source: None, value, names: Names) -> Guard:
    """The caller handles no exception: `sys.exc_info()` in the traced code, outside its own
    `except` blocks, answered None. Guards run in the caller's context, before the frame
    (as the trace did), where `sys.exc_info()` is the caller's."""
    code = f"{names(sys)}.exc_info()[1] is None"
    check = Check(code, "the exception the caller handles", None, f"{names(sys)}.exc_info()[1]")
    return Guard("CALLER_EXCEPTION", None, "none", (check,), names.objects)


GUARD_BUILDERS = {
    "type": type_match,
    "id": id_match,
    "function": function_match,
    "tensor": tensor_match,
    "constant": constant_match,
    "length": length_check,
    "dict_keys": dict_keys_match,
    "absent": absent,
    "alias": alias,
    "distinct": lambda source, value, names: distinct([source], names),  # see build_guards
    "module_hooks": module_hooks,
    "grad_mode": grad_mode,
    "inference_mode": inference_mode,
    "default_dtype": default_dtype,
    "default_device": default_device,
    "autocast": autocast,
    "caller_exception": caller_exception,
}
assert set(GUARD_BUILDERS) == set(Assumption.KINDS), "every assumption kind needs a guard"

# Checks of a value's shape (type, identity) come before checks that use it, so
# `len(L['xs'])` only runs once `L['xs']` is known to be a list again.
_ORDER = {"type": 0, "id": 0, "function": 0, "tensor": 1, "constant": 1, "length": 2}
_ORDER |= {"dict_keys": 2, "absent": 2, "module_hooks": 2, "alias": 3, "distinct": 3}


def build_guards(assumptions, L: dict, G: dict, F=None, shapes=None) -> list[Guard]:
    """One guard per assumption, reading the values the trace saw from L, G and F; with
    `shapes` (a trace's symbols, stage2_symbolic_vm/dynamic_shapes/shapes.py), tensors with
    symbolic sizes are matched dim by dim and the SHAPE_ENV guard comes last (dynamic_shapes/)."""
    # Imported here: those guards are made of this file's Guard, Check and Names.
    from .dynamic_shapes.shape_guards import shape_env_guard, symbolic_tensor_match

    assumptions = list(assumptions)
    tensors = {a.source for a in assumptions if a.kind == "tensor"}
    symbolic = {}
    if shapes is not None and shapes.active:  # the fakes of tensors with symbolic sizes
        symbolic = {s: v for s, v in shapes.tracked if isinstance(v, torch.Tensor)}
    names = Names()
    guards = []
    apart = [a.source for a in assumptions if a.kind == "distinct"]
    for assumption in sorted(assumptions, key=_check_order):
        if assumption.kind == "type" and assumption.source in tensors:
            continue  # TENSOR_MATCH checks the type already
        if assumption.kind == "distinct":
            continue  # one guard for all of them, below
        source = assumption.source
        readable = source is not None and assumption.kind not in ("absent", "alias")
        value = source.get(L, G, F) if readable else None
        if assumption.kind == "tensor" and source in symbolic:
            guards.append(symbolic_tensor_match(source, value, names, symbolic[source], shapes.env))
            continue
        if assumption.kind == "alias":
            guards.append(alias(source, value, names, assumption.other))
            continue
        guards.append(GUARD_BUILDERS[assumption.kind](source, value, names))
    if apart:  # after every check of the paths it reads
        guards.append(distinct(apart, names))
    shape_guard = shape_env_guard(shapes)
    return guards if shape_guard is None else [*guards, shape_guard]


def _check_order(assumption: Assumption):
    if assumption.source is None:
        return (-1, 0)  # global state first: cheapest, and it fails the most often
    depth = _depth(assumption.source)
    if assumption.other is not None:  # after the checks of both objects' paths
        depth = max(depth, _depth(assumption.other))
    return (depth, _ORDER[assumption.kind])


def _depth(source: Source) -> int:
    base = getattr(source, "base", None)
    return 0 if base is None else 1 + _depth(base)


def _same_device(value, device: torch.device) -> bool:
    return isinstance(value, torch.device) and value == device


def _shape(shape) -> str:
    """`4` for a 1-d size, `(4, 8)` otherwise: "size changed: expected 4, got 8"."""
    return str(shape[0]) if len(shape) == 1 else str(tuple(shape))


def _on_off(enabled: bool) -> str:
    return "enabled" if enabled else "disabled"


def _short_repr(value) -> str:
    """One line for an object: `<function f>`, `<module 'torch'>`, `<Linear module>`."""
    if isinstance(value, torch.nn.Module):
        return f"<{type(value).__name__} module>"
    if isinstance(value, types.ModuleType):  # not "from <path>" or "(built-in)": both vary
        return f"<module {value.__name__!r}>"
    if isinstance(value, types.BuiltinFunctionType) and not is_method_of_self(value):
        return f"<built-in function {callable_name(value)}>"  # not "of pybind11_detail_..."
    if isinstance(value, types.CodeType):  # "the code of <lambda> at f.py:12"
        where = f"{value.co_filename.rsplit('/', 1)[-1]}:{value.co_firstlineno}"
        return f"<code of {value.co_qualname} at {where}>"
    text = repr(value).splitlines()[0]
    if " at 0x" in text:  # <function f at 0x7f..>
        text = text.split(" at 0x")[0] + ">"
    return text
