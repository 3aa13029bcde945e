"""Callable symbolic values: user functions (inlined), torch functions (recorded), nn.Modules.

A user function is not called: its bytecode runs in a child frame of the VM
(`tx.inline_call`), so everything it does is traced too. A torch function is
not inlined: it becomes one node of the trace. An nn.Module is a bag of
attributes (parameters and buffers become trace inputs) whose call inlines
its `forward`. This is torch/_dynamo/variables/{functions,torch,nn_module}.py
in a few classes.
"""

import inspect
import types

import torch

from .errors import Unsupported
from .sources import AttrSource, ItemSource
from .tensor_ops import FACTORIES, tensor_variables
from .variables import (
    CellVariable,
    ConstantVariable,
    DictVariable,
    LazyVariable,
    ObjectVariable,
    TensorVariable,
    TupleVariable,
    Variable,
    constant_args,
    is_constant_value,
)


class UserFunctionVariable(Variable):
    """A Python function: its code, globals, defaults and closure cells; calling it inlines it.

    `self_arg` is set for a method bound to its object (`self.helper`); `globals_source`
    says how to reach the function's globals from the frame (None: the traced function's own).
    """

    def __init__(self, code, globals_, defaults=(), kwdefaults=None, closure=(), *, source=None):
        self.code, self.globals, self.source = code, globals_, source
        self.defaults, self.kwdefaults = tuple(defaults), dict(kwdefaults or {})
        self.closure = tuple(closure)
        self.self_arg = None
        self.globals_source = None

    @classmethod
    def from_function(cls, fn, source):
        """A function read from outside: its defaults and cells are outside values too."""
        if fn.__code__.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE):
            raise Unsupported("unsupported_value", f"{fn.__qualname__} is a generator function")
        defaults = [
            LazyVariable(v, ItemSource(AttrSource(source, "__defaults__"), i))
            for i, v in enumerate(fn.__defaults__ or ())
        ]
        kwdefaults = {
            k: LazyVariable(v, ItemSource(AttrSource(source, "__kwdefaults__"), k))
            for k, v in (fn.__kwdefaults__ or {}).items()
        }
        cells = []
        for i, cell in enumerate(fn.__closure__ or ()):
            cell_source = ItemSource(AttrSource(source, "__closure__"), i)
            contents_source = AttrSource(cell_source, "cell_contents")
            try:
                contents = LazyVariable(cell.cell_contents, contents_source)
            except ValueError:  # an empty cell: the variable is not assigned yet
                contents = None
            cells.append(CellVariable(contents, cell_source))
        var = cls(fn.__code__, fn.__globals__, defaults, kwdefaults, cells, source=source)
        var.globals_source = AttrSource(source, "__globals__")
        return var

    @property
    def name(self):
        return self.code.co_qualname

    def reconstruct_kind(self):
        return "source" if self.source is not None else "function"

    def python_type(self):
        return types.FunctionType

    def bound_to(self, obj: Variable) -> "UserFunctionVariable":
        bound = UserFunctionVariable(
            self.code, self.globals, self.defaults, self.kwdefaults, self.closure
        )
        bound.source, bound.globals_source, bound.self_arg = self.source, self.globals_source, obj
        return bound

    def bind(self, args: list, kwargs: dict) -> dict:
        """Match arguments to parameters exactly as a call would: name -> Variable."""
        if self.self_arg is not None:
            args = [self.self_arg, *args]
        cells = tuple(types.CellType() for _ in self.code.co_freevars) or None
        stand_in = types.FunctionType(
            self.code, {}, self.code.co_name, self.defaults or None, cells
        )
        stand_in.__kwdefaults__ = self.kwdefaults or None
        signature = inspect.signature(stand_in)
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as error:
            raise Unsupported("eager_error", f"{self.name}() raises TypeError: {error}") from None
        bound.apply_defaults()
        arguments = {}
        for name, value in bound.arguments.items():
            kind = signature.parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                value = TupleVariable(value)
            elif kind is inspect.Parameter.VAR_KEYWORD:
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
TORCH_CONSTANT_CLASSES = (torch.Size, torch.device, torch.dtype)


def is_torch_function(value) -> bool:
    return callable(value) and getattr(value, "__module__", None) in TORCH_FUNCTION_MODULES


