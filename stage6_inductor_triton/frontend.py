"""`compile(fn)`: stage 4's frontend with the `inductor` backend, as `torch.compile(fn)`.

The backend picks the code generator by where the graph's tensors live: Triton for
CUDA tensors (this stage), C++/OpenMP for CPU tensors (stage 5). Triton's
interpreter would run CPU tensors too, but it is for reading and testing, not speed.
"""

import torch
import torch.fx

import stage4_fx
import stage5_inductor_cpp

from .backend import MODES, check_mode, compile_fx, log


def inductor(gm: torch.fx.GraphModule, example_inputs, mode: str = "default"):
    """The `inductor` backend: Triton for CUDA tensors, stage 5's C++ for CPU tensors.
    `mode="reduce-overhead"` records CUDA graphs (cudagraphs.py): of CUDA tensors only,
    as torch's, which logs "skipping cudagraphs due to cpu device" for the others."""
    if any(isinstance(a, torch.Tensor) and a.is_cuda for a in example_inputs):
        return compile_fx(gm, example_inputs, mode)
    check_mode(mode)
    if mode == "reduce-overhead":
        log.info("mode='reduce-overhead' records CUDA graphs: these C++ kernels run as they are")
    return stage5_inductor_cpp.compile_fx(gm, example_inputs)


inductor.modes = MODES  # stage 4's `compile(mode=)` checks a mode against these at once


def compile(fn=None, *, fullgraph: bool = False, mode: str | None = None):
    """`stage4_fx.compile(fn, backend=inductor, mode=mode)`; also a decorator, with or
    without arguments."""
    return stage4_fx.compile(fn, backend=inductor, fullgraph=fullgraph, mode=mode)
