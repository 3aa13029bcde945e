"""Stage 4: FX graphs, backends, rewritten bytecode and graph breaks — Dynamo's frontend.

Stage 3 captures a function whole or not at all. This stage turns each trace
into a `torch.fx.GraphModule` (`graph.py`), hands it to a backend with
torch.compile's protocol (`backends.py`), and replaces the frame's bytecode
with new code that calls the compiled graph and rebuilds the result
(`codegen.py`, `convert.py`). Where the VM stops, the frame is cut (`cut.py`):
the graph so far runs, the one untraceable instruction runs in Python, and a
resume function holding the rest of the bytecode (`resume.py`) is compiled in
turn. `breaks.py` says why each break happened; `explain.py` reports it all,
and `diagrams.py` draws graphs and breaks (Mermaid, for the book).
Read `convert.py` first, then `cut.py` and `resume.py`.

    >>> opt = stage4_fx.compile(fn, backend="eager")  # or stage4_fx.optimize("eager")(fn)
    >>> stage4_fx.explain(fn)(x).graph_count
"""

from stage3_guards import mark_dynamic, mark_static

from .backends import BackendCompilerFailed, list_backends, lookup_backend, register_backend
from .breaks import GraphBreak, GraphBreakError
from .compile import compile, optimize, reset
from .diagrams import breaks_diagram, graph_diagram
from .explain import ExplainOutput, explain

__all__ = [
    "BackendCompilerFailed",
    "ExplainOutput",
    "GraphBreak",
    "GraphBreakError",
    "breaks_diagram",
    "compile",
    "explain",
    "graph_diagram",
    "list_backends",
    "lookup_backend",
    "mark_dynamic",
    "mark_static",
    "optimize",
    "register_backend",
    "reset",
]
