"""Stage 5: a torch.compile backend that turns FX graphs into fused C++/OpenMP kernels.

Stage 4 hands over an FX graph; this stage lowers it to a loop-level IR (`Pointwise`,
`Reduction`, buffers), fuses it into few kernels, writes C++, compiles it once (cached on
disk), and calls it from a generated Python wrapper.

The core, in reading order:

    ir.py              what is computed (`Pointwise`, `Reduction`), where it lands, `ops`
    lowering.py        the lowering table: elementwise ops, reductions
    graph_lowering.py  the node loop: each FX node to IR, or an extern call into torch
    scheduler.py       fusion: which buffers share a kernel, which stay in registers
    kernel_writer.py   the writer both backends share: IR to named temporaries
    codegen_cpp.py     the C++ spelling: the op table, constants, loops
    wrapper.py         the Python that allocates buffers and calls kernels
    kernel_cache.py    g++, the library on disk, ctypes
    backend.py         `compile_graph` (the pipeline), `CompiledGraph`, `compile_fx`
    rules.py           the rules that differ by device (stage 6 switches the GPU's on)
    frontend.py        `compile(fn)`: stage 4's frontend with this backend

The rest, by purpose:

    lowerings/         the breadth of ops: views, casts, composite ops, pooling, gathers
    like_eager/        matching eager beyond values: dtypes, strides, in-place ops, externs
    performance/       passes for speed: products, threads and SIMD, outer and split reductions
    symbolic/          sizes that are symbols: one code for every batch size
    training/          the forward and backward graphs of a call that needs autograd
    robustness/        when things go wrong: the kernel cache's files, a lowering's bug
    tools/             the kernels before and after fusion, drawn for the book
"""

import stage4_fx

from .backend import CompiledGraph, compile_fx
from .frontend import compile
from .kernel_cache import CompilationError
from .tools.diagrams import fusion_diagram

__all__ = ["CompilationError", "CompiledGraph", "compile", "compile_fx", "fusion_diagram"]

# Stage 4 finds this backend by name through the package's entry point; registering it
# on import as well serves a tree used without installing it (PYTHONPATH=.).
stage4_fx.register_backend(compile_fx, name="inductor_cpp")
