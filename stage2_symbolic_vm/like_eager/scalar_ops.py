"""A torch function given numbers, not tensors: `torch.div(n, 2, rounding_mode="trunc")`.

Eager makes a new 0-d tensor of the numbers on the default device and runs the op on it,
as a factory makes a tensor: Hugging Face's Longformer chunks a sequence so, with the
sequence length an int. The call is recorded as it is, its result on the default device
(which the trace then assumes, as a factory's), as torch/_dynamo records it. Only torch's
pointwise ops are taken (aten's `pointwise` tag): they compute a value from their
arguments alone, where another function of numbers may change the process
(`torch.manual_seed(0)`) or draw random numbers.
"""

import torch

from ..dynamic_shapes.shapes import SymNodeVariable
from ..errors import Unsupported
from ..torch_api import queries
from ..trace import op_name
from ..variables import TensorVariable


def is_pointwise(name: str) -> bool:
    packet = getattr(torch.ops.aten, name, None)
    if not isinstance(packet, torch._ops.OpOverloadPacket):
        return False
    return any(torch.Tag.pointwise in getattr(packet, o).tags for o in packet.overloads())


def record_scalar_op(tx, target, args, kwargs, shown):
    """`target(*args, **kwargs)`, numbers only (sizes that are symbols among them): recorded,
    its result a new tensor."""
    from ..tensor_ops import to_values  # tensor_ops.py builds on this file

    given = [*args, *kwargs.values()]
    numbers = all(a.is_python_constant() or isinstance(a, SymNodeVariable) for a in given)
    if isinstance(target, str) or not numbers or not is_pointwise(op_name(target)):
        raise Unsupported("untraceable_call", f"{shown} called without a tensor argument")
    values, named = to_values(list(args), True), to_values(dict(kwargs), True)
    if tx.trace.shapes.active:  # among FakeTensors, a FakeTensor
        with tx.trace.shapes.mode():
            meta = tx.run_python(target, *values, **named)
    else:
        with torch.device("meta"):
            meta = tx.run_python(target, *values, **named)
    queries.assume_process_state(tx, [], kwargs, meta, factory=True)
    values, named = to_values(list(args), False), to_values(dict(kwargs), False)
    node = tx.trace.add_node("call_function", target, values, named, meta=meta, lineno=tx.lineno)
    return TensorVariable(node, meta, torch.get_default_device())
