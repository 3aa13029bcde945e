"""Stage 6: the same compiler as stage 5, writing Triton kernels for GPUs.

Stage 5 lowers an FX graph to loop-level IR and fuses it; this stage adds a second
spelling of its shared kernel writer: `TritonOverrides` (the op -> Triton table) and a
kernel template with `XBLOCK`/`RBLOCK` blocks and masks, launched from stage 5's wrapper
on a grid, and switches the GPU's rules of the lowering on (stage 5's rules.py). CUDA
tensors run on the GPU; CPU tensors run the same kernels under Triton's interpreter.

The core, in reading order:

    codegen_triton.py  the Triton spelling: the op table, blocks and masks, reductions
    indexing.py        the IR's affine indices over a kernel's flat `xindex` and `rindex`
    prelude.py         the helpers every module starts with, where Triton differs from torch
    runtime.py         generated source to kernels: compiled, or under the interpreter
    launcher.py        `kernel.run(*args, grid=...)`: a configuration, the binary, launched
    backend.py         stage 5's `compile_graph` with this writer; the GPU's rules
    frontend.py        `compile(fn)` and the `inductor` backend: Triton for CUDA tensors

The rest, by purpose:

    performance/       block sizes tuned per kernel; compiles in worker processes;
                       launches replayed as CUDA graphs
    like_eager/        0-dim CPU tensors among a GPU's tensors, taken as numbers
    checks/            interpreted kernels typed by Triton's compiler for the GPU first
    tools/             the `minidynamo` command and its tour of all six stages
"""

import stage4_fx

from .backend import TritonCompiledGraph, compile_fx
from .codegen_triton import TritonUnsupported
from .frontend import compile, inductor

__all__ = ["TritonCompiledGraph", "TritonUnsupported", "compile", "compile_fx", "inductor"]

stage4_fx.register_backend(inductor, name="inductor")  # as stage 5 registers inductor_cpp
