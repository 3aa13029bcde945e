"""Grad mode and inference mode: `with torch.no_grad()` and its kin.

`with torch.no_grad()` and `@torch.enable_grad()` are traced, and a frame compiled under
`torch.inference_mode()` is traced outside it. Autocast, the other mode of the process
that changes what ops compute, is autocast.py.

Entering and leaving a grad-mode context manager change the mode the trace records later
ops under, and record `torch._C._set_grad_enabled(mode)` in the graph, so that the graph
switches the mode at the same points eager does.
"""

import contextlib
import contextvars
import types

import torch

from ..errors import ObservedException, Unsupported
from ..sources import attr_of
from ..variables import BoundMethodVariable, ConstantVariable, Variable, constant_args


def set_grad_mode(tx, enabled: bool) -> bool:
    """Switch grad mode inside the trace (a `with torch.no_grad()`): the graph records the
    switch, later ops are recorded under the new mode. Returns the previous mode."""
    root = tx.root()
    previous, root.grad_enabled = root.grad_enabled, enabled
    tx.trace.assume("grad_mode")  # the mode on entry, which the first switch relies on
    tx.trace.add_node("call_function", torch._C._set_grad_enabled, (enabled,), lineno=tx.lineno)
    return previous


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
            self.previous = set_grad_mode(tx, self.enabled)

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
            set_grad_mode(tx, self.previous)
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
        previous = set_grad_mode(tx, GRAD_MODES[self.cls])
        try:
            result = self.fn.call(tx, args, kwargs)
        except ObservedException:  # the code may catch it: the decorator has left the mode
            set_grad_mode(tx, previous)
            raise
        set_grad_mode(tx, previous)
        return result

    def reconstruct(self, cg):
        cg.call_callable(decorate, lambda: cg.load_const(self.cls), lambda: cg.reconstruct(self.fn))

    def __repr__(self):
        return f"GradModeFunctionVariable({self.cls.__name__}, {self.fn!r})"


def decorate(cls, fn):
    """`cls()(fn)`: the function decorated again by the new code (`torch.no_grad()(fn)`)."""
    return cls()(fn)


def is_grad_mode(value) -> bool:
    """`torch.no_grad` & co, or a `torch.no_grad()` made before the call (builder.py's
    WRAPPERS); an instance of `set_grad_enabled` set the mode when it was made, and is wrapped
    as any object."""
    if isinstance(value, type) and value in GRAD_MODES:
        return True
    return GRAD_MODES.get(type(value)) is not None


def wrap_grad_mode(tx, value, source):
    if isinstance(value, type):
        if source is not None:
            tx.trace.assume("id", source)
        return GradModeClassVariable(value, source)
    if source is not None:
        tx.trace.assume("type", source)
    return GradModeVariable(type(value), GRAD_MODES[type(value)], source)
