"""Callable symbolic values: user functions (inlined), torch functions (recorded), nn.Modules.

A user function is not called: its bytecode runs in a child frame of the VM
(`tx.inline_call`), so everything it does is traced too. A torch function is
not inlined: it becomes one node of the trace. An nn.Module is a bag of
attributes (parameters and buffers become trace inputs) whose call inlines
its `forward`. This is torch/_dynamo/variables/{functions,torch,nn_module}.py
in a few classes.
"""

import contextlib
import contextvars
import functools
import operator
import sys
import types

import torch

from .errors import ObservedAttributeError, ObservedException, Unsupported
from .python.containers import DictVariable, SequenceVariable, TupleVariable
from .python.objects import (
    SLOT_TYPES,
    BuiltinSlotVariable,
    UserClassVariable,
    UserObjectVariable,
    class_attribute,
    class_lookup,
)
from .sources import AttrSource, ImportSource, attr_of, item_of
from .tensor_ops import FACTORIES, tensor_variables
from .trace import code_signature
from .variables import (
    UNKNOWN,
    BoundMethodVariable,
    ConstantVariable,
    LazyVariable,
    TensorVariable,
    Variable,
    constant_args,
    is_constant_value,
)


class UserFunctionVariable(Variable):
    """A Python function: its code, globals, defaults and closure cells; calling it inlines it.

    `self_arg` is set for a method bound to its object (`self.helper`); `globals_source`
    says how to reach the function's globals from the frame (None: the traced function's own).
    `value` is the function object itself, for one read from outside.
    """

    def __init__(self, code, globals_, defaults=(), kwdefaults=None, closure=(), *, source=None):
        self.code, self.globals, self.source = code, globals_, source
        self.defaults, self.kwdefaults = tuple(defaults), dict(kwdefaults or {})
        self.closure = tuple(closure)
        self.self_arg = None
        self.globals_source = None
        self.value = None
        self.trace = None
        self.attrs = {}  # what the trace assigned to the function's `__dict__` (`__wrapped__`)
        self.slots = {}  # ... and to the attributes kept in the function itself (`__name__`)

    @classmethod
    def from_function(cls, tx, fn, source):
        """A function read from outside: its defaults and cells are outside values too."""
        defaults = [
            LazyVariable(v, item_of(attr_of(source, "__defaults__"), i))
            for i, v in enumerate(fn.__defaults__ or ())
        ]
        kwdefaults = {
            k: LazyVariable(v, item_of(attr_of(source, "__kwdefaults__"), k))
            for k, v in (fn.__kwdefaults__ or {}).items()
        }
        cells = []
        for i, cell in enumerate(fn.__closure__ or ()):
            cell_source = item_of(attr_of(source, "__closure__"), i)
            cells.append(tx.outside_cell(cell, cell_source, attr_of(cell_source, "cell_contents")))
        var = cls(fn.__code__, fn.__globals__, defaults, kwdefaults, cells, source=source)
        var.globals_source = globals_source(fn, source)
        var.value, var.trace = fn, tx.trace if source is not None else None
        return var

    @property
    def name(self):
        return self.code.co_qualname

    def python_type(self):
        return types.FunctionType if self.self_arg is None else types.MethodType

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

    def bound_to(self, obj: Variable | None) -> "UserFunctionVariable":
        bound = UserFunctionVariable(
            self.code, self.globals, self.defaults, self.kwdefaults, self.closure
        )
        bound.source, bound.globals_source, bound.self_arg = self.source, self.globals_source, obj
        bound.value, bound.trace = self.value, self.trace
        return bound

    def bind(self, args: list, kwargs: dict) -> dict:
        """Match arguments to parameters exactly as a call would: name -> Variable."""
        if self.self_arg is not None:
            args = [self.self_arg, *args]
        signature = code_signature(self.code, self.defaults, self.kwdefaults)
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as error:
            raise ObservedException(error, f"{self.name}()") from None
        bound.apply_defaults()
        arguments = {}
        for name, value in bound.arguments.items():
            kind = signature.parameters[name].kind
            if kind is kind.VAR_POSITIONAL:
                value = TupleVariable(value)
            elif kind is kind.VAR_KEYWORD:
                value = DictVariable(value)
            if name.startswith("implicit"):  # inspect renames a comprehension's `.0` argument
                name = "." + name.removeprefix("implicit")
            arguments[name] = value
        return arguments

    def call(self, tx, args, kwargs):
        return tx.inline_call(self, args, kwargs)

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
        elif self.slots or self.attrs:  # made, then given attributes (`functools.wraps`)
            cg.call_callable(
                with_attributes,
                lambda: cg.make_function(self),
                lambda: cg.build_map({**self.slots, **self.attrs}),
            )
        else:
            cg.make_function(self)

    def __repr__(self):
        return f"UserFunctionVariable({self.name})"


