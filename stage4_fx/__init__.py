"""Stage 4: FX graphs, backends, rewritten bytecode and graph breaks — Dynamo's frontend.

Stage 3 captures a function whole or not at all, and replays its trace. This
stage turns each trace into an FX graph that a backend compiles, writes new
bytecode for the frame that calls the compiled graph, and where the VM stops,
cuts the frame in two: the graph so far, the one instruction in plain Python,
then a resume function holding the rest, which is compiled in turn.

The core, in reading order:

    fx_graph.py         a stage-2 trace becomes a torch.fx.GraphModule
    backends.py         backend(gm, example_inputs) -> callable, and the names that reach one
    compile.py          compile(), and the hook's callback: which frames, and their caches
    convert.py          one frame in, one new code object out (a cache miss of stage 3)
    bytecode_writer.py  the new bytecode that rebuilds Python values: results, stack, locals
    cut.py              at a graph break: the graph so far, one instruction, a resume call
    resume.py           resume functions: the rest of the bytecode, as a function of its own
    breaks.py           why each break happened: one registry of kinds, one record per break
    explain.py          explain(): the graphs, the breaks and why, the guards, the recompiles
    disable.py          disable(fn): a function never compiled; is_compiling()

The rest, by purpose:

    training/           the forward and backward as two graphs (AOTAutograd; aot_eager)
    tools/              Mermaid diagrams of graphs and breaks, for the book and for users

    >>> opt = stage4_fx.compile(fn, backend="eager")  # or stage4_fx.optimize("eager")(fn)
    >>> stage4_fx.explain(fn)(x).graph_count
"""

from stage3_guards import mark_dynamic, mark_static

from .backends import BackendCompilerFailed, list_backends, lookup_backend, register_backend
from .breaks import GraphBreak, GraphBreakError
from .compile import compile, optimize, reset
from .disable import disable, is_compiling
from .explain import ExplainOutput, explain
from .tools.diagrams import breaks_diagram, graph_diagram

__all__ = [
    "BackendCompilerFailed",
    "ExplainOutput",
    "GraphBreak",
    "GraphBreakError",
    "breaks_diagram",
    "compile",
    "disable",
    "explain",
    "graph_diagram",
    "is_compiling",
    "list_backends",
    "lookup_backend",
    "mark_dynamic",
    "mark_static",
    "optimize",
    "register_backend",
    "reset",
]
