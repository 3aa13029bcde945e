"""Stage 2: a symbolic interpreter of CPython bytecode.

Stage 1 hands us a frame; this stage runs that frame's bytecode without
running it: one handler per opcode over symbolic values (Variables), user
functions inlined, Python loops unrolled, and every tensor operation recorded
into a Trace, with shapes and dtypes computed on meta tensors. Where it
cannot go on, it raises `Unsupported` with the reason, the line and the VM's
state: stage 4 turns that into a graph break.

The core, in reading order:

    vm.py            the interpreter loop and the handlers of the common opcodes
    variables.py     what a symbolic value is: the protocol, constants, tensors
    functions.py     calls: user functions inlined, torch functions recorded, nn.Modules
    builder.py       an outside value becomes a Variable: one table of kinds, in order
    tensor_ops.py    a tensor operation run on meta tensors and recorded as a node
    trace.py         the Trace (nodes, output, assumptions), printed and replayed
    sources.py       where each outside value came from, and the assumptions about it
    errors.py        where and why the VM stops: Unsupported, the kinds of break
    side_effects.py  one Variable per outside object, and its changes, written back

The rest, by purpose:

    opcodes/         the rarer opcodes: cells, imports, `*args`, f-strings, slices,
                     generators, `with`, `try`, as mixins of the interpreter
    python/          the breadth of Python: containers, iterators, operators, builtins,
                     user classes, callables, exceptions, constants' methods
    torch_api/       torch beyond tensor ops: queries, grad modes, autograd.Function,
                     module containers and hooks
    like_eager/      what a meta tensor does not say: devices, in-place ops, ops with no
                     meta kernel, aliased outside objects
    numpy_interop/   NumPy as torch.compile traces it: an ndarray is a tensor, torch._numpy
                     gives NumPy's rules
    dynamic_shapes/  sizes that are symbols: FakeTensors and SymInts, torch's automatic dynamic
    performance/     meta answers kept on disk between processes
    tools/           opcode coverage, trace diagrams (Mermaid), `python -m stage2_symbolic_vm`

    >>> recorded = stage2_symbolic_vm.trace(fn, x)   # a Trace, or Unsupported saying why
    >>> stage2_symbolic_vm.replay(recorded, fn, x)   # the trace run on real values
"""

from .errors import BREAK_KINDS, Unsupported
from .sources import Assumption, Source
from .tools.diagrams import trace_diagram
from .tools.opcode_sets import handled_opnames
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
