"""`torch.vmap` (`torch.func.vmap`): a function mapped over a batch dimension, in the graph.

Eager's vmap runs the function once, on BatchedTensors: each op meets a batching rule that
runs it on the whole batch. torch/_dynamo traces vmap's own Python, with functorch's C
functions (`_add_batch_dim`, `_vmap_increment_nesting`) in its graph, on batched
FakeTensors. The VM's meta tensors are not batched; it takes two steps instead:

1. The function is traced as any function, on one example of the batch: each batched
   argument is a stand-in with the shape of one example (its batch dimension removed), so
   `x.shape`, a branch on it and the function's closures are the VM's as usual. The ops
   recorded are then taken out of the trace: they are the function, per example.
2. torch's own vmap runs that per-example function on FakeTensors of the batched
   arguments, under make_fx (torch.fx.experimental.proxy_tensor): the aten ops it records
   are the batched computation, as vmap's batching rules chose it, and they go into the
   trace in place of the per-example ones (`record_call`, as any op).

The graph then computes what eager computes, as aten ops. What the VM does not do, it breaks
on with a reason, and eager's vmap runs: a function that changes anything outside itself or
writes in place (a changed object would hold a per-example value), `randomness` other than
"error" and `chunk_size` (each changes how the batch is drawn or split), non-tensor outputs,
a trace with symbolic sizes. An error of vmap's own (a random op under "error", in_dims
that do not fit) breaks too, and eager raises it.
"""

import inspect
import operator

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from ..errors import Location, ObservedException, Unsupported
from ..python.callables import MethodVariable, PartialVariable
from ..python.sequences import ListVariable, SequenceVariable, TupleVariable
from ..trace import Node, map_nodes
from ..variables import ConstantVariable, TensorVariable, Variable

SIGNATURE = inspect.signature(torch.vmap)


def is_vmap(value) -> bool:
    return value is torch.vmap  # torch.func.vmap is the same function


def wrap_vmap(tx, value, source):
    if source is not None:
        tx.trace.assume("id", source)
    return VmapVariable(source)


def unsupported(why: str):
    return Unsupported("untraceable_call", f"torch.vmap: {why}")


class VmapVariable(Variable):
    """`torch.vmap` itself: a call makes the mapped function, as eager's does."""

    def __init__(self, source=None):
        self.source = source

    def identity(self):
        return torch.vmap

    def call(self, tx, args, kwargs):
        try:
            bound = SIGNATURE.bind(*args, **kwargs)
        except TypeError as error:
            raise ObservedException(error, "torch.vmap()") from None
        bound.apply_defaults()
        fn = bound.arguments.pop("func")
        options = {}
        for name, value in bound.arguments.items():
            if isinstance(value, Variable):
                if not value.is_python_constant():
                    raise unsupported(f"its {name} is not a constant ({value})")
                value = value.as_python_constant()
            options[name] = value
        return VmappedVariable(fn, options)


class VmappedVariable(Variable):
    """`torch.vmap(fn, in_dims, out_dims, ...)`: a call maps `fn` over the batch (see above)."""

    def __init__(self, fn: Variable, options: dict):
        self.fn, self.options = fn, options

    def call(self, tx, args, kwargs):
        return batched_call(tx, self.fn, self.options, list(args), kwargs)

    def reconstruct(self, cg):
        options = {name: ConstantVariable(value) for name, value in self.options.items()}
        cg.call_callable(torch.vmap, lambda: cg.reconstruct(self.fn), kwargs=options)

    def __repr__(self):
        return f"VmappedVariable({self.fn!r})"


def batched_call(tx, fn, options, args, kwargs):
    if options["randomness"] != "error" or options["chunk_size"] is not None:
        raise unsupported("randomness other than 'error', or a chunk_size, is left to eager")
    if tx.trace.shapes.active:
        raise unsupported("in a trace with symbolic sizes")
    in_dims = options["in_dims"]
    if isinstance(in_dims, tuple) and len(in_dims) != len(args):
        raise unsupported(f"in_dims {in_dims} for {len(args)} positional arguments")
    per_arg = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
    batched = []  # (the batched argument, its dimension, its per-example stand-in)
    examples = [
        per_example_argument(arg, dims, batched) for arg, dims in zip(args, per_arg, strict=True)
    ]
    if not batched:
        raise unsupported("no argument has a batch dimension")
    devices = {arg.device for arg, _, _ in batched}
    if len(devices) > 1:
        raise unsupported(f"batched arguments on several devices ({devices})")

    start, before = len(tx.trace.nodes), changes_of(tx.side_effects)
    output = fn.call(tx, examples, kwargs)  # step 1: the function, on one example
    try:
        return batch(tx, output, start, before, options["out_dims"], batched, devices.pop())
    except Unsupported as error:  # found after the function ran: said where it is, so that
        error.frames.append(location_of(fn))  # stage 4 traces the frame again and stops
        raise  # before this call (what the function changed would happen twice)