class TorchVariable(Variable):
    """`torch`, a namespace under it (`torch.nn.functional`), or one of their functions."""

    def __init__(self, value, source=None):
        self.value, self.source = value, source

    def python_type(self):
        return type(self.value)

    def as_python_object(self):
        return self.value

    def get_attr(self, tx, name):
        if not isinstance(self.value, types.ModuleType):
            raise Unsupported("unsupported_value", f"attribute {name!r} of {self.value}")
        if not hasattr(self.value, name):
            raise Unsupported("eager_error", f"module {self.value.__name__!r} has no {name!r}")
        # `torch` itself is an "id" assumption; what it holds is trusted, as in torch/_dynamo
        value, source = getattr(self.value, name), AttrSource(self.source, name)
        if is_constant_value(value):
            return ConstantVariable(value)
        if isinstance(value, types.ModuleType) or is_torch_function(value):
            return TorchVariable(value, source)
        if any(value is c for c in TORCH_CONSTANT_CLASSES):
            return TorchVariable(value, source)
        return ObjectVariable(value, source)

    def call(self, tx, args, kwargs):
        if self.value is torch.is_tensor and len(args) == 1:
            return ConstantVariable(isinstance(args[0], TensorVariable))
        if self.value is torch.is_grad_enabled:
            tx.trace.assume("grad_mode")
            return ConstantVariable(torch.is_grad_enabled())
        if self.value is torch.get_default_dtype:
            tx.trace.assume("default_dtype")
            return ConstantVariable(torch.get_default_dtype())
        if self.value in TORCH_CONSTANT_CLASSES:  # torch.Size([2, 3]), torch.device("cpu")
            args, kwargs = constant_args(args, kwargs)
            return ConstantVariable(tx.run_python(self.value, *args, **kwargs))
        helper = isinstance(self.value, types.FunctionType) and self.value.__name__ not in FACTORIES
        if helper and not tensor_variables([*args, *kwargs.values()]):
            # a Python helper of torch (`F._none_or_dtype(None)`), not a tensor op: inline it
            return UserFunctionVariable.from_function(self.value, self.source).call(
                tx, args, kwargs
            )
        return tx.record_call(self.value, args, kwargs)

    def __repr__(self):
        return f"TorchVariable({getattr(self.value, '__name__', self.value)})"


class NNModuleVariable(Variable):
    """An nn.Module instance: parameters and buffers are inputs, calling it inlines `forward`."""

    def __init__(self, module, source):
        self.module, self.source = module, source

    def python_type(self):
        return type(self.module)

    def get_attr(self, tx, name):
        module, source = self.module, AttrSource(self.source, name)
        for table in ("_parameters", "_buffers", "_modules"):
            if name in module.__dict__.get(table, {}):
                return tx.wrap(module.__dict__[table][name], source)
        if name in module.__dict__:
            return tx.wrap(module.__dict__[name], source)
        try:
            attr = inspect.getattr_static(module, name)
        except AttributeError:
            raise Unsupported(
                "eager_error", f"{type(module).__name__} has no attribute {name!r}"
            ) from None
        class_source = AttrSource(AttrSource(self.source, "__class__"), name)
        if isinstance(attr, staticmethod):
            return tx.wrap(attr.__func__, class_source)
        if isinstance(attr, property):  # a property's getter is an ordinary method: inline it
            getter = UserFunctionVariable.from_function(attr.fget, AttrSource(class_source, "fget"))
            return getter.bound_to(self).call(tx, [], {})
        if isinstance(attr, types.FunctionType):
            tx.trace.assume("id", class_source)
            return UserFunctionVariable.from_function(attr, class_source).bound_to(self)
        if isinstance(attr, classmethod):
            raise Unsupported(
                "unsupported_value", f"classmethod {name!r} of {type(module).__name__}"
            )
        return tx.wrap(attr, class_source)

    def call_method(self, tx, name, args, kwargs):
        return self.get_attr(tx, name).call(tx, args, kwargs)

    CONTAINERS = (torch.nn.ModuleList, torch.nn.Sequential, torch.nn.ModuleDict)

    def unpack(self, tx):
        """`for layer in self.layers`: the submodules (or ModuleDict keys)."""
        if not isinstance(self.module, self.CONTAINERS):
            return super().unpack(tx)
        if isinstance(self.module, torch.nn.ModuleDict):
            return [ConstantVariable(k) for k in self.module._modules]
        return [self.get_attr(tx, name) for name in self.module._modules]

    def getitem(self, tx, key):
        if not isinstance(self.module, self.CONTAINERS):
            return super().getitem(tx, key)
        if isinstance(self.module, torch.nn.ModuleDict):
            return self.get_attr(tx, key.as_python_constant())
        index = key.as_python_constant()
        names = list(self.module._modules)
        if not isinstance(index, int) or not -len(names) <= index < len(names):
            raise Unsupported(
                "unsupported_value", f"index {index!r} of {type(self.module).__name__}"
            )
        return self.get_attr(tx, names[index])

    def call(self, tx, args, kwargs):
        module = self.module
        hooks = (module._forward_hooks, module._forward_pre_hooks, module._backward_hooks)
        global_hooks = (
            torch.nn.modules.module._global_forward_hooks,
            torch.nn.modules.module._global_forward_pre_hooks,
        )
        if any(hooks) or any(global_hooks) or type(module).__call__ is not torch.nn.Module.__call__:
            raise Unsupported(
                "untraceable_call", f"{type(module).__name__} has hooks or its own __call__"
            )
        return self.call_method(tx, "forward", args, kwargs)

    def __repr__(self):
        return f"NNModuleVariable({type(self.module).__name__} {self.source})"


class SuperVariable(Variable):
    """`super()` inside a method: attribute lookup that starts after `cls` in the object's MRO."""

    def __init__(self, cls, obj: Variable):
        self.cls, self.obj = cls, obj

    def get_attr(self, tx, name):
        mro = self.obj.python_type().__mro__
        for index in range(mro.index(self.cls) + 1, len(mro)):
            attr = mro[index].__dict__.get(name)
            if isinstance(attr, types.FunctionType) and self.obj.source is not None:
                mro_source = AttrSource(AttrSource(self.obj.source, "__class__"), "__mro__")
                source = AttrSource(ItemSource(mro_source, index), name)
                return UserFunctionVariable.from_function(attr, source).bound_to(self.obj)
            if attr is not None:
                break
        raise Unsupported("unsupported_value", f"super().{name} is not a plain method")
