"""Autocast: `torch.autocast` around the compiled call, or entered inside it.

Under autocast the dispatcher picks the dtype each op computes in as it runs: a matmul in
bfloat16, a softmax in float32, `cat` in the widest of its inputs' dtypes (the lists are
in aten/src/ATen/autocast_mode.cpp). It does so through a dispatch key of the tensors'
device, which a meta tensor lacks. So a trace under autocast runs its ops on FakeTensors,
which keep their device (dynamic_shapes/shapes.py starts them with the trace), with the
process switched to the trace's autocast state for each op (`as_traced`): the results
carry the dtypes eager's would. Autocast decides, not a copy of its lists.

The state is part of the trace, as grad mode is (grad_modes.py). Around the call
(ambient), it is guarded (stage 3's AUTOCAST guard) and the graph says nothing: a backend
runs the graph in the same state. Entered inside (`with torch.autocast(...)`, the
decorator, an `enabled=False` region inside an enabled one, `torch.cuda.amp.autocast`),
the graph records `_enter_autocast(...)` and `_exit_autocast(...)` where eager enters and
leaves, as torch/_dynamo's graphs do (variables/ctx_manager.py, AutocastModeVariable).

The graph holds torch calls, not casts: autocast's decisions become explicit ops when a
backend traces the graph to ATen under the same state (stage 4's training/aot.py), where
each cast is an `aten._to_copy` node, as in AOTAutograd's graphs.
"""

import contextlib

import torch
from torch.amp.autocast_mode import _enter_autocast, _exit_autocast

from ..errors import ObservedException, Unsupported
from ..variables import BoundMethodVariable, ConstantVariable, Variable, constant_args

# The device types whose autocast state a trace follows and stage 3 guards.
AUTOCAST_DEVICES = ("cpu", "cuda")


def ambient() -> dict:
    """The process's autocast state, per device type: (enabled, dtype)."""
    return {device: ambient_of(device) for device in AUTOCAST_DEVICES}


def enabled_anywhere(state: dict) -> bool:
    return any(enabled for enabled, _ in state.values())


def ambient_key() -> tuple | None:
    """The process's autocast state as a key (stage 4's ATen traces are made per state), or
    None when autocast is off everywhere: one C call, the usual case."""
    if not torch._C._is_any_autocast_enabled():
        return None
    return tuple(ambient().items())


def is_autocast(value) -> bool:
    """`torch.autocast` and its subclasses (`torch.cuda.amp.autocast`), or an instance."""
    kind = value if isinstance(value, type) else type(value)
    return issubclass(kind, torch.amp.autocast)


def wrap_autocast(tx, value, source):
    """A class is itself (guarded by identity); a manager made before the call (the one a
    decorator closes over) is that very object, whose settings do not change."""
    if source is not None:
        tx.trace.assume("id", source)
    if isinstance(value, type):
        return AutocastClassVariable(value, source)
    return AutocastVariable(value, source)


@contextlib.contextmanager
def as_traced(state: dict):
    """The process in the trace's autocast state while an op runs on FakeTensors; nothing to
    do when the two agree (autocast around the call, or none)."""
    now = ambient()
    changed = [(d, s) for d, s in state.items() if s != now[d]]
    if not changed:
        yield
        return
    before = [(d, now[d]) for d, _ in changed]
    set_state(changed)
    try:
        yield
    finally:
        set_state(before)


def ambient_of(device: str) -> tuple:
    return torch.is_autocast_enabled(device), torch.get_autocast_dtype(device)


def set_state(states):
    for device, (enabled, dtype) in states:
        torch.set_autocast_enabled(device, enabled)
        torch.set_autocast_dtype(device, dtype)


def check(tx):
    """Before an op: the trace relies on the autocast state (guarded), and under autocast
    its ops run on FakeTensors (a trace that began on meta tensors starts again)."""
    tx.trace.assume("autocast")
    if enabled_anywhere(tx.autocast) and not tx.trace.shapes.active:
        tx.trace.shapes.begin(tx)


def state_at(tx, device) -> tuple:
    """(enabled, dtype) for a device type as the trace has it at this point (the process's,
    for a device type the trace does not follow); the trace relies on it (guarded)."""
    tx.trace.assume("autocast")
    name = str(device.as_python_constant())
    return tx.autocast[name] if name in tx.autocast else ambient_of(name)


