"""torch's C++ check of many tensors at once, where Python would read six properties each.

A guard function's TENSOR_MATCH guards are first checked all together by
torch's `TensorGuards` (guard_function.py calls `check_tensors_like`), and the
backends of stages 4 and 5 check a call's arguments against their last
specialisation the same way (`SameArguments`) before they build a Python key.
"""

import torch
from torch._C._dynamo.guards import TensorGuards


def check_tensors_like(examples: list, dims: list | None = None) -> object:
    """torch's C++ check that tensors have the examples' type, dispatch keys, dtype, device,
    sizes, strides and requires_grad (torch/csrc/dynamo/guards.cpp), all in one call: what
    early TorchDynamo's guard lambdas called as `___check_tensors`; torch 2.x's guard
    managers call the same checks. `dims[i]`, where given, is the (sizes, strides) to
    compare for the i-th tensor, None for a dimension that may vary (a symbolic size: the
    shape guard checks it), as torch passes them for dynamic shapes."""
    dims = dims or [(t.size(), t.stride()) for t in examples]
    return TensorGuards(
        *examples,
        dynamic_dims_sizes=[list(sizes) for sizes, _ in dims],
        dynamic_dims_strides=[list(strides) for _, strides in dims],
    ).check


class SameArguments:
    """Whether a call's arguments have the metadata of the ones `code` was made for: the
    backends' check of the last specialisation before their Python key.

    A Python key reads six properties of every tensor, on every call: slow for a model's
    hundreds of parameters. This checks the tensors in C++ (`check_tensors_like`) and the
    other arguments by type and value. It is stricter than a key (a Parameter and a Tensor
    differ): a call it rejects falls back to the key, never to a wrong code."""

    def __init__(self, args, code):
        self.code, self.count = code, len(args)
        self.tensor_positions = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
        self.others = [
            (i, type(a), a) for i, a in enumerate(args) if not isinstance(a, torch.Tensor)
        ]
        self.tensors = check_tensors_like([args[i] for i in self.tensor_positions])

    def __call__(self, args) -> bool:
        if len(args) != self.count:
            return False
        if not self.others:  # the usual graph: tensors only
            return self.tensors(*args)
        if any(type(args[i]) is not kind or args[i] != value for i, kind, value in self.others):
            return False
        return self.tensors(*[args[i] for i in self.tensor_positions])
