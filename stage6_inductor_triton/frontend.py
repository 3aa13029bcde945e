"""`compile(fn)`: stage 4's frontend with the `inductor` backend, as `torch.compile(fn)`.

The backend picks the code generator by where the graph's tensors live: Triton for
CUDA tensors (this stage), C++/OpenMP for CPU tensors (stage 5). Triton's
interpreter would run CPU tensors too, but it is for reading and testing, not speed.
"""

import torch
import torch.fx

import stage4_fx
import stage5_inductor_cpp

from .backend import compile_fx


def inductor(gm: torch.fx.GraphModule, example_inputs):
    """The `inductor` backend: Triton for CUDA tensors, stage 5's C++ for CPU tensors."""
    if any(isinstance(a, torch.Tensor) and a.is_cuda for a in example_inputs):
        return compile_fx(gm, example_inputs)
    return stage5_inductor_cpp.compile_fx(gm, example_inputs)


def compile(fn=None, *, fullgraph: bool = False):
    """`stage4_fx.compile(fn, backend=inductor)`; also a decorator, with or without arguments."""
    return stage4_fx.compile(fn, backend=inductor, fullgraph=fullgraph)
