"""Wrapping an outside value (an argument, a global, an attribute) into a Variable.

This is where the trace starts to rely on the outside world, so this is where
most assumptions are made: a tensor becomes an `input` node and a "tensor"
assumption, a list fixes its type and length, a module or function its
identity. Constants are assumed only when their value is used
(ConstantVariable.as_python_constant). torch/_dynamo/variables/builder.py
(VariableBuilder) does the same, with many more cases.
"""

import types

import torch

from .builtins_table import (
    PYTHON_MODULES,
    BuiltinVariable,
    PythonModuleVariable,
    is_modeled_builtin,
)
from .errors import Unsupported
from .functions import (
    TORCH_CONSTANT_CLASSES,
    TORCH_MODULES,
    NNModuleVariable,
    TorchVariable,
    UserFunctionVariable,
    is_torch_function,
)
from .sources import ItemSource
from .variables import (
    ConstantVariable,
    DictVariable,
    ListVariable,
    ObjectVariable,
    TensorVariable,
    TupleVariable,
    is_constant_value,
)


def wrap(tx, value, source):
    """The Variable for an outside `value` found at `source`; one Variable per source."""
    cache = tx.wrapped
    if source not in cache:
        cache[source] = wrap_new(tx, value, source)
    return cache[source]


def wrap_new(tx, value, source):
    trace = tx.trace
    if isinstance(value, torch.Tensor):
        return wrap_tensor(tx, value, source)
    if is_constant_value(value):
        return ConstantVariable(value, source, trace)
    if type(value) in (list, tuple):
        trace.assume("type", source)
        trace.assume("length", source)
        items = [wrap(tx, v, ItemSource(source, i)) for i, v in enumerate(value)]
        return (ListVariable if type(value) is list else TupleVariable)(items, source)
    if type(value) is dict:
        if not all(is_constant_value(k) for k in value):
            raise Unsupported(
                "unsupported_value", f"{source.describe()} has keys that are not constants"
            )
        trace.assume("type", source)
        trace.assume("dict_keys", source)
        return DictVariable(
            {k: wrap(tx, v, ItemSource(source, k)) for k, v in value.items()}, source
        )
    trace.assume("id", source)  # from here on, the trace relies on this very object
    if isinstance(value, torch.nn.Module):
        return NNModuleVariable(value, source)
    if isinstance(value, types.FunctionType):
        return UserFunctionVariable.from_function(value, source)
    if any(value is m for m in TORCH_MODULES) or is_torch_function(value):
        return TorchVariable(value, source)
    if any(value is c for c in TORCH_CONSTANT_CLASSES):
        return TorchVariable(value, source)
    if any(value is m for m in PYTHON_MODULES):
        return PythonModuleVariable(value, source)
    if is_modeled_builtin(value):
        return BuiltinVariable(value, source)
    return ObjectVariable(value, source, trace)


def wrap_tensor(tx, value, source):
    """An input tensor: an `input` node whose meta tensor copies shape, strides and dtype."""
    tx.trace.assume("tensor", source)
    meta = torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta")
    meta.requires_grad_(value.requires_grad)
    node = tx.trace.add_node("input", None, source=source, meta=meta, lineno=tx.lineno)
    return TensorVariable(node, meta, value.device, fresh=False, source=source, type_=type(value))
