"""Questions a program asks torch about the process, answered while tracing.

`torch.is_grad_enabled()`, `torch.get_default_dtype()`, `torch.cuda.is_available()`,
`torch.compiler.is_compiling()`: none is a tensor operation, so none becomes a node.
The VM answers each now; an answer that can change between calls is a fact about the
process the trace relies on, which stage 3 guards. A function marked with
`torch.compiler.assume_constant_result` is called now too, its answer unguarded.
"""

import sys
import types

import torch

from ..errors import Unsupported
from ..variables import ConstantVariable, TensorVariable, Variable, constant_args
from . import autocast
from .grad_modes import inference_mode_enabled

# Classes whose instances are constants of the trace, made now: `torch.Size([2, 3])`.
TORCH_CONSTANT_CLASSES = (torch.Size, torch.device, torch.dtype, torch.finfo, torch.iinfo)


def answer_now(tx, fn, args, kwargs):
    """`fn(*args, **kwargs)` for a function of torch that is not a tensor operation, answered
    while tracing: a query, `torch.is_tensor`, a constant class (`torch.finfo(dtype)`). None
    for the rest."""
    if (query := torch_query(fn)) is not None:
        return query(tx, *args, **kwargs)
    if fn is torch.is_tensor and len(args) == 1:
        return ConstantVariable(isinstance(args[0], TensorVariable))
    if fn in TORCH_CONSTANT_CLASSES:
        args, kwargs = constant_args(args, kwargs)
        return ConstantVariable(tx.run_python(fn, *args, **kwargs))
    return None


def assume_process_state(tx, tensors, kwargs, result, factory: bool):
    """The process state a recorded op relies on (tensor_ops.py): grad mode, the default
    dtype, and for a factory without device=, the default device."""
    tx.trace.assume("grad_mode")
    if relies_on_default_dtype(tensors, kwargs, result, factory):
        tx.trace.assume("default_dtype")
    if not tensors and "device" not in kwargs:  # a factory: made on the default device
        tx.trace.assume("default_device")


def relies_on_default_dtype(tensors, kwargs, result, factory: bool) -> bool:
    """A factory without dtype=, or a float result from non-float inputs (`int_tensor * 0.5`)."""
    if factory and "dtype" not in kwargs:
        return True
    floating = isinstance(result, torch.Tensor) and result.dtype.is_floating_point
    return floating and not any(t.meta.dtype.is_floating_point for t in tensors)


def global_state(tx, kind: str, value):
    """A fact about the process the code asked for (`torch.is_grad_enabled()`): guarded."""
    tx.trace.assume(kind)
    return tx.wrap_constant_result(value, kind)


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
    torch.is_grad_enabled: lambda tx: global_state(tx, "grad_mode", tx.root().grad_enabled),
    torch.is_inference_mode_enabled: lambda tx: global_state(
        tx, "inference_mode", inference_mode_enabled()
    ),
    torch.get_default_dtype: lambda tx: global_state(
        tx, "default_dtype", torch.get_default_dtype()
    ),
    torch.get_default_device: lambda tx: global_state(
        tx, "default_device", torch.get_default_device()
    ),
    # Autocast as the trace has it at this point: inside a `with torch.autocast()` too
    torch.is_autocast_enabled: autocast.enabled_query,
    torch.get_autocast_dtype: autocast.dtype_query,
    torch.is_autocast_cpu_enabled: lambda tx: autocast.enabled_query(tx, ConstantVariable("cpu")),
    torch.get_autocast_cpu_dtype: lambda tx: autocast.dtype_query(tx, ConstantVariable("cpu")),
    torch.get_autocast_gpu_dtype: lambda tx: autocast.dtype_query(tx, ConstantVariable("cuda")),
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
    dynamo = sys.modules.get("torch._dynamo")  # imported by the program that calls it
    if dynamo is not None and value is dynamo.graph_break:
        return _requested_break
    if value is _generation_tag():
        return _not_traced_bookkeeping
    while callable(value):
        if isinstance(value, (types.FunctionType, types.BuiltinFunctionType)):
            handler = TORCH_QUERIES.get(value)
            if handler is not None:
                return handler
        value = getattr(value, "__wrapped__", None)
    return None


def _generation_tag():
    """torch.compile's record of the modules a forward builds: once torch.compile has run,
    torch's `Module.__init__` calls it (torch/_dynamo/mutation_guard.py), or None."""
    guard = sys.modules.get("torch._dynamo.mutation_guard")
    return guard.GenerationTracker.tag.__func__ if guard is not None else None


def _not_traced_bookkeeping(tx, *args):
    # `nn.Softmax(dim=-1)(x)` in a forward (CodeGen's attention) builds a module; after any
    # torch.compile in the process, torch's Module.__init__ also notes it in a table of
    # weak references that only torch.compile reads when it compiles. Not a result of the
    # program: the trace leaves it out (inlined, its weakref.ref stopped the VM).
    return ConstantVariable(None)


def _requested_break(tx):
    # an empty function in torch, which torch's compiler answers with a break
    raise Unsupported("untraceable_call", "`torch._dynamo.graph_break()` asks for a break here")


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
