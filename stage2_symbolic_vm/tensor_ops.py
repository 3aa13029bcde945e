"""Recording a tensor operation: run it on meta tensors, add one node to the trace.

A meta tensor has a shape, a dtype and strides but no data, so running an op
on meta tensors computes exactly the metadata of its result and nothing else:
`torch.matmul` on a 4096×4096 meta tensor costs nothing. torch/_dynamo does
the same with FakeTensors (meta tensors that also remember a device); here
the device travels beside the meta tensor, in TensorVariable.device.

Some ops cannot be traced this way, and say so: their result depends on the
data (`.item()`, `nonzero`, `x[mask]`), or they touch the world (`backward`).
Random ops are recorded like any other, in program order, so that the graph
draws the numbers eager would draw under the same seed. In-place ops are
recorded too, on inputs as well: the graph changes the caller's tensors as
eager does (a backend that cannot run them in place runs the graph in torch).
"""

import functools
import inspect
import operator

import torch
import torch.utils._pytree as pytree

from .dynamic_shapes import shapes
from .errors import ObservedException, Unsupported
from .performance import meta_cache
from .python.containers import DictVariable, ListVariable, SequenceVariable, TupleVariable
from .trace import target_name
from .variables import ConstantVariable, TensorVariable, constant_args, is_constant_value