# The attributes a function keeps in itself, not in its `__dict__` (CPython's func_getsetlist
# and func_memberlist).
FUNCTION_SLOTS = {"__name__", "__qualname__", "__module__", "__doc__", "__code__"}
FUNCTION_SLOTS |= {"__defaults__", "__kwdefaults__", "__annotations__"}


def with_attributes(fn, attrs: dict):
    """A function the new code made again, given the attributes the trace assigned to it."""
    for name, value in attrs.items():
        setattr(fn, name, value)
    return fn


def globals_source(fn, source):
    """Where a function's globals are read from: its module's `__dict__` when it has one (so
    every function of a module reads a global through one source, and guards it once)."""
    module = sys.modules.get(fn.__module__) if isinstance(fn.__module__, str) else None
    if module is not None and vars(module) is fn.__globals__:
        return AttrSource(ImportSource(fn.__module__), "__dict__")
    return attr_of(source, "__globals__")


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


# Namespaces whose functions are tensor operations: recorded as one node, never inlined.
TORCH_MODULES = (torch, torch.nn, torch.nn.functional, torch.linalg, torch.fft, torch.special)
TORCH_FUNCTION_MODULES = {"torch", "torch.functional", "torch.nn.functional", "torch._C._nn"}
TORCH_FUNCTION_MODULES |= {"torch._C._linalg", "torch._C._fft", "torch._C._special"}
TORCH_CONSTANT_CLASSES = (torch.Size, torch.device, torch.dtype, torch.finfo, torch.iinfo)
# torch.ops.aten.add.Tensor: namespaces of operators, operator packets, and operators.
TORCH_OPS_TYPES = (torch._ops._OpNamespace, torch._ops.OpOverloadPacket, torch._ops.OpOverload)


def is_torch_function(value) -> bool:
    if isinstance(value, TORCH_OPS_TYPES) or value is torch.ops:
        return True
    return callable(value) and getattr(value, "__module__", None) in TORCH_FUNCTION_MODULES


def _compiling(tx):
    return ConstantVariable(True)  # the code asks whether it is being compiled: it is


# torch functions that answer questions about the process, not about tensors. The VM
# answers them now; those whose answer can change between calls are guarded.
TORCH_QUERIES = {
    torch.compiler.is_compiling: _compiling,
    torch.compiler.is_dynamo_compiling: _compiling,
    torch._utils.is_compiling: _compiling,  # torch._dynamo.is_compiling is this one too
    # The machine's devices, which do not change while the process runs: answered, unguarded
    # (`device = "cuda" if torch.cuda.is_available() else "cpu"` starts many scripts)
    torch.cuda.is_available: lambda tx: ConstantVariable(torch.cuda.is_available()),
    torch.cuda.device_count: lambda tx: ConstantVariable(torch.cuda.device_count()),
    torch.jit.is_scripting: lambda tx: ConstantVariable(False),
    torch.jit.is_tracing: lambda tx: ConstantVariable(False),
    torch.compiler.is_exporting: lambda tx: ConstantVariable(False),
    torch.is_grad_enabled: lambda tx: tx.global_state("grad_mode", tx.root().grad_enabled),
    torch.is_inference_mode_enabled: lambda tx: tx.global_state(
        "inference_mode", inference_mode_enabled()
    ),
    torch.get_default_dtype: lambda tx: tx.global_state("default_dtype", torch.get_default_dtype()),
    torch.get_default_device: lambda tx: tx.global_state(
        "default_device", torch.get_default_device()
    ),
    torch.is_autocast_enabled: lambda tx, *device: tx.global_state(
        "autocast", torch.is_autocast_enabled(*[d.as_python_constant() for d in device])
    ),
    torch.get_autocast_dtype: lambda tx, device: tx.global_state(
        "autocast", torch.get_autocast_dtype(device.as_python_constant())
    ),
    # The random generator's state: read or set in Python, never by a graph.
    **dict.fromkeys(
        (torch.manual_seed, torch.seed, torch.initial_seed, torch.get_rng_state),
        lambda tx, *args: _rng_state(),
    ),
    torch.set_rng_state: lambda tx, *args: _rng_state(),
    # `__torch_function__` overrides: only plain tensors are traced, and they have none.
    torch._C._has_torch_function: lambda tx, args: _has_torch_function(tx, args.unpack(tx)),
    torch._C._has_torch_function_unary: lambda tx, arg: _has_torch_function(tx, [arg]),
    torch._C._has_torch_function_variadic: lambda tx, *args: _has_torch_function(tx, args),
    # Probes of torch's other tracers (functorch transforms, torch.jit.trace): none is active.
    torch._C._are_functorch_transforms_active: lambda tx: ConstantVariable(False),
    torch._C._get_tracing_state: lambda tx: ConstantVariable(None),
    torch._C._log_api_usage_once: lambda tx, *args: ConstantVariable(None),  # telemetry
}


