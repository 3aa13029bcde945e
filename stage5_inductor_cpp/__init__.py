"""Stage 5: a torch.compile backend that turns FX graphs into fused C++/OpenMP kernels.

Stage 4 hands over an FX graph; this stage lowers it to a loop-level IR
(`Pointwise`, `Reduction`, buffers), fuses it into few kernels, writes C++,
compiles it once per graph (cached on disk), and calls it from a generated
Python wrapper. Read in this order: ir.py, lowering.py (+ views.py,
decompositions.py), meta_run.py and functionalize.py (eager's answers on meta
tensors; in-place ops made pure), graph.py (+ layouts.py, bias_addmm.py),
scheduler.py, codegen_cpp.py, cache.py, wrapper.py, backend.py, frontend.py
(`compile(fn)`: stage 4's frontend with this backend).
`diagrams.py` draws the kernels before and after fusion (Mermaid, for the book).
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