# Turning data into Python values: meta tensors have none (torch/_dynamo breaks on these too).
DATA_OPS = {"item", "tolist", "numpy", "is_nonzero", "equal", "allclose", "__bool__", "__int__"}
DATA_OPS |= {"__float__", "__index__", "__complex__", "__repr__", "__str__", "__format__"}
# Random numbers: recorded, in program order; a backend must keep them in that order.
RANDOM_OPS = {"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like"}
RANDOM_OPS |= {"bernoulli", "bernoulli_", "multinomial", "normal", "normal_", "poisson", "rrelu"}
RANDOM_OPS |= {"uniform_", "random_", "exponential_", "geometric_", "cauchy_", "log_normal_"}
RANDOM_OPS |= {"dropout", "dropout_", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout"}
RANDOM_OPS |= {"feature_alpha_dropout", "gumbel_softmax", "rrelu_"}
# Side effects outside the trace, or answers a meta tensor would get wrong.
UNTRACEABLE_OPS = {"backward", "register_hook", "retain_grad", "data_ptr", "storage"}
UNTRACEABLE_OPS |= {"untyped_storage", "share_memory_", "pin_memory", "is_pinned", "get_device"}
UNTRACEABLE_OPS |= {"record_stream", "set_", "resize_", "resize_as_", "storage_offset", "is_set_to"}
# Ops that return a Python value computed from shapes and dtypes only: safe on meta tensors.
METADATA_OPS = {"size", "dim", "ndimension", "numel", "nelement", "stride", "is_contiguous"}
METADATA_OPS |= {"is_floating_point", "is_complex", "is_signed", "element_size", "__len__"}
METADATA_OPS |= {"result_type", "is_same_size", "can_cast", "promote_types"}
# Factories make a tensor from Python values alone; they need a device and a default dtype.
FACTORIES = {"zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye", "tensor"}
FACTORIES |= {"as_tensor", "scalar_tensor", "empty_strided", "zeros_like", "ones_like"}
FACTORIES |= {"full_like", "empty_like", "rand", "randn", "randint", "randperm", "normal"}
INPLACE_OPERATORS = {"iadd", "isub", "imul", "imatmul", "itruediv", "ifloordiv", "imod", "ipow"}
INPLACE_OPERATORS |= {"iand", "ior", "ixor", "ilshift", "irshift", "setitem"}


def op_name(target) -> str:
    """`add_` for `x.add_`, `torch.add_`, `torch.ops.aten.add_.Tensor` alike."""
    if isinstance(target, torch._ops.OpOverload):
        return target.overloadpacket.__name__
    return target if isinstance(target, str) else getattr(target, "__name__", "")


def changes_state(target, args, kwargs) -> bool:
    """An op a backend must run, in program order, even if its result is unused: one that
    changes a tensor in place (`x.add_(1)`, `out=`, `inplace=True`), draws random numbers, or
    switches grad mode. `args` and `kwargs` are plain values (an FX node's)."""
    if target is torch._C._set_grad_enabled:  # `with torch.no_grad()` in the graph
        return True
    name = op_name(target)
    if name in RANDOM_OPS or in_place(target, name) or "out" in kwargs:
        return True
    return inplace_argument(target, args, kwargs) is True


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
        parameters = list(inspect.signature(target).parameters)
    except (TypeError, ValueError):  # a C function without a signature
        return None
    return parameters.index("inplace") if "inplace" in parameters else None


def check_traceable(target, name, args, kwargs):
    shown = f"`.{name}()`" if isinstance(target, str) else f"`{target_name(target)}`"
    if name in DATA_OPS:
        raise Unsupported("item_call", f"{shown} reads the data of a tensor")
    if name in UNTRACEABLE_OPS:
        raise Unsupported(
            "untraceable_call", f"{shown} is not traced (side effect or device query)"
        )


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


def realized(tx, value):
    """`value` with every item of its dicts read (a dict from outside wraps its values only
    when they are used: here they are)."""
    if isinstance(value, DictVariable):
        for key in list(value.items):
            realized(tx, value.value(tx, key))
    elif isinstance(value, SequenceVariable):
        for item in value.items:
            realized(tx, item)
    return value


def to_values(value, meta: bool):
    """Variables -> what the op is called with: meta tensors (meta=True) or trace nodes."""
    if isinstance(value, TensorVariable):
        return value.meta if meta else value.node
    if isinstance(value, shapes.SymNodeVariable):
        return value.value if meta else value.node
    if isinstance(value, shapes.SymSliceVariable):
        return slice(*(to_values(part, meta) for part in value.parts))
    if isinstance(value, SequenceVariable):
        kind = value.python_type()
        if kind is torch.Size and not meta:  # a size with symbols holds nodes: a tuple of them
            kind = tuple
        return kind(to_values(v, meta) for v in value.items)
    if isinstance(value, DictVariable):
        return {k: to_values(v, meta) for k, v in value.items.items()}
    if isinstance(value, list):
        return [to_values(v, meta) for v in value]
    if isinstance(value, dict):
        return {k: to_values(v, meta) for k, v in value.items()}
    if value.is_python_constant():
        return value.as_python_constant()
    raise Unsupported("unsupported_value", f"cannot pass {value} to a tensor operation")


def result_device(name, tensors, args, kwargs) -> torch.device:
    """Meta tensors forget devices: the result lives where its inputs (or `device=`) say."""
    if name in ("cpu", "cuda"):
        return torch.device("cuda", 0) if name == "cuda" else torch.device("cpu")
    device = kwargs["device"].as_python_constant() if "device" in kwargs else None
    if name == "to" and device is None:  # x.to("cuda"), x.to(other_tensor), x.to(torch.float64)
        for arg in args[1:]:
            if isinstance(arg, TensorVariable):
                return arg.device
            if arg.is_python_constant() and isinstance(
                arg.as_python_constant(), (str, torch.device)
            ):
                device = arg.as_python_constant()
    if device is not None:
        return torch.device(device)
    # A CPU scalar tensor may meet a CUDA tensor (`x_cuda * torch.tensor(2.0)`): CUDA wins.
    devices = [t.device for t in tensors if t.device.type != "cpu"] or [t.device for t in tensors]
    return devices[0] if devices else torch.get_default_device()


def tensor_variables(values) -> list:
    """The TensorVariables among the arguments, also in lists (`torch.cat([a, b])`)."""
    found = []
    for value in values:
        if isinstance(value, TensorVariable):
            found.append(value)
        elif isinstance(value, SequenceVariable):
            found += tensor_variables(value.items)
    return found


def run_on_meta(target, meta_args, meta_kwargs, shown):
    try:
        try:  # torch's meta function, or its answer kept from an earlier run (meta_cache.py)
            return meta_cache.call(target, meta_args, meta_kwargs)
        except NotImplementedError as error:  # no meta kernel: data-dependent, or just missing
            if not static_shape(op_name(target)):
                first = str(error).splitlines()[0]
                raise Unsupported("dynamic_shape_op", f"{shown}: {first}") from None
            return on_zeros(target, meta_args, meta_kwargs)
    except (RuntimeError, TypeError, ValueError, IndexError) as error:
        raise ObservedException(error, shown) from None


def run_on_fakes(target, meta_args, meta_kwargs, shown, trace_shapes):
    """`run_on_meta` in a trace with symbols: on FakeTensors, under their mode (no cache: the
    answers hold symbols); an op whose output shape depends on the data is a graph break."""
    with trace_shapes.mode(), shapes.unsupported_symbolic_ops():
        try:
            return meta_cache.run(target, meta_args, meta_kwargs)
        except (RuntimeError, TypeError, ValueError, IndexError) as error:
            if type(error).__module__.startswith(("torch._subclasses", "torch.fx.experimental")):
                raise
            raise ObservedException(error, shown) from None


def static_shape(name: str) -> bool:
    """Whether the aten op of this name has a result shape that does not depend on the data
    (its overloads are not tagged `dynamic_output_shape`, as `nonzero`'s are)."""
    packet = getattr(torch.ops.aten, name, None)
    if not isinstance(packet, torch._ops.OpOverloadPacket):
        return False
    tags = {tag for overload in packet.overloads() for tag in getattr(packet, overload).tags}
    return not tags & {torch.Tag.dynamic_output_shape, torch.Tag.data_dependent_output}


META = torch.device("meta")


def on_zeros(target, meta_args, meta_kwargs):
    """An op with no meta kernel (`torch._transformer_encoder_layer_fwd` in torch 2.11), run
    on real tensors of zeros to learn its result's metadata, as FakeTensor's fallback does."""

    def real(value):
        if isinstance(value, torch.Tensor):
            return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype).zero_()
        return value

    def meta(value):
        if isinstance(value, torch.Tensor):
            return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device=META)
        return value

    args, kwargs = pytree.tree_map(real, (list(meta_args), dict(meta_kwargs)))
    kwargs = {k: ("cpu" if k == "device" else v) for k, v in kwargs.items()}
    return pytree.tree_map(meta, meta_cache.run(target, args, kwargs))


