"""Stage 2: a symbolic interpreter of CPython bytecode.

Stage 1 hands us a frame; this stage runs that frame's bytecode without
running it: one handler per opcode over symbolic values (Variables), user
functions inlined, Python loops unrolled, and every tensor operation recorded
into a Trace, with shapes and dtypes computed on meta tensors. Where it
cannot go on, it raises `Unsupported` with the reason, the line and the VM's
state: stage 4 turns that into a graph break.

Read first: `vm.py` (the interpreter loop and one handler per opcode, with
`control_flow.py`'s jumps, loops, returns, generators, `try` and `with`,
`calls.py`'s calls and function making, and `building.py`'s tuples, lists, dicts,
sets and strings), then
`variables.py` (what a symbolic value is), `containers.py` (lists, tuples,
dicts, sets), `iterators.py` (lazy iterators and generators), `tensor_ops.py`
(how a node is recorded on meta tensors, and `meta_cache.py`, their answers kept on
disk), `operators.py`, `functions.py`,
`objects.py` (instances of Python classes) and `builtins_table.py` (calls and
operators), `builder.py` (outside values and their assumptions),
`side_effects.py` (changes to outside objects, written back after the graph),
`shapes.py` (symbolic sizes: FakeTensors and SymInts for the inputs whose sizes
change, torch's automatic dynamic),
`errors.py` (where it stops, and the exceptions the code raises itself), and
`trace.py` and `sources.py` (what stages 3 and 4 consume). `diagrams.py`
draws a trace (Mermaid, for the book).
"""

from .errors import BREAK_KINDS, Unsupported
from .sources import Assumption, Source
from .tools.coverage import handled_opnames
from .tools.diagrams import trace_diagram
from .trace import Node, Trace, replay
from .variables import Variable
from .vm import VMState, trace

__all__ = [
    "BREAK_KINDS",
    "Assumption",
    "Node",
    "Source",
    "Trace",
    "Unsupported",
    "VMState",
    "Variable",
    "handled_opnames",
    "replay",
    "trace",
    "trace_diagram",
]
