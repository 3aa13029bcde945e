"""Calls: a user function is inlined, a torch function recorded, a module's forward inlined.

A user function is not called: its bytecode runs in a child frame of the VM
(`tx.inline_call`), so everything it does is traced too. A torch function is
not inlined: it becomes one node of the trace (`tx.record_call`). An nn.Module
is a bag of attributes (parameters and buffers become trace inputs) whose call
inlines its `forward`. This is torch/_dynamo/variables/{functions,torch,nn_module}.py
in three classes.
"""

import types

import torch

from .errors import ObservedAttributeError, ObservedException, Unsupported
from .python.callables import FunctionObject, globals_source
from .python.dicts import DictVariable
from .python.objects import class_attribute, class_lookup
from .python.sequences import TupleVariable
from .sources import attr_of, item_of
from .tensor_ops import FACTORIES, tensor_variables
from .torch_api.module_containers import ModuleContainer
from .torch_api.module_hooks import call_with_hooks, hooks_of
from .torch_api.queries import TORCH_CONSTANT_CLASSES, answer_now, torch_query
from .trace import code_signature
from .variables import ConstantVariable, LazyVariable, Variable, is_constant_value


class UserFunctionVariable(FunctionObject, Variable):
    """A Python function: its code, globals, defaults and closure cells; calling it inlines it.

    `self_arg` is set for a method bound to its object (`self.helper`); `globals_source`
    says how to reach the function's globals from the frame (None: the traced function's own).
    `value` is the function object itself, for one read from outside. Its attributes
    (`__name__`, what `functools.wraps` sets) and how stage 4 rebuilds it are
    FunctionObject's (python/callables.py).
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
        cells = tx.closure_cells(fn, source)  # opcodes/names.py
        var = cls(fn.__code__, fn.__globals__, defaults, kwdefaults, cells, source=source)
        var.globals_source = globals_source(fn, source)
        var.value, var.trace = fn, tx.trace if source is not None else None
        return var

    @property
    def name(self):
        return self.code.co_qualname

    def python_type(self):
        return types.FunctionType if self.self_arg is None else types.MethodType

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

    def __repr__(self):
        return f"UserFunctionVariable({self.name})"


# Namespaces whose functions are tensor operations: recorded as one node, never inlined.
TORCH_MODULES = (torch, torch.nn, torch.nn.functional, torch.linalg, torch.fft, torch.special)
TORCH_FUNCTION_MODULES = {"torch", "torch.functional", "torch.nn.functional", "torch._C._nn"}
TORCH_FUNCTION_MODULES |= {"torch._C._linalg", "torch._C._fft", "torch._C._special"}
# torch.ops.aten.add.Tensor: namespaces of operators, operator packets, and operators.
TORCH_OPS_TYPES = (torch._ops._OpNamespace, torch._ops.OpOverloadPacket, torch._ops.OpOverload)


def is_torch_function(value) -> bool:
    if isinstance(value, TORCH_OPS_TYPES) or value is torch.ops:
        return True
    return callable(value) and getattr(value, "__module__", None) in TORCH_FUNCTION_MODULES


def is_torch_object(value) -> bool:
    """torch or a namespace of it, one of its functions, queries or constant classes."""
    if any(value is m for m in TORCH_MODULES) or is_torch_function(value):
        return True
    return torch_query(value) is not None or any(value is c for c in TORCH_CONSTANT_CLASSES)


class TorchVariable(Variable):
    """`torch`, a namespace under it (`torch.nn.functional`, `torch.ops.aten`), or a function."""

    def __init__(self, value, source=None):
        self.value, self.source = value, source

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
        """A tensor operation is recorded as one node; a question about the process is answered
        now (torch_api/queries.py), and a Python helper of torch given no tensor is inlined."""
        answer = answer_now(tx, self.value, args, kwargs)  # `torch.is_grad_enabled()`
        if answer is not None:
            return answer
        helper = isinstance(self.value, types.FunctionType) and self.value.__name__ not in FACTORIES
        if helper and not tensor_variables([*args, *kwargs.values()]):
            # a Python helper of torch (`F._none_or_dtype(None)`), not a tensor op: inline it
            inlined = UserFunctionVariable.from_function(tx, self.value, self.source)
            return inlined.call(tx, args, kwargs)
        return tx.record_call(self.value, args, kwargs)

    def __repr__(self):
        return f"TorchVariable({getattr(self.value, '__name__', self.value)})"


class NNModuleVariable(ModuleContainer, Variable):
    """An nn.Module instance: parameters and buffers are inputs, calling it inlines `forward`.

    A ModuleList, Sequential or ModuleDict also iterates and indexes (ModuleContainer,
    torch_api/module_containers.py)."""

    def __init__(self, module, source):
        self.module, self.source = module, source

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
                # two dicts, instead of calling __getattr__ (Python code) on every call.
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
        recompiles); with hooks, torch's own `_call_impl` (torch_api/module_hooks.py)."""
        if hooks_of(self.module):
            return call_with_hooks(tx, self, args, kwargs)
        tx.trace.assume("module_hooks", self.source)
        return self.get_attr(tx, "forward").call(tx, args, kwargs)

    def __repr__(self):
        return f"NNModuleVariable({type(self.module).__name__} {self.source})"