def batch(tx, output, start, before, out_dims, batched, device):
    """Step 2, on the per-example ops the trace holds from `start`: see the module docstring."""
    if changes_of(tx.side_effects) != before:
        raise unsupported("its function changes an object outside it, or a tensor in place")
    leaves, rebuild = flatten_output(output)
    out_dims = output_dims(out_dims, output, len(leaves))
    segment = tx.trace.nodes[start:]
    body = [node for node in segment if node.op != "input"]
    del tx.trace.nodes[start:]  # the per-example ops leave; inputs read inside stay
    for node in segment:
        if node.op == "input":
            node.index = len(tx.trace.nodes)
            tx.trace.nodes.append(node)

    stand_ins = [example.node for _, _, example in batched]
    captured = captured_nodes(body, [leaf.node for leaf in leaves], stand_ins)
    if not all(isinstance(node.meta, torch.Tensor) for node in captured):
        raise unsupported("its function uses a number computed in the trace")

    def per_example(*values):
        env = dict(zip([*stand_ins, *captured], values, strict=True))
        for node in body:
            env[node] = run_node(node, env)
        return tuple(env[leaf.node] for leaf in leaves)

    dims = (*[dim for _, dim, _ in batched], *[None] * len(captured))
    mapped = torch.vmap(per_example, in_dims=dims, out_dims=out_dims)
    fake_mode = torch._subclasses.fake_tensor.FakeTensorMode()
    with fake_mode:
        fakes = [fake_of(arg.meta, device) for arg, _, _ in batched]
        fakes += [fake_of(node.meta, device) for node in captured]
    try:  # step 2: torch's vmap of it, recorded as aten ops
        with fake_mode, torch.set_grad_enabled(tx.root().grad_enabled):  # factories: fakes
            graph = make_fx(torch.func.functionalize(mapped))(*fakes)
    except (RuntimeError, ValueError, TypeError, NotImplementedError) as error:
        raise unsupported(f"{type(error).__name__}: {str(error).splitlines()[0]}") from None
    inputs = [arg for arg, _, _ in batched]
    inputs += [TensorVariable(node, node.meta, device, source=node.source) for node in captured]
    return rebuild(record_graph(tx, graph, inputs))


def location_of(fn) -> Location:
    """The function given to vmap, as a frame of the user's stack (its first line)."""
    inner = fn
    while isinstance(inner, (PartialVariable, MethodVariable)):
        inner = inner.fn if isinstance(inner, PartialVariable) else inner.function
    code = getattr(inner, "code", None)
    if code is None:
        return Location(repr(fn), "<unknown>", None, 0, "CALL")
    return Location(code.co_qualname, code.co_filename, code.co_firstlineno, 0, "RESUME")


def per_example_argument(arg, dims, batched: list):
    """The argument as one example sees it: each tensor with a batch dimension (`dims`, a
    prefix of the argument's structure, as vmap's in_dims) replaced by its stand-in."""
    if isinstance(arg, SequenceVariable) and type(arg) in (TupleVariable, ListVariable):
        parts = dims if isinstance(dims, (tuple, list)) else (dims,) * len(arg.items)
        if len(parts) != len(arg.items):
            raise unsupported(f"in_dims {dims} do not fit an argument of {len(arg.items)} items")
        items = [per_example_argument(a, d, batched) for a, d in zip(arg.items, parts, strict=True)]
        return type(arg)(items)
    if dims is None:
        return arg  # passed as it is to every example
    if not isinstance(arg, TensorVariable) or not isinstance(dims, int):
        raise unsupported(f"in_dim {dims!r} for {arg}, which is not a tensor")
    if not -arg.meta.dim() <= dims < arg.meta.dim():
        raise unsupported(f"in_dim {dims} of a tensor of {arg.meta.dim()} dimensions")
    dim = dims % arg.meta.dim()  # one example: the shape and strides but the batch dimension's
    shape = [size for d, size in enumerate(arg.meta.shape) if d != dim]
    strides = [stride for d, stride in enumerate(arg.meta.stride()) if d != dim]
    meta = torch.empty_strided(shape, strides, dtype=arg.meta.dtype, device="meta")
    meta.requires_grad_(arg.meta.requires_grad)
    example = TensorVariable(Node(-1, "input", None, meta=meta), meta, arg.device)
    batched.append((arg, dims, example))
    return example


