"""A call's arguments as the lowerings take them: keywords that continue the positional
arguments, passed by position (`torch.argmax(input=x, dim=1)` is `argmax(x, 1)`)."""

import functools
import inspect
from collections.abc import Hashable

import torch
from torch.fx.operator_schemas import _torchscript_schema_to_signature, get_signature_for_torch_op


@functools.cache
def _signatures(target) -> list[inspect.Signature]:
    """torch's signatures of `target`: a Python function's own; a builtin's, or a Tensor
    method's (by name), from the schemas of its ATen op."""
    if isinstance(target, str):
        schemas = torch._C._jit_get_schemas_for_operator(f"aten::{target}")
        return [_torchscript_schema_to_signature(schema) for schema in schemas]
    if inspect.isfunction(target):
        return [inspect.signature(target)]
    return get_signature_for_torch_op(target) or []


def by_position(target, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """The call with the keyword arguments that continue its positional ones in torch's
    signature passed by position: `torch.argmax(input=x, dim=1)` is `argmax(x, 1)`, and
    lowerings name their leading parameters as they like (`x`, `a, b`). Keywords after a
    gap (`argmax(x, keepdim=True)`) and keyword-only ones (`decimals=`) stay keywords, under
    torch's names. Inductor's lowerings get ATen's normalized arguments the same way."""
    if not kwargs or not isinstance(target, Hashable):
        return args, kwargs
    for signature in _signatures(target):
        try:
            signature.bind(*args, **kwargs)
        except TypeError:
            continue  # another overload (`max(x, dim)`, `max(x, other)`)
        args, kwargs = list(args), dict(kwargs)
        for name, parameter in list(signature.parameters.items())[len(args) :]:
            if name not in kwargs or parameter.kind == parameter.KEYWORD_ONLY:
                break
            args.append(kwargs.pop(name))
        return tuple(args), kwargs
    return args, kwargs
