"""In-place ops: which arguments an op changes (`x.add_(1)`, `x += 1`, `out=`, `inplace=True`).

Also which ops a backend must run in program order even when nothing reads their result.

The graph changes the caller's tensors as eager does, so the trace must know what each
op writes: by its name and arguments here, and by the meta run itself (an op that
writes bumps its tensor's version counter: tensor_ops.py). An input changed in place
must not be another input on a later call (side_effects.py keeps them apart). An op
that draws random numbers changes the generator's state: it runs in program order too,
so that the graph draws the numbers eager would draw under the same seed.
"""

import functools
import operator

import torch
from torch.amp.autocast_mode import _enter_autocast, _exit_autocast

from ..python.signatures import signature
from ..trace import op_name

# Random numbers: recorded, in program order; a backend must keep them in that order.
RANDOM_OPS = {"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like"}
RANDOM_OPS |= {"bernoulli", "bernoulli_", "multinomial", "normal", "normal_", "poisson", "rrelu"}
RANDOM_OPS |= {"uniform_", "random_", "exponential_", "geometric_", "cauchy_", "log_normal_"}
RANDOM_OPS |= {"dropout", "dropout_", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout"}
RANDOM_OPS |= {"feature_alpha_dropout", "gumbel_softmax", "rrelu_"}
INPLACE_OPERATORS = {"iadd", "isub", "imul", "imatmul", "itruediv", "ifloordiv", "imod", "ipow"}
INPLACE_OPERATORS |= {"iand", "ior", "ixor", "ilshift", "irshift", "setitem"}


def inplace_argument(target, args, kwargs):
    """The `inplace` argument of a call, by keyword or by position (`F.relu(x, True)`)."""
    if "inplace" in kwargs:
        return kwargs["inplace"]
    position = _inplace_position(target)
    return args[position] if position is not None and position < len(args) else None


@functools.cache
def _inplace_position(target) -> int | None:
    """Where `inplace` is among the parameters of a torch function (F.relu's second)."""
    if isinstance(target, str):
        return None
    try:
        parameters = list(signature(target).parameters)
    except (TypeError, ValueError):  # a C function without a signature
        return None
    return parameters.index("inplace") if "inplace" in parameters else None


def mutated_arguments(target, name, args, kwargs) -> list:
    """The Variables an op changes in place: `x.add_(1)`, `x += 1`, `x[0] = 1`, `out=`."""
    changed = [kwargs["out"]] if "out" in kwargs else []
    inplace = inplace_argument(target, args, kwargs)
    inplace = inplace is not None and inplace.is_python_constant() and inplace.as_python_constant()
    if args and (in_place(target, name) or inplace):
        changed.append(args[0])
    return changed


def in_place(target, name) -> bool:
    """`x.add_()`, `torch.relu_()`, `x += 1`, `x.__iadd__(y)`, `x[i] = v`; not `operator.and_`,
    which is `a & b`."""
    if name in INPLACE_OPERATORS or name.strip("_") in INPLACE_OPERATORS:
        return True
    return name.endswith("_") and not name.endswith("__") and target not in OPERATORS


OPERATORS = {f for f in vars(operator).values() if callable(f)}
# Calls that switch a mode of the process for the ops after them (grad_modes.py, autocast.py).
STATE_SWITCHES = {torch._C._set_grad_enabled, _enter_autocast, _exit_autocast}


def changes_state(target, args, kwargs) -> bool:
    """An op a backend must run, in program order, even if its result is unused: one that
    changes a tensor in place (`x.add_(1)`, `out=`, `inplace=True`), draws random numbers, or
    switches grad mode. `args` and `kwargs` are plain values (an FX node's)."""
    if target in STATE_SWITCHES:  # `with torch.no_grad()`, `with torch.autocast()` in the graph
        return True
    name = op_name(target)
    if name in RANDOM_OPS or in_place(target, name) or "out" in kwargs:
        return True
    return inplace_argument(target, args, kwargs) is True


def stand_in(value: torch.Tensor) -> torch.Tensor:
    """A meta tensor for an input tensor: its shape, strides and dtype, and a leaf where the
    caller's tensor is one, a result of autograd where it is not. Eager refuses to write in
    place into a leaf that requires grad, not into a result of autograd (wav2vec2 writes
    its masked frames into one), and so must the trace."""
    meta = torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta")
    if value.grad_fn is None:
        return meta.requires_grad_(value.requires_grad)
    with torch.enable_grad():  # what clone makes of a leaf: not a leaf
        return meta.requires_grad_().clone()
