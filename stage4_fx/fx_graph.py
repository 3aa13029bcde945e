"""From a Trace to a `torch.fx.GraphModule`: one node for one node.

Stage 2's trace is already shaped like an FX graph, so the conversion is a
walk over its nodes:

    input L['x']           ->  placeholder l_x_       (named after the source, like Dynamo)
    call_function sin(%0)  ->  call_function sin
    call_method %1.sum()   ->  call_method sum
    (what the rest needs)  ->  output (add, sum_1)    (always a tuple)

Parameters and buffers of modules are read through their sources
(`L['self'].linear.weight`), so they are inputs of the graph too: Dynamo made
the same choice for `torch.compile` (they are "lifted"), which lets a backend
see every tensor as an argument. The graph returns only the values the rest
of the frame needs (the result, or the stack and live locals at a graph
break); nodes that feed none of them are removed. torch/_dynamo builds its
graph in output_graph.py while tracing; we build it after, from the trace.
"""

import linecache
import re
from dataclasses import dataclass

import torch
import torch.fx

from stage2_symbolic_vm.like_eager.in_place import changes_state
from stage2_symbolic_vm.sources import SizeSource, Source
from stage2_symbolic_vm.trace import Node, Trace, map_nodes


@dataclass(eq=False)
class CapturedGraph:
    """A GraphModule and how to call it: inputs are read through `sources`, in order,
    and output `i` of the returned tuple is the value of trace node `outputs[i]`.
    `examples` are the trace's values of the inputs: meta tensors, or in a graph with
    symbols FakeTensors and the SymInts of its symbolic int inputs."""

    gm: torch.fx.GraphModule
    sources: list[Source]
    outputs: list[Node]
    examples: list = None
    shapes: object = None  # the trace's symbols (stage2_symbolic_vm/dynamic_shapes/shapes.py)

    @property
    def op_count(self) -> int:
        ops = ("call_function", "call_method", "call_module")
        return sum(node.op in ops for node in self.gm.graph.nodes)


def placeholder_name(source: Source) -> str:
    """`L['x']` -> `l_x_`, `L['self'].linear.weight` -> `l_self_linear_weight` (Dynamo's style)."""
    return re.sub(r"\W+", "_", source.name()).lower()


def build_graph(trace: Trace, needed: list[Node]) -> CapturedGraph | None:
    """The graph that computes the `needed` call nodes of `trace`, and every node that must run
    for its effect (an in-place op, a random draw); None when there is nothing to run.

    Inputs needed by the rest are not graph outputs: the new bytecode reads
    them through their sources, as it reads any other input.
    """
    outputs = list(dict.fromkeys(n for n in needed if n.op != "input"))
    if not outputs and not any(_changes_state(n) for n in trace.nodes):
        return None
    graph = torch.fx.Graph()
    fx_nodes: dict[Node, torch.fx.Node] = {}

    def fx_node_of(node):
        return fx_nodes[node]

    symbolic = trace.shapes is not None and trace.shapes.active
    inputs, symbols = [], {}  # symbol -> its placeholder: one per symbol
    for node in trace.nodes:
        if node.op == "input" and isinstance(node.source, SizeSource):
            # Two sizes the ShapeEnv found equal (`x + y`, or equal sizes at the first call:
            # its "duck sizing") are one symbol, so one placeholder; the guards check it.
            symbol = node.meta.node.expr
            if symbol in symbols:
                fx_nodes[node] = symbols[symbol]
                continue
            symbols[symbol] = fx_nodes[node] = input_placeholder(graph, node)
            inputs.append(node)
        elif node.op == "input":
            fx_nodes[node] = input_placeholder(graph, node)
            inputs.append(node)
        else:
            args = map_nodes(node.args, fx_node_of)
            kwargs = map_nodes(node.kwargs, fx_node_of)
            create = graph.call_method if node.op == "call_method" else graph.call_function
            fx_nodes[node] = create(node.target, tuple(args), kwargs)
        if symbolic:  # what torch's graphs carry: FakeTensors with symbolic sizes, SymInts
            fx_nodes[node].meta["example_value"] = node.meta
    graph.output(tuple(fx_nodes[n] for n in outputs))
    graph.eliminate_dead_code(is_impure_node=_is_impure)
    # An input nothing reads is not worth passing (Dynamo prunes them too), but a symbol in
    # a kept tensor's sizes stays: a backend binds it from its placeholder.
    unused = [n for n in inputs if not fx_nodes[n].users]
    if symbolic:
        sizes_of_kept = _symbols_of([n.meta for n in inputs if fx_nodes[n].users])
        unused = [n for n in unused if not _binds(n, sizes_of_kept)]
    for node in unused:
        graph.erase_node(fx_nodes[node])
    inputs = [n for n in inputs if n not in unused]
    graph.lint()
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    SOURCES.append(type(gm).forward.__code__.co_filename)
    sources, examples = [n.source for n in inputs], [n.meta for n in inputs]
    return CapturedGraph(gm, sources, outputs, examples, trace.shapes)


