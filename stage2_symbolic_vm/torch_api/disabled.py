"""Functions marked disabled (`torch.compiler.disable`, `stage4_fx.disable`): never traced.

A disabled function runs in plain Python. A call to one is a graph break whose reason names
it, as torch/_dynamo/variables/functions.py (`SkipFunctionVariable`) breaks with "Skip
calling `torch.compiler.disable()`d function", instead of inlining the wrapper, whose
`set_eval_frame` the VM cannot look inside. The marks read are torch's own, which its
`DisableContext` (torch/_dynamo/eval_frame.py) sets on the wrapper it returns: stage 4's
`disable` sets them too, so torch.compile and this VM each honour the other's.

The decorator applied inside the traced code (`@torch.compiler.disable` on a nested `def`)
is traced, not broken on: it makes a disabled function Variable, which the new code makes
again by calling the decorator, where a break needs the function itself.
"""

import functools
import sys
import types

import torch

from ..errors import Unsupported
from ..variables import UNKNOWN, ConstantVariable, Variable

MARK = "_torchdynamo_disable"  # torch's mark on a disabled function (and stage 4's)
OURS = "_minidynamo_disable"  # stage 4's wrapper and decorator carry this as well


def is_decorator(value) -> bool:
    """torch's `disable` (by identity: torch._dynamo is not imported for it) or stage 4's."""
    if value is torch.compiler.disable or value.__dict__.get(OURS) == "decorator":
        return True
    decorators = sys.modules.get("torch._dynamo.decorators")
    return decorators is not None and value is decorators.disable


def is_disabled_or_decorator(value) -> bool:
    """A Python function that is disabled, or that disables others (builder.py's table)."""
    if not isinstance(value, types.FunctionType):
        return False
    return bool(value.__dict__.get(MARK)) or is_decorator(value)


def wrap(tx, value, source):
    """A disabled function is recognised by its code, as any function (builder.py says why);
    a decorator by its identity."""
    disabled = bool(value.__dict__.get(MARK))
    if source is not None:
        tx.trace.assume("function" if disabled else "id", source)
    if disabled:
        by = decorator_name(value)  # our wrapper carries our mark, as our decorator does
        return DisabledFunctionVariable(value.__name__, by, value=value, source=source)
    return DisableDecoratorVariable(value, source)


def decorator_name(decorator) -> str:
    return "stage4_fx.disable" if decorator.__dict__.get(OURS) else "torch.compiler.disable"


class DisabledFunctionVariable(Variable):
    """A disabled function: `value` when read from outside; one the trace made is
    `decorator(inner, **kwargs)` (`made`), and is rebuilt so."""

    def __init__(self, name, by, *, value=None, source=None, made=None):
        self.name, self.by, self.value, self.source, self.made = name, by, value, source, made

    def identity(self):
        return UNKNOWN if self.value is None else self.value

    def python_type(self):
        return types.FunctionType

    def call(self, tx, args, kwargs):
        raise Unsupported("untraceable_call", f"`{self.name}` is marked disabled ({self.by})")

    def reconstruct(self, cg):
        if self.made is None:
            return super().reconstruct(cg)
        decorator, inner, kwargs = self.made
        cg.call_callable(decorator, lambda: cg.reconstruct(inner), kwargs=kwargs)

    def __repr__(self):
        return f"DisabledFunctionVariable({self.name}, {self.by})"


class DisableDecoratorVariable(Variable):
    """`torch.compiler.disable` or `stage4_fx.disable`, with the keywords given so far
    (`disable(recursive=False)` is a decorator too)."""

    def __init__(self, decorator, source=None, kwargs=None):
        self.decorator, self.source, self.kwargs = decorator, source, dict(kwargs or {})

    def identity(self):
        return self.decorator if not self.kwargs else UNKNOWN

    def call(self, tx, args, kwargs):
        fn = args[0] if args else ConstantVariable(None)
        # torch's `disable(fn=None, recursive=True, *, reason=None)`: `recursive` may be positional
        kwargs = {**self.kwargs, **dict(zip(("recursive",), args[1:2], strict=False)), **kwargs}
        if fn.is_python_constant() and fn.as_python_constant() is None:
            return DisableDecoratorVariable(self.decorator, kwargs=kwargs)  # `disable(reason=...)`
        return self.disable(fn, kwargs)

    def disable(self, fn, kwargs):
        if isinstance(fn, DisabledFunctionVariable) and fn.made is not None:
            fn = fn.made[1]  # disabled twice is disabled once (torch: `innermost_fn`)
        if fn.python_type() not in (types.FunctionType, types.MethodType):
            raise Unsupported(  # torch changes a class or a module in place: not traced
                "untraceable_call", f"{decorator_name(self.decorator)} applied to {fn}"
            )
        name = fn.code.co_name if hasattr(fn, "code") else getattr(fn.identity(), "__name__", fn)
        made = (self.decorator, fn, kwargs)
        return DisabledFunctionVariable(name, decorator_name(self.decorator), made=made)

    def reconstruct(self, cg):
        if not self.kwargs:
            return super().reconstruct(cg)
        push = functools.partial(cg.load_const, self.decorator)
        cg.call_callable(functools.partial, push, kwargs=self.kwargs)

    def __repr__(self):
        return f"DisableDecoratorVariable({decorator_name(self.decorator)}, {self.kwargs})"