def record_call(tx, target, args: list, kwargs: dict):
    """Record `target(*args, **kwargs)` (or a method, by name); return its result."""
    name = op_name(target)
    shown = f"`.{name}()`" if isinstance(target, str) else f"`{target_name(target)}`"
    check_traceable(target, name, args, kwargs)
    for value in [*args, *kwargs.values()]:
        realized(tx, value)
    tensors = tensor_variables([*args, *kwargs.values()])
    if not tensors and name in METADATA_OPS and not isinstance(target, str):
        # `torch.promote_types(torch.int32, torch.half)`: a question about dtypes, answered now
        constants, named = constant_args(args, kwargs)
        return tx.wrap_constant_result(tx.run_python(target, *constants, **named), shown)
    if not tensors and name not in FACTORIES:
        raise Unsupported("untraceable_call", f"{shown} called without a tensor argument")
    check_autocast(tx, tensors, shown)
    try:
        device = result_device(name, tensors, args, kwargs)
    except RuntimeError as error:
        raise ObservedException(error, shown) from None
    meta_args, meta_kwargs = to_values(list(args), True), to_values(dict(kwargs), True)
    symbolic = tx.trace.shapes.active  # FakeTensors keep their real device: nothing to move
    if not symbolic and (name in FACTORIES or "device" in meta_kwargs):
        meta_kwargs["device"] = "meta"
    if not symbolic and name == "to":
        meta_args = [a if not isinstance(a, (str, torch.device)) else "meta" for a in meta_args]
    if not symbolic and name in (
        "cpu",
        "cuda",
    ):  # a meta tensor cannot move; the copy below stands for the moved tensor
        target, meta_args = "clone", meta_args[:1]
    versions = [t.meta._version for t in tensors]  # an op that writes bumps its target's
    with torch.set_grad_enabled(tx.root().grad_enabled):  # the mode of a `with no_grad()`
        if symbolic:
            result = run_on_fakes(target, meta_args, meta_kwargs, shown, tx.trace.shapes)
            tx.trace.shapes.check_marked(tx)
        else:
            result = run_on_meta(target, meta_args, meta_kwargs, shown)
    written = [t for t, v in zip(tensors, versions, strict=True) if t.meta._version != v]
    if name == "setitem":  # `x[i] = v` returns None; what it produces is the changed `x`
        result = meta_args[0]
    if not tensors_in_meta(result):
        if name in METADATA_OPS and is_constant_value(result):
            return ConstantVariable(result)
        if name in METADATA_OPS and symbolic and tensors:  # sizes with symbols in them
            return tx.trace.shapes.metadata(tx, tensors[0], name, args, result)
        raise Unsupported(
            "untraceable_call", f"{shown} returns {type(result).__name__}, not a tensor"
        )
    tx.trace.assume("grad_mode")
    if relies_on_default_dtype(name, tensors, kwargs, result):
        tx.trace.assume("default_dtype")
    if not tensors and "device" not in kwargs:  # a factory: made on the default device
        tx.trace.assume("default_device")
    same = next((v for v in tensors if v.meta is result), None)
    # What the op writes: by its name and arguments, and by the meta run itself (an op that
    # writes in place bumps its tensor's version counter: `x.__iadd__(y)` too).
    changes = mutated_arguments(target, name, args, kwargs) or written
    for changed in changes:  # an input changed in place must not be another input next time
        tx.side_effects.note_change(changed)
    if same is not None and not changes:
        if device == same.device:
            return same  # `x.contiguous()`, `x.to(x.dtype)`: the op returned its input unchanged
        same, result = None, result.clone()  # `x.to("cuda")`: a new tensor with the same metadata
    node = tx.trace.add_node(
        "call_method" if isinstance(target, str) else "call_function",
        target,
        to_values(list(args), False),
        to_values(dict(kwargs), False),
        meta=result,
        lineno=tx.lineno,
    )
    if same is not None:
        return same  # an in-place op returns the tensor it changed
    return wrap_result(tx, node, result, device)