def torch_query(value):
    """The VM's answer to a torch query function, or None. Looked up through `__wrapped__`:
    importing torch._dynamo wraps `torch.manual_seed` in a new function, for one."""
    while callable(value):
        if isinstance(value, (types.FunctionType, types.BuiltinFunctionType)):
            handler = TORCH_QUERIES.get(value)
            if handler is not None:
                return handler
        value = getattr(value, "__wrapped__", None)
    return None


def _rng_state():
    raise Unsupported(
        "untraceable_call",
        "`torch.manual_seed` (or another call on the random generator's state) is not traced: "
        "the graph draws its numbers in order, but cannot set the seed",
    )


def _has_torch_function(tx, values):
    """torch's answer for plain tensors and Parameters (their override is disabled)."""
    for t in values:
        kind = t.python_type() if isinstance(t, TensorVariable) else torch.Tensor
        if kind is not torch.Tensor and kind.__torch_function__ is not DISABLED:
            raise Unsupported("untraceable_call", "a tensor subclass with __torch_function__")
    return ConstantVariable(False)


DISABLED = torch._C._disabled_torch_function_impl


class TorchVariable(Variable):
    """`torch`, a namespace under it (`torch.nn.functional`, `torch.ops.aten`), or a function."""

    def __init__(self, value, source=None):
        self.value, self.source = value, source

    def python_type(self):
        return type(self.value)

    def as_python_object(self):
        return self.value

    def identity(self):
        return self.value

    def get_attr(self, tx, name):
        namespace = isinstance(self.value, (types.ModuleType, *TORCH_OPS_TYPES[:2]))
        if not namespace and self.value is not torch.ops:
            if isinstance(self.value, torch._ops.OpOverload) or not hasattr(self.value, name):
                raise ObservedAttributeError(f"{self.value} has no attribute {name!r}")
            return tx.wrap(getattr(self.value, name), attr_of(self.source, name))
        if not hasattr(self.value, name):
            raise ObservedAttributeError(f"module {self.value.__name__!r} has no {name!r}")
        # `torch` itself is an "id" assumption; what it holds is trusted, as in torch/_dynamo
        value, source = getattr(self.value, name), attr_of(self.source, name)
        if is_constant_value(value):
            return ConstantVariable(value)
        if isinstance(value, types.ModuleType) or is_torch_function(value):
            return TorchVariable(value, source)
        if any(value is c for c in TORCH_CONSTANT_CLASSES):
            return TorchVariable(value, source)
        if torch_query(value) is not None:
            return TorchVariable(value, source)
        return tx.wrap(value, source)

    def call(self, tx, args, kwargs):
        if (query := torch_query(self.value)) is not None:
            return query(tx, *args, **kwargs)
        if self.value is torch.is_tensor and len(args) == 1:
            return ConstantVariable(isinstance(args[0], TensorVariable))
        if self.value in TORCH_CONSTANT_CLASSES:  # torch.Size([2, 3]), torch.finfo(dtype)
            args, kwargs = constant_args(args, kwargs)
            return ConstantVariable(tx.run_python(self.value, *args, **kwargs))
        helper = isinstance(self.value, types.FunctionType) and self.value.__name__ not in FACTORIES
        if helper and not tensor_variables([*args, *kwargs.values()]):
            # a Python helper of torch (`F._none_or_dtype(None)`), not a tensor op: inline it
            inlined = UserFunctionVariable.from_function(tx, self.value, self.source)
            return inlined.call(tx, args, kwargs)
        return tx.record_call(self.value, args, kwargs)

    def __repr__(self):
        return f"TorchVariable({getattr(self.value, '__name__', self.value)})"


