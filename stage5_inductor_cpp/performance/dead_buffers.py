"""Buffers that nothing reads are not computed (inductor's scheduler does the same in
`dead_node_elimination`).

A lowering may compute more than the program uses: `x.max(dim)` lowers both the values
and the indices, and a program that reads only `.values` needs no loop for the indices.
The scheduler starts from the live buffers: walking the graph backwards from its outputs,
a buffer is live when a live buffer reads it. Extern calls and write-backs into inputs
stay, for their effects.
"""

import torch.utils._pytree as pytree

from stage1_eval_frame.logs import get_logger

from .. import scheduler
from ..ir import BufferView, ExternKernel
from ..like_eager.functionalize import WriteBack

log = get_logger("kernels")


def live_buffers(graph) -> list:
    """The graph's buffers less those that nothing reads, in program order."""
    outputs = pytree.tree_leaves(graph.outputs)
    live = {leaf.buffer.name for leaf in outputs if isinstance(leaf, BufferView)}
    inputs = {b.name for b in graph.inputs if b is not None} | set(graph.constants)
    kept = []
    for buffer in reversed(graph.buffers):
        if isinstance(buffer, ExternKernel):
            live |= scheduler.extern_reads(buffer)
        elif buffer.name in live or (isinstance(buffer, WriteBack) and buffer.name in inputs):
            live |= scheduler.SchedulerNode(buffer).reads()
        else:
            log.info("%s is read by nothing: not computed", buffer.name)
            continue
        kept.append(buffer)
    return kept[::-1]
