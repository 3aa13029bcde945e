"""Pictures of this stage's objects, as Mermaid flowcharts for the book.

* `graph_diagram(gm)`: an FX graph, placeholders to output, one box per call
  labelled as the graph's code reads (`mul = operator.mul(l_x_, 2)`).
* `breaks_diagram(report)`: the graph-break story of an `explain()` run, frame
  by frame: graph 1, the break (kind, line), the resume function it calls, the
  graph compiled from that, and so on.

Both return a ```` ```mermaid ```` fence (stage 2's `fence`), drawn from the real
objects, so the pictures cannot drift from what the code does.
"""

import torch.fx

from stage2_symbolic_vm.tools.diagrams import assignment, fence, label, node_id
from stage2_symbolic_vm.trace import format_argument, target_name

from ..breaks import GraphBreak
from ..convert import CompiledFrame
from ..explain import ExplainOutput, ops_of

# A graph's summary box lists at most this many ops; the FX graph itself has them all.
MAX_OPS_SHOWN = 8


def graph_diagram(gm: torch.fx.GraphModule, direction: str = "TD") -> str:
    """The FX graph as a flowchart: an arrow from each node to every node that uses it."""
    lines = [f"flowchart {direction}"]
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            lines.append(f"    {node_id(node.name)}([{label(node.name)}])")
        elif node.op == "output":
            lines.append(
                f"    {node_id(node.name)}[[{label('return ' + _argument(node.args[0]))}]]"
            )
        else:
            lines.append(f"    {node_id(node.name)}[{label(assignment(node.name, _call(node)))}]")
        for used in node.all_input_nodes:
            lines.append(f"    {node_id(used.name)} --> {node_id(node.name)}")
    return fence(lines)


def _call(node: torch.fx.Node) -> str:
    """The right-hand side of the node's line in `gm.code`, spelled out: `operator.mul(x, 2)`."""
    args = [_argument(a) for a in node.args]
    args += [f"{key}={_argument(value)}" for key, value in node.kwargs.items()]
    if node.op == "call_method":
        receiver, *rest = args
        return f"{receiver}.{node.target}({', '.join(rest)})"
    if node.op == "call_module":
        return f"self.{node.target}({', '.join(args)})"
    if node.op == "get_attr":
        return f"self.{node.target}"
    return f"{target_name(node.target)}({', '.join(args)})"


def fx_node_name(value) -> str | None:
    return value.name if isinstance(value, torch.fx.Node) else None


def _argument(value) -> str:
    return format_argument(value, fx_node_name)


def breaks_diagram(report: ExplainOutput) -> str:
    """How `explain()` saw the function cut into graphs: one box per compiled frame.

    Each frame shows its graph (the ops, in short) and, if it was cut, the
    break: its kind and the user's line. An arrow labelled with a resume
    function's name goes from the break to the frame compiled from that
    resume function; a dotted one to a resume function this run never called
    (the other side of a branch). A frame that ran eagerly is a box of its own.
    """
    lines = ["flowchart TD"]
    called = _called_frames(report)
    graph_number = 0
    for i, frame in enumerate(report.frames):
        lines.append(f"    subgraph {node_id('frame', i)}[{label(frame.original.co_qualname)}]")
        if frame.graph is None:
            lines.append(f"        {node_id('graph', i)}[{label('no tensor op: no graph')}]")
        else:
            graph_number += 1
            lines.append(
                f"        {node_id('graph', i)}[{label(_graph_text(graph_number, frame))}]"
            )
        if frame.graph_break is not None:
            lines.append(
                f"        {node_id('break', i)}{{{{{label(_break_text(frame.graph_break))}}}}}"
            )
            lines.append(f"        {node_id('graph', i)} --> {node_id('break', i)}")
        lines.append("    end")
        for k, resume in enumerate(frame.resumes):
            target = called.get((i, k))
            if target is None:
                text = f"{resume.name}\nnot called in this run"
                lines.append(f"    {node_id('resume', i, k)}[{label(text)}]")
                lines.append(f"    {node_id('break', i)} -.-> {node_id('resume', i, k)}")
            else:
                edge = f"-->|{label(resume.name)}|"
                lines.append(f"    {node_id('break', i)} {edge} {node_id('frame', target)}")
    eager = [graph_break for graph_break in report.break_reasons if graph_break.eager_frame]
    for k, graph_break in enumerate(eager):
        text = f"{graph_break.function} runs eagerly\n{_break_text(graph_break)}"
        lines.append(f"    {node_id('eager', k)}{{{{{label(text)}}}}}")
    return fence(lines)


def _called_frames(report: ExplainOutput) -> dict[tuple[int, int], int]:
    """(frame, resume number) -> the frame compiled from that resume function's call.

    Frames are recorded in the order they were compiled, so the frame a resume
    function became is the first later frame of its code not claimed already.
    """
    called, claimed = {}, set()
    for i, frame in enumerate(report.frames):
        for k, resume in enumerate(frame.resumes):
            for j in range(i + 1, len(report.frames)):
                if j not in claimed and report.frames[j].original is resume.code:
                    called[i, k] = j
                    claimed.add(j)
                    break
    return called


def _graph_text(number: int, frame: CompiledFrame) -> str:
    ops = [op.rsplit(".", 1)[-1] for op in ops_of(frame.graph.gm)]
    shown = ", ".join(ops[:MAX_OPS_SHOWN]) + (", …" if len(ops) > MAX_OPS_SHOWN else "")
    return f"graph {number}: {shown}"


def _break_text(graph_break: GraphBreak) -> str:
    text = f"graph break: {graph_break.kind}"
    if graph_break.lineno is not None:
        text += f"\nline {graph_break.lineno}"
    return text + (f": {graph_break.line}" if graph_break.line else "")