class ConstantResultVariable(Variable):
    """A function marked with `torch.compiler.assume_constant_result` (Hugging Face marks its
    install probes, `is_torch_available`): called now, while tracing, and its answer is a
    constant of the trace, not guarded: the mark promises it never changes."""

    MARK = "_dynamo_marked_constant"  # what torch's decorator sets, and torch/_dynamo reads

    def __init__(self, fn, source=None):
        self.fn, self.source = fn, source

    def identity(self):
        return self.fn

    def call(self, tx, args, kwargs):
        args, kwargs = constant_args(args, kwargs)
        return tx.wrap_constant_result(tx.run_python(self.fn, *args, **kwargs), self.fn.__name__)

    def __repr__(self):
        return f"ConstantResultVariable({self.fn.__qualname__})"


class AutogradFunctionVariable(UserClassVariable):
    """A `torch.autograd.Function` subclass. `Fn.apply(x)` where no gradient can flow (grad
    mode off, or no input requires grad) is its forward, inlined with a real `FunctionCtx`
    made in the trace; with gradients it is a graph break, as its backward would be lost
    (torch/_dynamo traces both into one higher-order op, autograd_function_apply)."""

    def get_attr(self, tx, name):
        if name == "apply":
            return AutogradApplyVariable(self)
        return super().get_attr(tx, name)


class AutogradApplyVariable(Variable):
    """`Fn.apply`, bound to its AutogradFunctionVariable."""

    def __init__(self, function: AutogradFunctionVariable):
        self.function = function

    def call(self, tx, args, kwargs):
        tx.trace.assume("grad_mode")
        tensors = tensor_variables([*args, *kwargs.values()])
        if tx.root().grad_enabled and any(t.meta.requires_grad for t in tensors):
            raise Unsupported(
                "untraceable_call",
                f"{self.function.cls.__qualname__}.apply on tensors that require grad: the VM "
                "traces forward only, and its backward would be lost",
            )
        ctx = tx.wrap(torch.autograd.function.FunctionCtx, None).call(tx, [], {})
        needs_grad = ConstantVariable((False,) * len(args))
        ctx.set_attr(tx, "needs_input_grad", TupleVariable(needs_grad.unpack(tx)))
        function, cls = self.function, self.function.cls
        forward = function.get_attr(tx, "forward")
        if cls.setup_context is torch.autograd.Function.setup_context:  # forward(ctx, ...)
            return forward.call(tx, [ctx, *args], kwargs)
        output = forward.call(tx, list(args), kwargs)  # the newer style: setup_context apart
        setup = function.get_attr(tx, "setup_context")
        setup.call(tx, [ctx, TupleVariable(list(args)), output], {})
        return output

    def __repr__(self):
        return f"AutogradApplyVariable({self.function.cls.__qualname__})"


_caller_in_inference_mode = contextvars.ContextVar("minidynamo_inference_mode", default=False)


@contextlib.contextmanager
def outside_inference_mode():
    """Compile with inference mode off and grad off in its place, as torch does
    (torch/_dynamo/utils.py, `maybe_disable_inference_mode`): tensors made under inference
    mode have no version counter, and the trace reads a meta tensor's to learn what an op
    writes. The graph itself runs in the caller's mode, so its outputs are inference tensors
    just as eager's are."""
    if not torch.is_inference_mode_enabled():
        yield
        return
    token = _caller_in_inference_mode.set(True)
    try:
        with torch.inference_mode(False), torch.no_grad():
            yield
    finally:
        _caller_in_inference_mode.reset(token)


