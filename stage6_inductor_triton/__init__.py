"""Stage 6: the same compiler as stage 5, writing Triton kernels for GPUs.

Stage 5 lowers an FX graph to loop-level IR and fuses it; this stage adds a second
code generator for that IR: `TritonOverrides` (the op -> Triton table) and a kernel
template with `XBLOCK`/`RBLOCK` blocks and masks, launched from stage 5's wrapper on
a grid, with block sizes tuned on first call. CUDA tensors run on the GPU; CPU
tensors run the same kernels under Triton's interpreter. `mode="reduce-overhead"`
records each specialisation's launches as a CUDA graph and replays it. Read in this
order: codegen_triton.py (with indexing.py and prelude.py), runtime.py (with typecheck.py:
interpreted kernels typed by Triton's compiler for the GPU first), autotune.py,
backend.py, cudagraphs.py, frontend.py (`compile(fn)`: stage 4's frontend with the
`inductor` backend). The `minidynamo` command (tour.py, cli.py) shows all six stages
at work on one screen.
"""

import stage4_fx

from .backend import TritonCompiledGraph, compile_fx
from .codegen_triton import TritonUnsupported
from .frontend import compile, inductor

__all__ = ["TritonCompiledGraph", "TritonUnsupported", "compile", "compile_fx", "inductor"]

stage4_fx.register_backend(inductor, name="inductor")  # as stage 5 registers inductor_cpp
