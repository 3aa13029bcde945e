"""The dtype of a lowering's result, as torch's own type promotion picks it.

A lowering builds IR of some dtype; which one eager gives is torch's business (type
promotion, integer inputs of `sin` made float, `x.add_(y)` keeping x's dtype). So the
node loop asks torch: it runs the op on one-element stand-ins of the inputs, and the
lowering must agree (graph_lowering.py checks it, and calls torch where it does not).
"""

import warnings

import torch
import torch.utils._pytree as pytree

from ..lowering import SAME_DTYPE, SUPPORTED_DTYPES, EagerOnly, Fallback, is_tensor
from ..symbolic.sizes import hint, is_symbolic
from .externs import ExternValue

CPU = torch.device("cpu")


def stand_in(value, device):
    """A one-element tensor with `value`'s dtype and rank: enough for torch to pick the dtype."""
    if is_tensor(value):
        return torch.ones((1,) * len(value.ranges), dtype=value.dtype, device=device)
    return hint(value) if is_symbolic(value) else value


def run_on_stand_ins(target, args, kwargs, device):
    stand_ins = pytree.tree_map(lambda value: stand_in(value, device), (args, kwargs))
    with warnings.catch_warnings():  # var of one element warns; eager decides later
        warnings.simplefilter("ignore")
        return target(*stand_ins[0], **stand_ins[1])


def result_dtype(lowering, target, args, kwargs, device=CPU) -> torch.Tensor:
    """The result's dtype by torch's own promotion, from one-element stand-ins of the inputs
    (of the first result, for an op that returns several).

    The meta run knows each node's dtype, but not that of an in-place op computed out of
    place (`x.add_(y)` keeps x's dtype, `x.add(y)` promotes); and the stand-ins run
    torch's CPU kernels, which refuse some dtypes that meta functions let through
    (`gelu` of an integer tensor), so that eager's error comes out. Where the CPU refuses
    and the graph's `device` is another, that device's kernels answer (a float16 softmax
    computed in float32: CUDA has it, the CPU raises).
    """
    leaves = pytree.tree_leaves((args, kwargs))
    if any(isinstance(a, ExternValue) for a in leaves):
        raise Fallback("an argument is the non-tensor result of an extern call")
    tensors = [a for a in leaves if is_tensor(a)]
    if lowering in SAME_DTYPE:
        out = torch.empty((), dtype=tensors[SAME_DTYPE[lowering]].dtype)
    else:
        for where in dict.fromkeys([CPU, device]):
            try:
                out = run_on_stand_ins(target, args, kwargs, where)
                break
            except Exception as error:
                failure = error
        else:  # eager fails on these dtypes: let eager say so, in order
            raise EagerOnly(f"torch raises {failure!r} for these dtypes") from failure
    results = list(out) if isinstance(out, tuple) else [out]  # `max(x, dim)`: two
    if not all(isinstance(r, torch.Tensor) for r in results):
        raise Fallback("the op does not return a tensor")
    dtypes = [r.dtype for r in results] + [t.dtype for t in tensors]
    unsupported = [d for d in dtypes if d not in SUPPORTED_DTYPES]
    if unsupported:
        raise Fallback(f"the kernels do not handle {unsupported[0]}")
    return results[0]