def inference_mode_enabled() -> bool:
    """Whether the caller runs under `torch.inference_mode()`, also while compiling outside it."""
    return _caller_in_inference_mode.get() or torch.is_inference_mode_enabled()


# Grad-mode context managers: the class, and the mode it sets (None: set_grad_enabled's
# argument). torch/_dynamo/variables/ctx_manager.py has GradModeVariable too.
GRAD_MODES = {torch.no_grad: False, torch.enable_grad: True, torch.set_grad_enabled: None}


class GradModeClassVariable(Variable):
    """`torch.no_grad`, `torch.enable_grad`, `torch.set_grad_enabled`: calling one makes a
    GradModeVariable (`set_grad_enabled(False)` sets the mode at once, as torch's does)."""

    def __init__(self, cls, source=None):
        self.cls, self.source = cls, source

    def python_type(self):
        return type(self.cls)

    def identity(self):
        return self.cls

    def call(self, tx, args, kwargs):
        mode = GRAD_MODES[self.cls]
        if mode is not None:
            return GradModeVariable(self.cls, mode)
        (enabled,) = constant_args(args, kwargs)[0] or list(kwargs.values())
        manager = GradModeVariable(self.cls, bool(enabled))
        manager.enter(tx)  # set_grad_enabled(False) works as a plain call, without `with`
        return manager


class GradModeVariable(Variable):
    """A grad-mode context manager. Entering and leaving it change the mode the trace
    records ops under (`tx.grad_enabled`), and record `torch._C._set_grad_enabled(mode)` in
    the graph, so that the graph switches the mode at the same points eager does."""

    def __init__(self, cls, enabled, source=None):
        self.cls, self.enabled, self.source = cls, enabled, source
        self.previous = None

    def python_type(self):
        return self.cls

    def enter(self, tx):
        if self.previous is None:
            self.previous = tx.set_grad_mode(self.enabled)

    def get_attr(self, tx, name):
        if name in ("__enter__", "__exit__", "clone"):
            return BoundMethodVariable(self, name)
        if name == "__class__":
            return GradModeClassVariable(self.cls, attr_of(self.source, "__class__"))
        return super().get_attr(tx, name)

    def call_method(self, tx, name, args, kwargs):
        if name == "__enter__":
            self.enter(tx)
            return ConstantVariable(None)
        if name == "__exit__":
            tx.set_grad_mode(self.previous)
            return ConstantVariable(False)  # an exception goes on
        if name == "clone":  # the decorator form (`@torch.no_grad()`) enters a fresh clone
            return GradModeVariable(self.cls, self.enabled)
        return super().call_method(tx, name, args, kwargs)

    def call(self, tx, args, kwargs):
        """`@torch.no_grad()` on a function the trace made: a function run under the mode."""
        if GRAD_MODES[self.cls] is None or len(args) != 1 or kwargs:
            raise Unsupported("untraceable_call", f"{self.cls.__name__}(...) used as a decorator")
        return GradModeFunctionVariable(self.cls, args[0])


class GradModeFunctionVariable(Variable):
    """A function decorated in the trace with `@torch.no_grad()` or `@torch.enable_grad()`: a
    call runs it under that mode, then gives the caller's mode back, as torch's decorator
    does (torch/utils/_contextlib.py, `_wrap_generator`'s plain-function case)."""

    def __init__(self, cls, fn: Variable):
        self.cls, self.fn = cls, fn

    def python_type(self):
        return types.FunctionType

    def call(self, tx, args, kwargs):
        previous = tx.set_grad_mode(GRAD_MODES[self.cls])
        try:
            result = self.fn.call(tx, args, kwargs)
        except ObservedException:  # the code may catch it: the decorator has left the mode
            tx.set_grad_mode(previous)
            raise
        tx.set_grad_mode(previous)
        return result

    def reconstruct(self, cg):
        cg.call_callable(decorate, lambda: cg.load_const(self.cls), lambda: cg.reconstruct(self.fn))

    def __repr__(self):
        return f"GradModeFunctionVariable({self.cls.__name__}, {self.fn!r})"


def decorate(cls, fn):
    """`cls()(fn)`: the function decorated again by the new code (`torch.no_grad()(fn)`)."""
    return cls()(fn)


