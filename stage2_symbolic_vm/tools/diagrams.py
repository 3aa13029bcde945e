"""A trace drawn as a Mermaid flowchart, and the few Mermaid helpers later stages share.

The book draws its pictures from the real objects when it is built: a
`python exec="on"` block prints the string `trace_diagram(...)` returns, a
```` ```mermaid ```` fence, and the site renders it. Every label goes through
`label()`, so a label may hold any text a program prints (quotes, brackets,
`<`, backticks) and Mermaid still parses it. Stage 4 draws FX graphs and
graph breaks with the same helpers, stage 5 fused kernels.
"""

import re

from ..trace import Node, Trace, format_argument, map_nodes

# Mermaid reads these inside a quoted label: `"` ends it, `<`/`>`/`&` are HTML, a backtick
# right after the quote starts a markdown label, and `#name;` is Mermaid's own entity syntax.
# Each becomes an entity code; `#` goes first, since the others introduce one.
_ENTITIES = [("#", "#35;"), ('"', "#quot;"), ("&", "#amp;"), ("<", "#lt;"), (">", "#gt;")]
_ENTITIES.append(("`", "#96;"))


def label(text: str) -> str:
    """`text` as a quoted Mermaid label; a newline starts a new line of the label."""
    for char, entity in _ENTITIES:
        text = text.replace(char, entity)
    return '"' + text.replace("\n", "<br/>") + '"'


def node_id(*parts) -> str:
    """A Mermaid node id made of `parts`; the prefix keeps clear of keywords such as `end`."""
    return "n_" + "_".join(re.sub(r"\W", "_", str(part)) for part in parts)


# Mermaid wraps a label wider than about 26 characters wherever a space falls; breaking a
# long `name = call(...)` after the `=` keeps the call on one line.
SHORT_LABEL = 24


def assignment(name: str, value: str) -> str:
    """`name = value`, on two lines when it would be too wide for one."""
    text = f"{name} = {value}"
    return text if len(text) <= SHORT_LABEL else f"{name} =\n{value}"


def fence(lines: list[str]) -> str:
    """A ```` ```mermaid ```` block: markdown that the book renders as the picture."""
    return "\n".join(["```mermaid", *lines, "```"])


def trace_diagram(trace: Trace, direction: str = "TD") -> str:
    """The trace as a flowchart: inputs (with their sources), one box per op, the result.

    An arrow goes from each node to every node that uses it; each box shows the
    node as the trace prints it and, on a second line, its shape and dtype.
    """
    lines = [f"flowchart {direction}"]
    for node in trace.nodes:
        text, _, meta = str(node).partition("  # ")  # Node.__str__ puts the meta after "  # "
        if node.op == "input":
            opening, closing = "([", "])"
        else:
            opening, closing = "[", "]"
            text = assignment(*text.split(" = ", 1))
        box = label(f"{text}\n{meta}" if meta else text)
        lines.append(f"    {node_id(node.index)}{opening}{box}{closing}")
        for used in dict.fromkeys(_nodes_in((node.args, node.kwargs))):
            lines.append(f"    {node_id(used.index)} --> {node_id(node.index)}")
    lines.append(f"    {node_id('return')}[[{label('return ' + format_argument(trace.output))}]]")
    for used in dict.fromkeys(_nodes_in(trace.output)):
        lines.append(f"    {node_id(used.index)} --> {node_id('return')}")
    return fence(lines)


def _nodes_in(value) -> list[Node]:
    found = []
    map_nodes(value, found.append)
    return found