def enabled_query(tx, device=None):
    """`torch.is_autocast_enabled(device)`; no device is CUDA, torch's old meaning."""
    return ConstantVariable(state_at(tx, device or ConstantVariable("cuda"))[0])


def dtype_query(tx, device):
    return ConstantVariable(state_at(tx, device)[1])


class AutocastClassVariable(Variable):
    """`torch.autocast`, `torch.amp.autocast`, `torch.cuda.amp.autocast`: calling one makes
    the real manager now, from constants, so that torch checks the arguments (a device type
    without autocast, a dtype the device does not support) and says what it says."""

    def __init__(self, cls, source=None):
        self.cls, self.source = cls, source

    def identity(self):
        return self.cls

    def call(self, tx, args, kwargs):
        constants, named = constant_args(args, kwargs)
        return AutocastVariable(tx.run_python(self.cls, *constants, **named))


class AutocastVariable(Variable):
    """An autocast manager. Entering it switches the trace's state for its device type and
    records `_enter_autocast(device, dtype, enabled, cache_enabled)`; leaving records
    `_exit_autocast` and switches back. Entered twice (nested `with` of one manager), it
    leaves in reverse order."""

    def __init__(self, manager, source=None):
        self.manager, self.source = manager, source
        self.entered: list = []  # per entry not yet left: (the enter node, the state before)

    def python_type(self):
        return type(self.manager)

    def identity(self):
        return self.manager

    def get_attr(self, tx, name):
        if name in ("__enter__", "__exit__"):
            return BoundMethodVariable(self, name)
        if name in ("device", "fast_dtype", "_enabled", "_cache_enabled"):
            return ConstantVariable(getattr(self.manager, name))
        return super().get_attr(tx, name)

    def call_method(self, tx, name, args, kwargs):
        if name == "__enter__":
            self.enter(tx)
            return self
        if name == "__exit__":
            self.exit(tx)
            return ConstantVariable(False)  # an exception goes on
        return super().call_method(tx, name, args, kwargs)

    def enter(self, tx):
        m = self.manager
        if m.device not in AUTOCAST_DEVICES:
            raise Unsupported("untraceable_call", f"autocast on {m.device!r} is not traced")
        tx.trace.assume("autocast")  # the state on entry, which leaving restores
        before = tx.autocast[m.device]
        tx.autocast[m.device] = (m._enabled, m.fast_dtype)
        if m._enabled and not tx.trace.shapes.active:
            tx.trace.shapes.begin(tx)  # FakeTensors from now on (may start the trace again)
        arguments = (m.device, m.fast_dtype, m._enabled, m._cache_enabled)
        node = tx.trace.add_node("call_function", _enter_autocast, arguments, lineno=tx.lineno)
        self.entered.append((node, before))

    def exit(self, tx):
        node, before = self.entered.pop()
        tx.trace.add_node("call_function", _exit_autocast, (node,), lineno=tx.lineno)
        tx.autocast[self.manager.device] = before

    def call(self, tx, args, kwargs):
        """`@torch.autocast(...)` on a function the trace made: a function run under it."""
        if len(args) != 1 or kwargs:
            raise Unsupported("untraceable_call", "autocast(...) called with several arguments")
        return AutocastFunctionVariable(self, args[0])

    def __repr__(self):
        m = self.manager
        return f"AutocastVariable({m.device}, {m.fast_dtype}, enabled={m._enabled})"


class AutocastFunctionVariable(Variable):
    """A function decorated in the trace with `@torch.autocast(...)`: a call runs it inside
    the manager, as torch's `autocast_decorator` does (`with manager: return fn(...)`)."""

    def __init__(self, manager: AutocastVariable, fn: Variable):
        self.manager, self.fn = manager, fn

    def python_type(self):
        return type(lambda: None)

    def call(self, tx, args, kwargs):
        self.manager.enter(tx)
        try:
            result = self.fn.call(tx, args, kwargs)
        except ObservedException:  # the code may catch it: the decorator has left autocast
            self.manager.exit(tx)
            raise
        self.manager.exit(tx)
        return result

    def reconstruct(self, cg):
        cg.call_callable(
            decorate, lambda: cg.load_const(self.manager.manager), lambda: cg.reconstruct(self.fn)
        )


def decorate(manager, fn):
    """`manager(fn)`: the function decorated again by the new code."""
    return manager(fn)