def check_autocast(tx, tensors, shown):
    """Autocast changes the dtypes ops compute in, on real devices but not on meta tensors:
    a trace under autocast would record the wrong dtypes. The state is guarded, and a
    frame that runs under autocast runs in eager (torch/_dynamo traces it on FakeTensors)."""
    tx.trace.assume("autocast")
    devices = {t.device.type for t in tensors} or {torch.get_default_device().type}
    if any(torch.is_autocast_enabled(d) for d in devices if d in ("cpu", "cuda")):
        raise Unsupported("untraceable_call", f"{shown} runs under torch.autocast")


def tensors_in_meta(result) -> bool:
    if isinstance(result, torch.Tensor):
        return True
    return isinstance(result, (tuple, list)) and any(tensors_in_meta(r) for r in result)


def relies_on_default_dtype(name, tensors, kwargs, result) -> bool:
    """A factory without dtype=, or a float result from non-float inputs (`int_tensor * 0.5`)."""
    if name in FACTORIES and "dtype" not in kwargs:
        return True
    floating = isinstance(result, torch.Tensor) and result.dtype.is_floating_point
    return floating and not any(t.meta.dtype.is_floating_point for t in tensors)


def wrap_result(tx, node, meta, device):
    """A tensor result, or a tuple of them (`torch.split`, `torch.max(x, 1)`), one node per item."""
    if isinstance(meta, torch.Tensor):
        return TensorVariable(node, meta, device)
    items = []
    for i, item in enumerate(meta):
        if not isinstance(item, torch.Tensor):
            raise Unsupported(
                "unsupported_value", f"an op returned {type(item).__name__} in a tuple"
            )
        getitem = tx.trace.add_node(
            "call_function", operator.getitem, (node, i), meta=item, lineno=tx.lineno
        )
        items.append(TensorVariable(getitem, item, device))
    if isinstance(meta, list):
        return ListVariable(items)
    return TupleVariable(items, tuple_type=type(meta))
