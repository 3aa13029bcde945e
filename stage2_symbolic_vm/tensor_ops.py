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
What a meta tensor does not say by itself (the device of a result, which
arguments an op writes, the ops torch gives no meta function) is in like_eager/.
"""

import operator

import torch

from .dynamic_shapes import shapes
from .errors import Unsupported
from .like_eager import devices, in_place, meta_errors, no_meta_kernel, scalar_ops
from .performance import meta_cache
from .python.constants import plain
from .python.dicts import DictVariable, realized
from .python.sequences import ListVariable, SequenceVariable, TupleVariable
from .torch_api import autocast, queries
from .trace import op_name, target_name
from .variables import ConstantVariable, TensorVariable, constant_args, is_constant_value

# Turning data into Python values: meta tensors have none (torch/_dynamo breaks on these too).
DATA_OPS = {"item", "tolist", "numpy", "is_nonzero", "equal", "allclose", "__bool__", "__int__"}
DATA_OPS |= {"__float__", "__index__", "__complex__", "__repr__", "__str__", "__format__"}
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


def check_traceable(target, name, args, kwargs):
    shown = f"`.{name}()`" if isinstance(target, str) else f"`{target_name(target)}`"
    if name in DATA_OPS:
        raise Unsupported("item_call", f"{shown} reads the data of a tensor")
    if name in UNTRACEABLE_OPS:
        raise Unsupported("untraceable_call", f"{shown} is not traced (a side effect or query)")


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
    if isinstance(value, DictVariable) and not value.key_vars:  # keys that are constants,
        return {k: to_values(v, meta) for k, v in value.items.items()}  # not an id() or tensor
    if isinstance(value, list):
        return [to_values(v, meta) for v in value]
    if isinstance(value, dict):
        return {k: to_values(v, meta) for k, v in value.items()}
    if value.is_python_constant():
        return plain(value.as_python_constant())
    raise Unsupported("unsupported_value", f"cannot pass {value} to a tensor operation")


def tensor_variables(values) -> list:
    """The TensorVariables among the arguments, also in lists (`torch.cat([a, b])`)."""
    found = []
    for value in values:
        if isinstance(value, TensorVariable):
            found.append(value)
        elif isinstance(value, SequenceVariable):
            found += tensor_variables(value.items)
    return found


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
        return scalar_ops.record_scalar_op(tx, target, args, kwargs, shown)  # `torch.div(n, 2)`
    autocast.check(tx)  # torch_api/autocast.py: under autocast, on FakeTensors
    device = devices.result_device(name, tensors, args, kwargs, shown)  # like_eager/devices.py
    meta_args, meta_kwargs = to_values(list(args), True), to_values(dict(kwargs), True)
    result, written = run(tx, target, name, meta_args, meta_kwargs, tensors, shown)
    if name == "setitem":  # `x[i] = v` returns None; what it produces is the changed `x`
        result = meta_args[0]
    if not tensors_in_meta(result):
        if name in METADATA_OPS and is_constant_value(result):
            return ConstantVariable(result)
        if name in METADATA_OPS and tx.trace.shapes.active and tensors:  # sizes with symbols
            return tx.trace.shapes.metadata(tx, tensors[0], name, args, result)
        raise Unsupported(
            "untraceable_call", f"{shown} returns {type(result).__name__}, not a tensor"
        )
    queries.assume_process_state(tx, tensors, kwargs, result, factory=name in FACTORIES)
    same = next((v for v in tensors if v.meta is result), None)
    # What the op writes: by its name and arguments (like_eager/in_place.py), and by the meta
    # run itself (an op that writes in place bumps its tensor's version counter).
    changes = in_place.mutated_arguments(target, name, args, kwargs) or written
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
    # an in-place op returns the tensor it changed
    return same if same is not None else wrap_result(tx, node, result, device)


def run(tx, target, name, meta_args, meta_kwargs, tensors, shown):
    """Run the op on meta tensors (FakeTensors, in a trace with symbols) in the trace's grad
    mode. Returns its result and the tensors it wrote (their version counters moved)."""
    symbolic = tx.trace.shapes.active  # FakeTensors keep their real device: nothing to move
    if not symbolic and (name in FACTORIES or "device" in meta_kwargs):
        meta_kwargs["device"] = "meta"
    if not symbolic and name == "to":
        meta_args = [a if not isinstance(a, (str, torch.device)) else "meta" for a in meta_args]
    if not symbolic and name in ("cpu", "cuda"):  # a meta tensor cannot move: a copy stands
        target, meta_args = "clone", meta_args[:1]  # for the moved tensor
    versions = [t.meta._version for t in tensors]  # an op that writes bumps its target's
    # the grad mode of a `with no_grad()`, the autocast state of a `with torch.autocast()`
    with torch.set_grad_enabled(tx.root().grad_enabled), autocast.as_traced(tx.autocast):
        if symbolic:
            result = shapes.run_on_fakes(target, meta_args, meta_kwargs, shown, tx.trace.shapes)
            tx.trace.shapes.check_marked(tx)
        else:
            result = run_on_meta(target, meta_args, meta_kwargs, shown)
    written = [t for t, v in zip(tensors, versions, strict=True) if t.meta._version != v]
    return result, written


def run_on_meta(target, meta_args, meta_kwargs, shown):
    """Torch's meta function of the op, or its answer kept from an earlier run
    (performance/meta_cache.py); an error it raises is the traced code's."""
    try:
        try:
            return meta_cache.call(target, meta_args, meta_kwargs)
        except NotImplementedError as error:  # no meta kernel: data-dependent, or just missing
            return no_meta_kernel.on_zeros(target, meta_args, meta_kwargs, shown, error)
    except (RuntimeError, TypeError, ValueError, IndexError) as error:
        raise meta_errors.meta_error(error, shown) from None  # the code's, or the meta tensor's


def tensors_in_meta(result) -> bool:
    if isinstance(result, torch.Tensor):
        return True
    return isinstance(result, (tuple, list)) and any(tensors_in_meta(r) for r in result)


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