def input_placeholder(graph: torch.fx.Graph, node: Node) -> torch.fx.Node:
    """`l_x_` for `L['x']`; a symbol read from a size is named after it (`s0`), as torch's
    graphs name their SymInt inputs, and typed `torch.SymInt`."""
    symbol = getattr(getattr(node.meta, "node", None), "expr", None)
    if isinstance(node.source, SizeSource) and symbol.is_Symbol:
        return graph.placeholder(str(symbol), type_expr=torch.SymInt)
    if isinstance(node.meta, torch.SymInt):  # an int argument that is a symbol
        return graph.placeholder(placeholder_name(node.source), type_expr=torch.SymInt)
    return graph.placeholder(placeholder_name(node.source))


def _binds(node: Node, symbols: set) -> bool:
    """Is this a SymInt input whose symbol is one of `symbols`?"""
    return isinstance(node.meta, torch.SymInt) and bool(_symbols_of([node.meta]) & symbols)


def _symbols_of(examples: list) -> set:
    """The symbols in these inputs' sizes (a SymInt input's own symbol too)."""
    symbols = set()
    for example in examples:
        sizes = example.shape if isinstance(example, torch.Tensor) else [example]
        for size in sizes:
            if isinstance(size, torch.SymInt):
                symbols |= size.node.expr.free_symbols
    return symbols


# The `<eval_with_key>` names under which torch.fx keeps each graph's Python source (in
# linecache, and in its loader), so that a reset can give that memory back.
SOURCES: list[str] = []


def forget_sources():
    """Drop the source text torch.fx keeps for every graph built so far."""
    for key in SOURCES:
        linecache.cache.pop(key, None)
        torch.fx.graph_module._loader.eval_cache.pop(key, None)  # fx's private cache
    SOURCES.clear()


def _is_impure(node: torch.fx.Node) -> bool:
    """Nodes that must run even when nothing reads their result: in-place ops (the change is
    the point) and random ops (they advance the generator, so later draws match eager's)."""
    if node.op in ("placeholder", "output"):
        return True
    call = node.op in ("call_method", "call_function")
    return call and changes_state(node.target, node.args, node.kwargs)


def _changes_state(node: Node) -> bool:
    return node.op != "input" and changes_state(node.target, node.args, node.kwargs)


def format_graph(gm: torch.fx.GraphModule) -> str:
    """The graph as a table, like `gm.graph.print_tabular()` (which needs `tabulate`)."""
    rows = [("opcode", "name", "target", "args", "kwargs")]
    for node in gm.graph.nodes:
        target = (
            node.target
            if isinstance(node.target, str)
            else torch.fx.node._get_qualified_name(node.target)
        )
        rows.append((node.op, node.name, target, _short(node.args), _short(node.kwargs)))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)


def _short(value) -> str:
    return str(value) if not isinstance(value, str) else repr(value)
