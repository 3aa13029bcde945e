"""A trace, written out as a straight-line Python function that replays it.

Stage 2's `replay()` walks the nodes and interprets them; on every call that
would bind the arguments by signature and dispatch on node kinds. A cache hit
must be cheap, so here the trace becomes source code once, when it is
compiled:

    def replay_f(L_x, L_y):
        add = operator.add(L_x, L_y)  # line 2
        return add

The parameters are the frame's argument slots in order (positional,
keyword-only, *args, **kwargs), exactly what the stage-1 hook passes to a
replacement; they are named `L_<name>` as torch names FX placeholders, so they
never collide with the names of the functions the trace calls. A trace that
reads globals or closure variables also takes the frame's `G` and `F` first.
This function is the smallest possible backend; stage 4 replaces it with an FX
graph and a compiler.
"""

import builtins
import inspect
from dataclasses import dataclass

from stage2_symbolic_vm.numpy_interop.arrays import AsNdarray
from stage2_symbolic_vm.sources import BuiltinSource, LocalSource, Source
from stage2_symbolic_vm.trace import Node, Trace, target_name

from .generated import compile_function, identifier
from .guards import Names

_TAKEN = object()  # marks the names of parameters and variables in `Names`


@dataclass(eq=False)
class Replay:
    """The generated function, its source, and whether it takes the frame's G and F first."""

    function: object
    source: str
    reads_frame: bool

    def __str__(self):
        return self.source


def argument_names(code) -> list[str]:
    """The names of the argument slots: positional, keyword-only, *args, **kwargs."""
    count = code.co_argcount + code.co_kwonlyargcount
    count += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return list(code.co_varnames[:count])


def compile_replay(trace: Trace, name: str) -> Replay:
    """Generate and compile the function that replays `trace` on a frame's argument slots."""
    writer = _ReplayWriter(trace)
    return writer.write(f"replay_{identifier(name)}")


class _ReplayWriter:
    def __init__(self, trace: Trace):
        self.trace = trace
        self.names = Names()  # the objects the code calls: torch.sin, operator.add, ...
        self.parameters = [f"L_{name}" for name in argument_names(trace.code)]
        for parameter in self.parameters:
            self.names.objects[parameter] = _TAKEN  # no helper may take these names
        self.names.objects["B"] = builtins  # as in guards: `B.__import__('torch').from_numpy`
        self.variables: dict[Node, str] = {}
        self.reads_frame = False

    def write(self, function_name: str) -> Replay:
        body = [self.statement(node) for node in self.trace.nodes]
        body = [line for line in body if line is not None]
        body.append(f"return {self.expression(self.trace.output)}")
        parameters = (["G", "F"] if self.reads_frame else []) + self.parameters
        source = f"def {function_name}({', '.join(parameters)}):\n"
        source += "".join(f"    {line}\n" for line in body)
        namespace = {k: v for k, v in self.names.objects.items() if v is not _TAKEN}
        function = compile_function(source, function_name, namespace)
        return Replay(function, source, self.reads_frame)

    def statement(self, node: Node) -> str | None:
        if node.op == "input":
            read = self.read(node.source)
            if isinstance(node.source, LocalSource):
                self.variables[node] = read  # an argument: use the parameter itself
                return None
            source = node.source  # a global or closure variable is named after itself
            hint = getattr(source, "free_name", None) or getattr(source, "global_name", None)
            hint = hint or source.name()
            return f"{self.variable(node, hint)} = {read}  # {source.describe()}"
        args = [self.expression(a) for a in node.args]
        args += [f"{k}={self.expression(v)}" for k, v in node.kwargs.items()]
        if node.op == "call_method":
            receiver, *rest = args
            call = f"{receiver}.{node.target}({', '.join(rest)})"
            hint = node.target
        else:
            call = f"{self.names(node.target, target_name(node.target))}({', '.join(args)})"
            hint = getattr(node.target, "__name__", "result")
        line = f"{self.variable(node, hint)} = {call}"
        return f"{line}  # line {node.lineno}" if node.lineno is not None else line

    def variable(self, node: Node, hint: str) -> str:
        name = self.names.fresh(identifier(hint))
        self.names.objects[name] = _TAKEN
        self.variables[node] = name
        return name

    def read(self, source: Source) -> str:
        """A source as an expression in the replay: `L['x'][0]` -> `L_x[0]`."""
        root = source
        while getattr(root, "base", None) is not None:
            root = root.base
        if isinstance(root, LocalSource):
            replacement = f"L_{root.local}"
        elif isinstance(root, BuiltinSource):
            replacement = f"{self.names(builtins)}.{root.builtin}"
        else:
            self.reads_frame = True  # G[...], F.__closure__[...]: this frame's, not the first's
            replacement = root.name()
        # The root comes first in the expression: `L['m'].w`, `getattr(L['m'], '0').w`.
        return source.name().replace(root.name(), replacement, 1)

    def expression(self, value) -> str:
        """A node argument or the output structure, as Python source."""
        if isinstance(value, Node):
            return self.variables[value]
        if isinstance(value, AsNdarray):  # an ndarray returned: the tensor as NumPy's again
            return f"{self.names(AsNdarray)}({self.expression(value.node)}, {value.scalar})"
        if isinstance(value, tuple) and not hasattr(value, "_fields"):
            items = [self.expression(v) for v in value]
            return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
        if isinstance(value, list):
            return f"[{', '.join(self.expression(v) for v in value)}]"
        if type(value) is dict:
            pairs = [f"{self.expression(k)}: {self.expression(v)}" for k, v in value.items()]
            return "{" + ", ".join(pairs) + "}"
        if type(value) is slice:
            parts = (value.start, value.stop, value.step)
            return f"slice({', '.join(self.expression(v) for v in parts)})"
        if _is_literal(value):
            return repr(value)
        return self.names(value)  # a dtype, a device, a namedtuple, inf, ...


def _is_literal(value) -> bool:
    """Values whose repr reads back as an equal value of the same type."""
    if value is None or value is Ellipsis or type(value) in (bool, int, str, bytes):
        return True
    return type(value) is float and value == value and abs(value) != float("inf")
