"""`explain(fn)(*args)`: how a function is cut into graphs, and why (torch._dynamo.explain).

It compiles `fn` afresh (its own caches, the eager backend), runs it on the
arguments, and reports every frame compiled so far: the graphs, the breaks
with their user lines and explanations, the guards, the ops of each graph,
and why a frame compiled again. The caches live as long as the `explain(fn)`
object, so calling it again with new sizes shows the recompiles (and the
dims that became symbols). torch's `explain` resets Dynamo before and after
each call, so it reports one call and never a recompile; a fresh
`explain(fn)` per call is the same here.
"""

import dataclasses
from dataclasses import dataclass

import torch

from .backends import eager
from .breaks import GraphBreak
from .compile import CompileOptions, _wrap
from .convert import CompiledFrame


@dataclass
class ExplainOutput:
    graphs: list[torch.fx.GraphModule]
    graph_count: int
    graph_break_count: int
    break_reasons: list[GraphBreak]
    ops_per_graph: list[list[str]]
    out_guards: list
    frames: list[CompiledFrame]
    recompile_reasons: list[str] = dataclasses.field(default_factory=list)

    @property
    def op_count(self) -> int:
        return sum(len(ops) for ops in self.ops_per_graph)

    def __str__(self):
        lines = [
            f"Graph Count: {self.graph_count}",
            f"Graph Break Count: {self.graph_break_count}",
            f"Op Count: {self.op_count}",
            "Break Reasons:",
        ]
        for number, graph_break in enumerate(self.break_reasons, 1):
            text = str(graph_break).replace("\n", "\n    ")
            lines.append(f"  Break Reason {number}:\n    {text}")
        lines.append("Ops per Graph:")
        for number, ops in enumerate(self.ops_per_graph, 1):
            lines.append(f"  Ops {number}:")
            lines += [f"    {op}" for op in ops]
        lines.append("Out Guards:")
        lines += [f"  {guard}" for guard in self.out_guards]
        if self.recompile_reasons:
            lines.append("Recompile Reasons:")
            lines += [f"  {reason}" for reason in self.recompile_reasons]
        return "\n".join(lines)


def explain(fn, backend=eager):
    """`explain(fn)(*args, **kwargs) -> ExplainOutput`: `fn` runs compiled on the args; calling
    the same `explain(fn)` again reports everything compiled so far, recompiles included."""
    options = CompileOptions(backend)
    compiled = _wrap(fn, options)

    def run(*args, **kwargs) -> ExplainOutput:
        compiled(*args, **kwargs)
        graphs = [f.graph for f in options.frames if f.graph is not None]
        return ExplainOutput(
            graphs=[g.gm for g in graphs],
            graph_count=len(graphs),
            graph_break_count=len(options.breaks),
            break_reasons=list(options.breaks),
            ops_per_graph=[ops_of(g.gm) for g in graphs],
            out_guards=[guard for f in options.frames for guard in f.guards.guards],
            frames=list(options.frames),
            recompile_reasons=[r for c in options.caches.values() for r in c.recompile_reasons],
        )

    return run


def ops_of(gm: torch.fx.GraphModule) -> list[str]:
    ops = []
    for node in gm.graph.nodes:
        if node.op == "call_method":
            ops.append(f"Tensor.{node.target}")
        elif node.op == "call_function":
            ops.append(torch.fx.node._get_qualified_name(node.target))
    return ops
