"""Fusion as a picture: which IR buffers went into which kernel, before and after fusion.

`fusion_diagram(graph)` schedules a lowered graph twice, without fusion (one
kernel per buffer, what a naive compiler does) and with it (what the
scheduler does), and draws both side by side as a Mermaid flowchart:

* a box per kernel (a subgraph named like the kernel: `cpp_fused_max_0`),
  holding the buffers it computes, each labelled with its ops and its shape;
* a rounded box for a buffer that never reaches memory (kept in a register,
  `FusedKernel.local`), and a dotted arrow from it;
* a solid arrow for a value read from memory: an arrow that crosses a
  kernel's border is a buffer written by one kernel and read by another.

Drawn from the real `Scheduler`, so the picture is what the code generator gets.
"""

import torch.utils._pytree as pytree

from stage2_symbolic_vm.tools.diagrams import fence, label, node_id

from ..graph_lowering import GraphLowering
from ..ir import BufferView
from ..scheduler import ExternCall, FusedKernel, Scheduler


def fusion_diagram(graph: GraphLowering, prefix: str = "cpp") -> str:
    """Kernels before and after fusion, as one flowchart with two halves.

    `graph` is a lowered graph (`GraphLowering(gm, example_inputs).run()`);
    `prefix` starts the kernel names, as the `Scheduler`'s does ("triton" in stage 6).
    """
    # The halves side by side, data flowing down in each: Mermaid lays out a subgraph with
    # no edges to the outside on its own, in the opposite direction unless told otherwise.
    lines = ["flowchart LR"]
    for side, fuse in (("before", False), ("after", True)):
        scheduler = Scheduler(graph, fuse=fuse, prefix=prefix)
        kernels = sum(isinstance(step, FusedKernel) for step in scheduler.steps)
        title = f"{side} fusion: {kernels} kernel{'s' if kernels != 1 else ''}"
        lines += [f"    subgraph {node_id(side)}[{label(title)}]", "        direction TB"]
        lines += ["    " + line for line in _schedule(scheduler, side)]
        lines.append("    end")
    lines.append(f"    {node_id('before')} ~~~ {node_id('after')}")  # invisible: keeps the order
    return fence(lines)


def _schedule(scheduler: Scheduler, side: str) -> list[str]:
    """The lines of one schedule; every id starts with `side`, so both halves can share a chart."""
    graph = scheduler.graph
    layouts = {b.name: b.layout for b in [*graph.inputs, *graph.buffers] if b is not None}
    lines, produced, local, edges = [], set(), set(), []
    for step in scheduler.steps:
        if isinstance(step, ExternCall):
            name = step.buffer.name
            text = f"{name} = extern {step.buffer.op_name}"
            lines.append(f"    {node_id(side, name)}[/{label(text)}/]")
            produced.add(name)
            edges += [(view.buffer.name, name) for view in step.buffer.inputs()]
            continue
        lines.append(f"    subgraph {node_id(side, step.name)}[{label(step.name)}]")
        for node in step.nodes:
            ops = ", ".join(dict.fromkeys(node.op_names()))
            text = f"{node.name} = {ops}\n{node.buffer.layout.short}"
            if node.name in step.local:
                local.add(node.name)
                lines.append(
                    f"        {node_id(side, node.name)}({label(text + ', in a register')})"
                )
            else:
                lines.append(f"        {node_id(side, node.name)}[{label(text)}]")
            produced.add(node.name)
            edges += [(read, node.name) for read in sorted(node.reads())]
        lines.append("    end")
    outputs = [
        v.buffer.name for v in pytree.tree_leaves(graph.outputs) if isinstance(v, BufferView)
    ]
    edges += [(name, "output") for name in dict.fromkeys(outputs)]
    inputs = []
    for name in dict.fromkeys(read for read, _ in edges if read not in produced):
        text = f"{name}\n{layouts[name].short}" if name in layouts else name
        inputs.append(f"    {node_id(side, name)}([{label(text)}])")
    lines = inputs + lines
    lines.append(f"    {node_id(side, 'output')}[[{label('output')}]]")
    for read, reader in edges:
        arrow = "-.->" if read in local else "-->"
        lines.append(f"    {node_id(side, read)} {arrow} {node_id(side, reader)}")
    return lines
