"""The Trace: what the symbolic VM records, as a short list of nodes.

A trace is deliberately shaped like a torch.fx graph, so that stage 4 can
turn it into one node for node: `input` nodes (FX placeholders) read a value
from the frame through a source, `call_function` / `call_method` nodes apply
a torch function or a tensor method, and `output` is the function's result
as a structure (tuple, list, dict, constant) whose leaves may be nodes.
Each node keeps a meta tensor (`node.meta`) with the shape, dtype, device and
strides the real op would produce, and the user's source line it came from.
"""

import inspect
import types
from dataclasses import dataclass, field

import torch

from .sources import Assumption, Source

OPS = ("input", "call_function", "call_method")


@dataclass(eq=False)
class Node:
    """One recorded operation: `%index = target(*args, **kwargs)`."""

    index: int
    op: str
    target: object  # a callable for call_function, a method name for call_method
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    source: Source | None = None  # for input nodes: where the value comes from
    meta: object = None  # a meta tensor (or the example value of a non-tensor input)
    lineno: int | None = None  # the user's source line that produced the node

    def __repr__(self):
        return f"%{self.index}"

    def __str__(self):
        if self.op == "input":
            return f"%{self.index} = input {self.source.name()}{_describe_meta(self.meta)}"
        args = [format_argument(a) for a in self.args]
        args += [f"{k}={format_argument(v)}" for k, v in self.kwargs.items()]
        if self.op == "call_method":
            receiver, *rest = args
            call = f"{receiver}.{self.target}({', '.join(rest)})"
        else:
            call = f"{target_name(self.target)}({', '.join(args)})"
        return f"%{self.index} = {call}{_describe_meta(self.meta)}"


@dataclass(eq=False)
class Trace:
    """The recorded nodes, the output structure and the assumptions the trace made."""

    code: object  # the code object that was traced
    nodes: list = field(default_factory=list)
    output: object = None
    assumptions: dict = field(default_factory=dict)  # Assumption -> None: an ordered set
    shapes: object = None  # its symbols (dynamic_shapes/shapes.py's Shapes), set by the VM

    @property
    def inputs(self) -> list:
        return [n for n in self.nodes if n.op == "input"]

    def add_node(self, op, target, args=(), kwargs=None, *, source=None, meta=None, lineno=None):
        assert op in OPS, op
        node = Node(
            len(self.nodes), op, target, tuple(args), dict(kwargs or {}), source, meta, lineno
        )
        self.nodes.append(node)
        return node

    def assume(self, kind: str, source: Source | None = None, other: Source | None = None):
        """Record that the trace relies on a fact about `source` (see `Assumption`)."""
        self.assumptions.setdefault(Assumption(kind, source, other), None)

    def __str__(self):
        lines = [str(n) for n in self.nodes]
        lines.append(f"return {format_argument(self.output)}")
        return "\n".join(lines)


def trace_node_name(value) -> str | None:
    return repr(value) if isinstance(value, Node) else None


def format_argument(value, name_of=trace_node_name) -> str:
    """An op's argument as code reads it; `name_of` names the nodes (stage 4 names FX's)."""
    if (name := name_of(value)) is not None:
        return name
    if isinstance(value, tuple):
        inner = ", ".join(format_argument(v, name_of) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(format_argument(v, name_of) for v in value) + "]"
    if isinstance(value, dict):
        items = (f"{k!r}: {format_argument(v, name_of)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    if isinstance(value, slice):
        return f"slice({value.start!r}, {value.stop!r}, {value.step!r})"
    return target_name(value) if callable(value) and not isinstance(value, type) else repr(value)


def op_name(target) -> str:
    """`add_` for `x.add_`, `torch.add_`, `torch.ops.aten.add_.Tensor` alike."""
    if isinstance(target, torch._ops.OpOverload):
        return target.overloadpacket.__name__
    return target if isinstance(target, str) else getattr(target, "__name__", "")


def target_name(target) -> str:
    """`torch.sin`, `operator.add`, `torch.nn.functional.relu`: how a reader would write it."""
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", repr(target))
    if name.startswith("_VariableFunctionsClass."):  # torch.sin is a C builtin of this class
        name = target.__name__
    if module.startswith("torch._C") or module == "torch._VariableFunctions" or not module:
        module = "torch"
    if module == "_operator":
        module = "operator"
    return f"{module}.{name}"


def _describe_meta(meta) -> str:
    if type(meta).__name__ in ("SymInt", "SymFloat"):  # a symbolic int: `s0`, `2*s0`
        return f"  # {meta}"
    if hasattr(meta, "dtype") and hasattr(meta, "shape"):
        dtype = str(meta.dtype).removeprefix("torch.")
        return f"  # {dtype}{list(meta.shape)}"
    return ""


def map_nodes(value, fn):
    """Apply `fn` to every Node inside a nested structure of tuples, lists, dicts and slices."""
    if isinstance(value, Node):
        return fn(value)
    if isinstance(value, (tuple, list)):
        mapped = [map_nodes(v, fn) for v in value]
        return type(value)(mapped) if not hasattr(value, "_fields") else type(value)(*mapped)
    if isinstance(value, dict):
        return {k: map_nodes(v, fn) for k, v in value.items()}
    if isinstance(value, slice):
        return slice(*(map_nodes(v, fn) for v in (value.start, value.stop, value.step)))
    return value


def code_signature(code, defaults=(), kwdefaults=None) -> inspect.Signature:
    """The parameters of a code object, as a call of a function made from it binds them.

    `inspect.signature(fn)` follows `fn.__wrapped__`, so a decorator's wrapper
    (`functools.wraps`, every Hugging Face `forward`) would be bound by the parameters
    of the function it wraps. A frame runs the wrapper's own code: bind by that.
    """
    cells = tuple(types.CellType() for _ in code.co_freevars) or None
    stand_in = types.FunctionType(code, {}, code.co_name, tuple(defaults or ()) or None, cells)
    stand_in.__kwdefaults__ = dict(kwdefaults) if kwdefaults else None
    return inspect.signature(stand_in)


def bind_frame(fn, args, kwargs) -> tuple[dict, dict, object]:
    """The (L, G, F) a source is read from, for a call `fn(*args, **kwargs)`.

    For a bound method, `self` is not in L: it is `F.__self__`.
    """
    function = getattr(fn, "__func__", fn)
    if function is not fn:
        args = (fn.__self__, *args)
    signature = code_signature(function.__code__, function.__defaults__, function.__kwdefaults__)
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    L = dict(bound.arguments)
    if function is not fn:
        del L[function.__code__.co_varnames[0]]
    return L, fn.__globals__, fn


def replay(trace: Trace, fn, *args, **kwargs):
    """Run a trace on real values: read each input through its source, apply each node.

    This is the smallest possible backend. It lets a trace be checked against
    eager on its own; stage 3 runs traces this way and stage 4 replaces it with FX.
    """
    L, G, F = bind_frame(fn, args, kwargs)
    values = {}

    def value_of(node):
        return values[node]

    for node in trace.nodes:
        if node.op == "input":
            values[node] = node.source.get(L, G, F)
            continue
        node_args = map_nodes(node.args, value_of)
        node_kwargs = map_nodes(node.kwargs, value_of)
        if node.op == "call_method":
            receiver, *rest = node_args
            values[node] = getattr(receiver, node.target)(*rest, **node_kwargs)
        else:
            values[node] = node.target(*node_args, **node_kwargs)
    return map_nodes(trace.output, value_of)