class NNModuleVariable(Variable):
    """An nn.Module instance: parameters and buffers are inputs, calling it inlines `forward`."""

    def __init__(self, module, source):
        self.module, self.source = module, source

    def python_type(self):
        return type(self.module)

    def as_python_object(self):
        return self.module

    def identity(self):
        return self.module

    def get_attr(self, tx, name):
        stored = tx.side_effects.load_attr(self, name)
        if stored is not None:
            return stored
        module, source = self.module, attr_of(self.source, name)
        if name == "__class__":
            return tx.wrap(type(module), attr_of(self.source, "__class__"))
        if name in module.__dict__:  # found before nn.Module.__getattr__ is asked
            return tx.wrap(module.__dict__[name], source)
        # Not in the instance: assigned there later, it would hide what the class has, or what
        # __getattr__ finds.
        tx.trace.assume("absent", item_of(attr_of(self.source, "__dict__"), name))
        for table in ("_parameters", "_buffers", "_modules"):  # what nn.Module.__getattr__ finds
            if name in module.__dict__.get(table, {}):
                # Sourced where __getattr__ finds it, as torch writes it:
                # `L['self']._modules['fc']._parameters['weight']`. Guards and the new code read
                # two dicts, instead of calling __getattr__ (Python, 0.4 µs a read) on every call.
                stored = item_of(attr_of(self.source, table), name)
                return tx.wrap(module.__dict__[table][name], stored)
        cls_var = tx.wrap(type(module), attr_of(self.source, "__class__"))
        found = class_lookup(type(module), name)
        if found is None:
            for table in ("_parameters", "_buffers", "_modules"):
                tx.trace.assume("absent", item_of(attr_of(self.source, table), name))
            raise ObservedAttributeError(
                f"{type(module).__name__!r} object has no attribute {name!r}"
            )
        return class_attribute(tx, self, cls_var, name, *found)

    def set_attr(self, tx, name, value):
        if any(name in self.module.__dict__.get(t, {}) for t in ("_parameters", "_modules")):
            raise Unsupported("unsupported_mutation", f"assigns submodule or parameter {name!r}")
        tx.side_effects.store_attr(self, name, value)

    def call_method(self, tx, name, args, kwargs):
        if name == "__call__":  # `super().__call__(...)` in a module's own __call__
            return self.module_call(tx, args, kwargs)
        return self.get_attr(tx, name).call(tx, args, kwargs)

    CONTAINERS = (torch.nn.ModuleList, torch.nn.Sequential, torch.nn.ModuleDict)

    def unpack(self, tx):
        """`for layer in self.layers`: the submodules (or ModuleDict's keys), counted in a guard."""
        if not isinstance(self.module, self.CONTAINERS):
            return super().unpack(tx)
        tx.trace.assume("length", self.source)
        if isinstance(self.module, torch.nn.ModuleDict):
            tx.trace.assume("dict_keys", attr_of(self.source, "_modules"))
            return [ConstantVariable(k) for k in self.module._modules]
        return [self.get_attr(tx, name) for name in self.module._modules]

    def getitem(self, tx, key):
        if not isinstance(self.module, self.CONTAINERS):
            return super().getitem(tx, key)
        if isinstance(self.module, torch.nn.ModuleDict):
            return self.get_attr(tx, key.as_python_constant())
        tx.trace.assume("length", self.source)
        index = key.as_python_constant()
        names = list(self.module._modules)
        if isinstance(index, slice):  # `self.layers[: config.num_layers]`
            return ModuleSliceVariable([self.get_attr(tx, n) for n in names[index]], self, index)
        if not isinstance(index, int) or not -len(names) <= index < len(names):
            raise ObservedException(IndexError(f"index {index!r} is out of range"))
        return self.get_attr(tx, names[index])

    def truth(self, tx):
        if isinstance(self.module, self.CONTAINERS):
            tx.trace.assume("length", self.source)
            return len(self.module) > 0
        return True

    def call(self, tx, args, kwargs):
        """`module(x)`: a class's own __call__ runs (it calls nn.Module's in turn, as Hugging
        Face's GradientCheckpointingLayer does), or nn.Module.__call__: hooks, then forward."""
        found = class_lookup(type(self.module), "__call__")
        if found[1] is not torch.nn.Module.__call__:
            cls_var = tx.wrap(type(self.module), attr_of(self.source, "__class__"))
            return class_attribute(tx, self, cls_var, "__call__", *found).call(tx, args, kwargs)
        return self.module_call(tx, args, kwargs)

    def module_call(self, tx, args, kwargs):
        """nn.Module.__call__: forward alone when there are no hooks (guarded: one added later
        recompiles); with forward hooks, torch's own `_call_impl`, inlined as torch/_dynamo
        inlines it, so the hooks run in torch's order (and their dicts are guarded)."""
        present = hooks_of(self.module)
        if not present:
            tx.trace.assume("module_hooks", self.source)
            return self.get_attr(tx, "forward").call(tx, args, kwargs)
        if backward := [h for h in present if "backward" in h]:
            raise Unsupported(
                "untraceable_call",
                f"{type(self.module).__name__} has backward hooks ({', '.join(backward)}): "
                "they act on autograd's graph, which a forward trace does not build",
            )
        call_impl = UserFunctionVariable.from_function(tx, torch.nn.Module._call_impl, None)
        return call_impl.call(tx, [self, *args], kwargs)

    def __repr__(self):
        return f"NNModuleVariable({type(self.module).__name__} {self.source})"