def changes_of(side_effects):
    """What the trace has changed outside it, to compare before and after the function."""
    return dict(side_effects.stores), dict(side_effects.containers), dict(side_effects.changed)


def flatten_output(output):
    """The output's tensors, and a function that builds its structure from their results."""
    if isinstance(output, TensorVariable):
        return [output], lambda results: results[0]
    if type(output) in (TupleVariable, ListVariable):
        parts = [flatten_output(item) for item in output.items]
        leaves = [leaf for part, _ in parts for leaf in part]

        def rebuild(results):
            items, at = [], 0
            for part, build in parts:
                items.append(build(results[at : at + len(part)]))
                at += len(part)
            return type(output)(items)

        return leaves, rebuild
    raise unsupported(f"its function returned {output}, not tensors")


def output_dims(out_dims, output, count: int) -> tuple:
    """vmap's out_dims (one, or a prefix of the output's structure), one per output tensor."""
    if not isinstance(out_dims, (tuple, list)):
        return (out_dims,) * count
    if not isinstance(output, SequenceVariable) or len(out_dims) != len(output.items):
        raise unsupported(f"out_dims {out_dims} do not fit the output {output}")
    dims = []
    for item, dim in zip(output.items, out_dims, strict=True):
        dims += output_dims(dim, item, len(flatten_output(item)[0]))
    return tuple(dims)


def captured_nodes(body, outputs, stand_ins) -> list:
    """The nodes from outside the function that its ops (or its output) use: the tensors it
    closes over, the ones passed unbatched, the trace's inputs it read."""
    inside = set(body) | set(stand_ins)
    found = {}

    def note(node):
        if node not in inside:
            found.setdefault(node, None)
        return node

    for node in body:
        map_nodes((node.args, node.kwargs), note)
    for node in outputs:
        note(node)
    return list(found)


def run_node(node, env):
    """One recorded op, on the values of its arguments (trace.replay's step)."""
    args = map_nodes(node.args, env.__getitem__)
    kwargs = map_nodes(node.kwargs, env.__getitem__)
    if node.op == "call_method":
        receiver, *rest = args
        return getattr(receiver, node.target)(*rest, **kwargs)
    return node.target(*args, **kwargs)


def fake_of(meta, device):
    """A FakeTensor like the meta tensor, on the real device (a factory inside the function
    then makes its tensor where eager would)."""
    fake = torch.empty_strided(meta.shape, meta.stride(), dtype=meta.dtype, device=device)
    return fake.requires_grad_(meta.requires_grad)


def record_graph(tx, graph, inputs) -> list:
    """make_fx's aten ops, recorded into the trace on the Variables of its inputs."""
    env, placeholders = {}, iter(inputs)
    for node in graph.graph.nodes:
        if node.op == "placeholder":
            env[node] = next(placeholders)
        elif node.op == "call_function":
            env[node] = record_op(tx, node, env)
        elif node.op == "output":
            return [env[leaf] for leaf in node.args[0]]
        else:  # a constant tensor made inside the function (`torch.tensor([...])`)
            raise unsupported(f"its graph holds a {node.op} node ({node.target})")
    raise AssertionError("make_fx's graph has no output")


def record_op(tx, node, env):
    target = node.target
    if target is operator.getitem:  # an item of a multi-output op's result
        return env[node.args[0]].items[node.args[1]]
    if isinstance(target, torch._ops.OpOverload) and target._schema.is_mutable:
        raise unsupported(f"its function writes in place into an argument ({target})")
    args = [as_variable(a, env) for a in node.args]
    kwargs = {k: as_variable(v, env) for k, v in node.kwargs.items()}
    return tx.record_call(target, args, kwargs)


def as_variable(value, env):
    if isinstance(value, torch.fx.Node):
        return env[value]
    if isinstance(value, (list, tuple)):
        items = [as_variable(v, env) for v in value]
        return ListVariable(items) if isinstance(value, list) else TupleVariable(items)
    return ConstantVariable(value)