# The hooks nn.Module.__call__ runs around forward (stage 3's module_hooks guard reads these).
MODULE_HOOKS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
GLOBAL_HOOKS = ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks")
GLOBAL_HOOKS += ("_global_backward_pre_hooks",)


class ModuleSliceVariable(SequenceVariable):
    """`self.layers[:n]`: nn.ModuleList's slice is a new ModuleList of the same submodules. The
    VM keeps their Variables (each guarded where it came from) to iterate, index and count;
    should it leave the trace, the new code slices the container again."""

    def __init__(self, items, container: NNModuleVariable, index: slice):
        super().__init__(items)
        self.container, self.index = container, index

    def python_type(self):
        return type(self.container.module)

    def getitem(self, tx, key):
        if isinstance(key.as_python_constant(), slice):
            raise Unsupported("unsupported_value", "a slice of a slice of a module container")
        return super().getitem(tx, key)

    def call_method(self, tx, name, args, kwargs):
        if name in ("__len__", "__getitem__"):
            return super().call_method(tx, name, args, kwargs)
        raise Unsupported("unsupported_value", f"{self.python_type().__name__}[slice].{name}()")

    def get_attr(self, tx, name):
        raise Unsupported("unsupported_value", f"{self.python_type().__name__}[slice].{name}")

    def reconstruct(self, cg):
        cg.call_callable(
            operator.getitem,
            lambda: cg.reconstruct(self.container),
            lambda: cg.load_const(self.index),
        )


def hooks_of(module) -> list[str]:
    """The names of the hook dicts, the module's own or global, that are not empty."""
    present = [h for h in MODULE_HOOKS if getattr(module, h, None)]
    return present + [h for h in GLOBAL_HOOKS if getattr(torch.nn.modules.module, h)]


class SuperVariable(Variable):
    """`super()` inside a method: attribute lookup that starts after `cls` in the object's MRO."""

    def __init__(self, cls, obj: Variable):
        self.cls, self.obj = cls, obj

    def get_attr(self, tx, name):
        mro = self.obj.python_type().__mro__
        for index in range(mro.index(self.cls) + 1, len(mro)):
            attr = mro[index].__dict__.get(name)
            if attr is None:
                continue
            source = None
            if self.obj.source is not None:
                mro_source = attr_of(attr_of(self.obj.source, "__class__"), "__mro__")
                source = item_of(attr_of(item_of(mro_source, index), "__dict__"), name)
            if attr is torch.nn.Module.__call__ and isinstance(self.obj, NNModuleVariable):
                return BoundMethodVariable(self.obj, "__call__")  # hooks, then forward
            if isinstance(attr, types.FunctionType):
                return tx.wrap(attr, source).bound_to(self.obj)
            if isinstance(attr, SLOT_TYPES) and isinstance(self.obj, UserObjectVariable):
                return BuiltinSlotVariable(attr, self.obj)
            break
        raise Unsupported("unsupported_value", f"super().{name} is not a plain method")
