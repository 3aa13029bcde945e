"""Training: a graph's forward and backward as two graphs (AOTAutograd's design).

A backend gets a graph of torch calls; autograd would run it op by op, saving what
each op's backward needs. To compile the backward too, AOTAutograd
(torch/_functorch/aot_autograd.py) does three things, and so do we, in few lines:

1. **The joint graph.** One function runs the graph and `torch.autograd.grad` of its
   outputs, given the gradients of the outputs as inputs (the *tangents*); `make_fx`
   traces it on fake tensors to ATen ops, under torch's functionalization (no in-place
   op, no view that a write could reach), with the decompositions the compiler asks for.
   The backward's ops are then ordinary nodes of one FX graph.
2. **The partition** (`partition`): nodes that read a tangent are the backward; the
   others are the forward. What the backward reads from the forward is *saved*; saved
   values made by cheap pointwise ops and views are recomputed in the backward instead,
   from the values they are made of, when those cost no more memory than they do (our
   rule, greedy; torch's min-cut partitioner, torch/_functorch/partitioners.py, solves a
   max-flow problem over the same choice).
3. **The runtime** (`TrainingGraph`): a `torch.autograd.Function` whose forward calls
   the compiled forward and saves its extra outputs, and whose backward calls the
   compiled backward. Inputs the graph writes (BatchNorm's running statistics) come
   out of the functional graph as new values, copied into the inputs after the call,
   as AOTAutograd's runtime epilogue does.

`aot_autograd(gm, compiler)` returns a callable that does this per call: a call that
needs no gradient (no input requires grad, or `no_grad`) runs the forward alone,
traced to ATen the same way.

Under autocast the trace runs in the caller's autocast state, so autocast's decisions
are ops of the ATen graphs (a `_to_copy` to bfloat16 before each matmul); the compiled
graphs then run with autocast off, as AOTAutograd's runtime runs them: a matmul that an
`enabled=False` region kept in float32 stays there.
"""

import dataclasses
from collections.abc import Callable

import torch
import torch.fx
from torch._dispatch.python import enable_python_dispatcher
from torch._subclasses.fake_tensor import FakeTensorMode
from torch._subclasses.functional_tensor import FunctionalTensor, FunctionalTensorMode
from torch.fx.experimental.proxy_tensor import make_fx

from stage1_eval_frame import call_unhooked
from stage1_eval_frame.logs import get_logger
from stage2_symbolic_vm.torch_api import autocast
from stage3_guards import SameArguments

log = get_logger("graph")
aten = torch.ops.aten

# Views, which cost nothing to make again and share their source's memory.
VIEWS = {
    aten.view.default, aten.permute.default, aten.t.default, aten.transpose.int,
    aten.expand.default, aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims,
    aten.alias.default, aten.detach.default, aten.slice.Tensor, aten.select.int,
}  # fmt: skip
# The ops the backward may compute again rather than read from memory: pointwise and
# deterministic (never `bernoulli`: dropout's mask is drawn once), or views. Matmuls,
# convolutions and reductions are always saved.
RECOMPUTABLE = VIEWS | {
    aten.add.Tensor, aten.add.Scalar, aten.sub.Tensor, aten.sub.Scalar, aten.mul.Tensor,
    aten.mul.Scalar, aten.div.Tensor, aten.div.Scalar, aten.neg.default, aten.exp.default,
    aten.relu.default, aten.sigmoid.default, aten.tanh.default, aten.erf.default,
    aten.rsqrt.default, aten.sqrt.default, aten.pow.Tensor_Scalar, aten.where.self,
    aten.le.Scalar, aten.lt.Scalar, aten.ge.Scalar, aten.gt.Scalar, aten.eq.Scalar,
    aten.gelu.default, aten.silu.default, aten.clamp.default, aten.clamp_min.default,
    aten.sin.default, aten.cos.default, aten.scalar_tensor.default, aten.full.default,
    aten._to_copy.default,
}  # fmt: skip
# Ops whose inputs are in memory whatever a compiler fuses around them: a library's matrix
# product. A cheap value that one of them reads in the backward, through views, is written
# there anyway; saving it costs little more, and spares computing it again (a GELU's
# output, which the weight's gradient multiplies). Torch's partitioner bans recomputing
# such values too (`is_materialized_backwards`, torch/_functorch/partitioners.py). Not a
# convolution's inputs: recomputed from the convolution before them, a BatchNorm and a ReLU
# cost a pass over the image, and saving them a second image per block.
LIBRARY_OPS = {aten.mm.default, aten.bmm.default, aten.addmm.default}


class NeedsTorch(Exception):
    """This graph's training cannot be split into two graphs: run it in torch (the reason)."""


@dataclasses.dataclass
class Joint:
    """The traced joint graph and what its inputs and outputs are."""

    graph: torch.fx.GraphModule | None  # None in a plan read from disk (stage 5 keeps them)
    num_primals: int  # placeholders: the graph's inputs, then one tangent per output
    num_outputs: int  # outputs: the graph's outputs, the inputs' gradients, written inputs
    differentiable: list[bool]  # per graph output: does it require grad
    tangents: list[tuple]  # per graph output: its gradient's shape, dtype and device
    mutated: list[int]  # positions of the inputs the graph writes into
    # output -> the input it is (None) or a view of, (size, stride, offset): made again from
    # the caller's input after the call, as AOTAutograd does, so that it shares its memory
    aliases: dict[int, tuple[int, object]]
    container: type  # what the graph returns its outputs in (tuple, list), or None for one


def trace_joint(
    gm: torch.fx.GraphModule, args: list, decompositions: dict, training: bool
) -> Joint:
    """The forward and backward of `gm` on `args`, one ATen graph (AOTAutograd's
    `create_joint` under `create_functionalized_fn`)."""
    needs_grad = [training and isinstance(a, torch.Tensor) and a.requires_grad for a in args]
    # A first run on fake tensors says which outputs need a gradient (AOTAutograd's
    # `run_functionalized_fw_and_collect_metadata`); a real run would write the inputs.
    with (
        FakeTensorMode(allow_non_fake_inputs=True) as fake,
        torch.enable_grad(),
        own_hooks(),
        enable_python_dispatcher(),
    ):
        fakes = [fake.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
        # A caller's tensor made by autograd (not a leaf) may be written in place, as eager
        # allows: its stand-in is not a leaf either.
        fakes = [
            (f.detach().requires_grad_().clone() if a.grad_fn else f.detach().requires_grad_())
            if g
            else f
            for f, g, a in zip(fakes, needs_grad, args, strict=True)
        ]
        returned = gm(*fakes)
        outputs = as_list(returned)
    if not all(isinstance(o, torch.Tensor) for o in outputs):
        raise NeedsTorch("an output of the graph is not a tensor")
    differentiable = [o.requires_grad for o in outputs]
    aliases = {}
    for i, output in enumerate(outputs):
        for j, value in enumerate(fakes):
            if isinstance(value, torch.Tensor) and same_storage(output, value):
                where = (output.size(), output.stride(), output.storage_offset())
                aliases[i] = (j, None if output is value else where)
    tangents = [torch.empty(o.shape, dtype=o.dtype, device=o.device) for o in outputs]
    mutated: list[int] = []

    def joint(primals, tangents):
        with FunctionalTensorMode():
            inputs = [
                FunctionalTensor.to_functional(p) if isinstance(p, torch.Tensor) else p
                for p in primals
            ]
            grads_of = [FunctionalTensor.to_functional(t) for t in tangents]
            with torch.enable_grad():
                results = gm(*inputs)
            results = as_list(results)
            wanted = [i for i, g in enumerate(needs_grad) if g]
            pairs = [(o, t) for o, t, d in zip(results, grads_of, differentiable, strict=True) if d]
            grads = [None] * len(primals)
            if wanted and pairs:
                found = torch.autograd.grad(
                    [o for o, _ in pairs], [inputs[i] for i in wanted],
                    [t for _, t in pairs], allow_unused=True,
                )  # fmt: skip
                for i, g in zip(wanted, found, strict=True):
                    grads[i] = g
        written = [
            i for i, p in enumerate(inputs)
            if isinstance(p, FunctionalTensor) and torch._functionalize_has_data_mutation(p.elem)
        ]  # fmt: skip
        mutated[:] = written
        unwrap = lambda t: t.from_functional() if isinstance(t, FunctionalTensor) else t  # noqa: E731
        return (
            [unwrap(r) for r in results],
            [unwrap(g) for g in grads],
            [unwrap(inputs[i]) for i in written],
        )

    # The Python dispatcher runs the decompositions torch registers on ops' autograd keys
    # (`py_impl`), as AOTAutograd traces: cuDNN's batch norm, which claims to write nothing,
    # becomes `_native_batch_norm_legit`, whose writes into the running statistics
    # functionalization then sees (without it, the GPU's batch norms stayed extern calls
    # that wrote the statistics behind the graph's back).
    with own_hooks(), enable_python_dispatcher():
        traced = make_fx(joint, decomposition_table=decompositions, tracing_mode="fake")(
            list(args), tangents
        )
    eliminate_common_subexpressions(traced.graph)
    traced.recompile()
    if any(needs_grad[i] for i in mutated):
        raise NeedsTorch("the graph writes into an input that requires grad")
    return Joint(
        traced, len(args), len(outputs), differentiable,
        [(o.shape, o.dtype, o.device) for o in outputs], list(mutated), aliases,
        type(returned) if isinstance(returned, (list, tuple)) else None,
    )  # fmt: skip


def eliminate_common_subexpressions(graph: torch.fx.Graph):
    """One node for each op called twice on the same arguments. Decompositions repeat
    themselves (BatchNorm's backward computes `input - mean` twice): two copies of a value
    the backward reads would be two saved tensors, and the partition, weighing one value
    at a time, would keep both. Random ops stay apart: each draws its own numbers. So do
    the graph's outputs: eager's `x.sin(), x.sin()` are two tensors, not one.
    (AOTAutograd runs the same pass, `fx_graph_cse` in torch/_functorch/compile_utils.py.)"""
    seen: dict = {}
    for node in list(graph.nodes):
        if node.op != "call_function" or torch.Tag.nondeterministic_seeded in getattr(
            node.target, "tags", ()
        ):
            continue
        key = (node.target, hashable(node.args), hashable(node.kwargs))
        if key in seen and not any(user.op == "output" for user in node.users):
            node.replace_all_uses_with(seen[key])
            graph.erase_node(node)
        else:
            seen[key] = node


def hashable(value):
    """An op's arguments as a key: lists made tuples, dictionaries sorted item tuples."""
    if isinstance(value, (list, tuple)):
        return tuple(hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, hashable(v)) for k, v in value.items()))
    return value


def own_hooks():
    """The traces' autograd saves fake tensors: the caller's saved-tensor hooks (offloading,
    a memory count) must not see them, so the innermost hooks keep them as they are."""
    return torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)


def same_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage()._cdata == b.untyped_storage()._cdata


def write_back(args, positions: list[int], values):
    """Copy the written inputs' new values into them, as eager leaves them (AOTAutograd's
    runtime epilogue). One `_foreach_copy_` per device and dtype: on the GPU one launch for
    all of a network's running statistics, rather than one copy per statistic a step."""
    groups: dict[tuple, tuple[list, list]] = {}
    for i, value in zip(positions, values, strict=True):
        into, new = groups.setdefault((args[i].device, args[i].dtype, value.dtype), ([], []))
        into.append(args[i])
        new.append(value)
    with torch.no_grad():
        for into, new in groups.values():
            torch._foreach_copy_(into, new)


def regenerate_aliases(joint: Joint, outputs: list, args) -> list:
    """Outputs that are inputs, or views of them, made from the caller's inputs (after
    their writes): eager's result shares the input's memory, and so does ours."""
    for i, (j, where) in joint.aliases.items():
        outputs[i] = args[j] if where is None else args[j].as_strided(*where)
    return outputs[0] if joint.container is None else joint.container(outputs)


def as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def nbytes(node: torch.fx.Node) -> int:
    value = node.meta.get("val")
    return value.numel() * value.element_size() if isinstance(value, torch.Tensor) else 0


@dataclasses.dataclass
class Partition:
    """The joint graph cut in two. The forward returns the graph's outputs, the new values
    of the inputs it writes, then the saved values; the backward takes the saved values,
    then the tangents, and returns one gradient (or None) per input."""

    forward: torch.fx.GraphModule
    backward: torch.fx.GraphModule
    saved: list[str]  # the saved values, by their node's name in the joint graph
    recomputed: list[str]  # the forward's values that the backward computes again
    tangents_of: list[set[int]]  # per input: the outputs whose gradients its gradient reads


def partition(joint: Joint) -> Partition:
    """Split the joint graph: nodes that read a tangent are the backward's, the others the
    forward's; what the backward reads of the forward is saved, but for the cheap values
    that are worth computing again (`RECOMPUTABLE`): one move at a time, latest value
    first, until no move saves memory (`recompute_from_sources`)."""
    nodes = list(joint.graph.graph.nodes)
    placeholders = [n for n in nodes if n.op == "placeholder"]
    primals, tangents = placeholders[: joint.num_primals], placeholders[joint.num_primals :]
    flat = list(nodes[-1].args[0])
    count = joint.num_outputs
    forward_outputs = flat[:count] + flat[count + joint.num_primals :]
    gradients = flat[count : count + joint.num_primals]

    in_backward = set(tangents)
    for node in nodes:
        if node.op == "call_function" and any(a in in_backward for a in node.all_input_nodes):
            in_backward.add(node)
    backward_nodes = needed_for([g for g in gradients if isinstance(g, torch.fx.Node)])
    saved = {a for n in backward_nodes if n in in_backward for a in n.all_input_nodes}
    saved |= {n for n in backward_nodes if n not in in_backward and n in gradients}
    saved -= in_backward

    position = {node: i for i, node in enumerate(nodes)}
    # Values the backward would make again in memory anyway are saved, never recomputed;
    # not the graph's outputs: the caller holds those, and a view the backward reads of one
    # (BERT's first token, which its pooler multiplies) is made again from it.
    kept = {
        n for n in nodes
        if cheap(n) and n not in in_backward and n.target not in VIEWS
        and n not in forward_outputs and read_by_library(n, in_backward)
    }  # fmt: skip
    sizes = Sizes()
    changed = True
    while changed:
        changed = False
        reach = Reach(saved, kept)  # what each saved value is made from, this round
        for value in sorted(saved, key=position.__getitem__, reverse=True):
            smaller = recompute_from_sources(value, saved, kept, reach, sizes)
            if smaller is not None:
                saved, changed = smaller, True
                break
    saved_list = sorted(saved, key=position.__getitem__)

    forward = subgraph(joint.graph, primals, [*forward_outputs, *saved_list], in_backward)
    # Values only the backward reads: a compiler may keep them in its own layout (stage 5
    # keeps images channels-last), as inductor does for the outputs a user never sees.
    visible = {n.name for n in forward_outputs if isinstance(n, torch.fx.Node)}
    backward_only = {n.name for n in saved_list} - visible
    for node in forward.graph.nodes:
        if node.name in backward_only:
            node.meta["saved_for_backward"] = True
    backward_set = needed_for(
        [g for g in gradients if isinstance(g, torch.fx.Node)], stop=set(saved_list)
    )
    backward = subgraph(joint.graph, [*saved_list, *tangents], gradients, set(), keep=backward_set)
    tangents_of = [
        {i for i, t in enumerate(tangents) if t in needed_for([g])}
        if isinstance(g, torch.fx.Node) else set()
        for g in gradients
    ]  # fmt: skip
    recomputed = [
        n.name for n in nodes
        if n in backward_set and n not in in_backward and n not in saved and n.op != "placeholder"
    ]  # fmt: skip
    return Partition(forward, backward, [n.name for n in saved_list], recomputed, tangents_of)


def recompute_from_sources(
    value: torch.fx.Node, saved: set, kept: set, reach: "Reach", sizes: "Sizes"
) -> set | None:
    """The saved values with `value` and the others that cheap ops make from the same
    sources recomputed from those sources, or None when that would not save memory. The
    values of `kept` are not recomputed: they are saved where the others need them.

    One value at a time is not enough: BatchNorm's forward saves `x - mean` and
    `(x - mean) * rstd`, each as large as `x`, and recomputing either alone costs `x` plus
    a statistic, a few bytes more than it saves; recomputing both from `x` saves one.

    Another saved value `u` joins the group when what it is made from, apart from saved
    values, is among `value`'s sources (`Reach.unsaved`): then every value it needs is at
    hand once `value`'s sources are. (Through `value` itself or not: what `value` is made
    from is among its sources by definition.)"""
    if not cheap(value) or value in kept:
        return None
    sources = cheap_sources([value], (saved - {value}) | kept)
    group = {value} | {
        u for u in saved - kept - {value} if cheap(u) and reach.unsaved(u) <= sources
    }  # fmt: skip
    rest = saved - group
    smaller = rest | cheap_sources(list(group), rest | kept)
    return smaller if sizes.total(smaller) <= sizes.total(saved) else None


class Reach:
    """For one round of `partition`: what each saved value is made from through cheap ops
    that is not itself saved (inputs, kept values, results of ops that are not cheap),
    computed once per value and round instead of once per pair of values."""

    def __init__(self, saved: set, kept: set):
        self.saved, self.free, self.found = saved, saved | kept, {}

    def unsaved(self, node: torch.fx.Node) -> set:
        if node not in self.found:
            self.found[node] = cheap_sources([node], self.free) - self.saved
        return self.found[node]


class Sizes:
    """Bytes of the values `partition` weighs, each read from its metadata once."""

    def __init__(self):
        self.bytes: dict[torch.fx.Node, int] = {}

    def total(self, values: set) -> int:
        """Memory the saved values keep alive. Inputs of the graph count too: a parameter
        is alive anyway, but the caller's tensor may be an activation only this keeps."""
        for value in values:
            if value not in self.bytes:
                self.bytes[value] = nbytes(value)
        return sum(self.bytes[v] for v in values)


def read_by_library(node: torch.fx.Node, in_backward: set) -> bool:
    """Whether a call of `LIBRARY_OPS` in the backward reads `node`, or a view of it."""
    todo = [node]
    while todo:
        for user in todo.pop().users:
            if user.target in LIBRARY_OPS and user in in_backward:
                return True
            if user.target in VIEWS:
                todo.append(user)
    return False


def cheap(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and node.target in RECOMPUTABLE


def cheap_sources(values: list, free: set) -> set:
    """What `values` are computed from through cheap ops (`RECOMPUTABLE`): nodes of `free`,
    inputs of the graph, and the values of ops that are not cheap."""
    sources, seen, todo = set(), set(), [a for v in values for a in v.all_input_nodes]
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        if node in free or not cheap(node):
            sources.add(node)
        else:
            todo.extend(node.all_input_nodes)
    return sources


def needed_for(outputs: list, stop: set = frozenset()) -> set:
    """The nodes `outputs` are computed from, not looking past the nodes in `stop`."""
    found, todo = set(), list(outputs)
    while todo:
        node = todo.pop()
        if node in found:
            continue
        found.add(node)
        if node not in stop:
            todo.extend(node.all_input_nodes)
    return found


def subgraph(joint, inputs, outputs, excluded, keep=None) -> torch.fx.GraphModule:
    """A graph of the joint's nodes that compute `outputs` from `inputs` (in the joint's
    order), leaving out `excluded`."""
    keep = (
        needed_for([o for o in outputs if isinstance(o, torch.fx.Node)], stop=set(inputs))
        if keep is None
        else keep
    )
    graph = torch.fx.Graph()
    env = {}
    for node in inputs:
        env[node] = graph.placeholder(node.name)
        env[node].meta = dict(node.meta)
    for node in joint.graph.nodes:
        if node in keep and node not in env and node.op != "output" and node not in excluded:
            if node.op == "placeholder":
                raise AssertionError(f"{node.name} is needed but not an input of the subgraph")
            env[node] = graph.node_copy(node, env.__getitem__)
    graph.output([env[o] if isinstance(o, torch.fx.Node) else o for o in outputs])
    return torch.fx.GraphModule(joint, graph)


class TrainingGraph:
    """One specialisation's runtime: the compiled forward and backward, called from a
    `torch.autograd.Function` (AOTAutograd's `CompiledFunction`,
    torch/_functorch/_aot_autograd/runtime_wrappers.py)."""

    def __init__(self, joint: Joint, parts: Partition, compiler: Callable):
        self.joint, self.parts, self.compiler = joint, parts, compiler
        self.forward = self.backward = None  # compiled at their first call, on real tensors
        self.num_saved = len(parts.saved)

    def __call__(self, args):
        results = CompiledFunction.apply(self, *args)
        count = self.joint.num_outputs
        write_back(args, self.joint.mutated, results[count:])
        return regenerate_aliases(self.joint, list(results[:count]), args)

    def run_forward(self, args):
        if self.forward is None:
            self.forward = self.compiler(self.parts.forward, list(args))
        with torch._C._DisableAutocast():  # the graph holds autocast's casts (see below)
            return call_unhooked(self.forward, *args)

    def run_backward(self, args):
        if self.backward is None:
            self.backward = self.compiler(self.parts.backward, list(args))
        with torch._C._DisableAutocast():
            return call_unhooked(self.backward, *args)


class CompiledFunction(torch.autograd.Function):
    """Forward: the compiled forward graph, saving its extra outputs. Backward: the compiled
    backward graph. The backward is itself not differentiable (`once_differentiable`):
    a double backward raises, as torch.compile's does, but at once: asking for the graph of
    the gradients (`create_graph=True`) is the error."""

    @staticmethod
    def forward(ctx, plan: TrainingGraph, *args):
        results = plan.run_forward(args)
        kept = len(results) - plan.num_saved
        ctx.plan = plan
        ctx.set_materialize_grads(False)  # an unused output's gradient is None, as in eager
        ctx.save_for_backward(*results[kept:])
        outputs = results[:kept]
        count = plan.joint.num_outputs
        ctx.mark_non_differentiable(
            *[o for o, d in zip(outputs, plan.joint.differentiable, strict=False) if not d],
            *outputs[count:],
        )
        return tuple(outputs)

    @staticmethod
    def backward(ctx, *grads):
        if torch.is_grad_enabled():  # the engine's grad mode is `create_graph`
            raise RuntimeError(
                "double backward through a compiled graph: its backward graph has no "
                "backward (torch.compile's AOTAutograd does not support it either). Compute "
                "higher-order gradients in eager mode, or compile without create_graph=True."
            )
        plan = ctx.plan
        count = plan.joint.num_outputs
        # A gradient that reads only the gradients of unused outputs is None, as eager's is;
        # the graph, traced with contiguous tangents, gets zeros for them.
        unused = {i for i, g in enumerate(grads[:count]) if g is None}
        tangents = [
            torch.zeros(shape, dtype=dtype, device=device) if g is None else g.contiguous()
            for g, (shape, dtype, device) in zip(grads, plan.joint.tangents, strict=False)
        ]  # fmt: skip
        gradients = plan.run_backward([*ctx.saved_tensors, *tangents])
        return None, *[
            None if reads <= unused else g
            for g, reads in zip(gradients, plan.parts.tangents_of, strict=True)
        ]


def key_of(args) -> tuple:
    """What a specialisation is made for: each tensor's metadata, requires_grad included
    (a call where another input requires grad needs another backward), and each number."""
    return tuple(
        (tuple(a.shape), a.stride(), a.dtype, a.device, a.requires_grad)
        if isinstance(a, torch.Tensor)
        else (type(a), a)
        for a in args
    )


def needs_autograd(args) -> bool:
    return torch.is_grad_enabled() and any(
        isinstance(a, torch.Tensor) and a.requires_grad for a in args
    )


class AotGraph:
    """What `aot_autograd` returns: called with a graph's inputs, it runs the forward and
    backward graphs made for their sizes and `requires_grad` (compiled on first sight),
    or, for a call that needs no gradient, the forward alone."""

    def __init__(self, gm, compiler: Callable, decompositions: dict, on_torch: Callable):
        self.gm, self.compiler, self.decompositions = gm, compiler, decompositions
        self.on_torch = on_torch  # told why a call runs the graph in torch
        self.plans: dict = {}
        self.last: tuple | None = None  # ((training, autocast), the last `SameArguments`)

    def plan(self, args, training: bool) -> TrainingGraph | str:
        """The plan for these arguments: the last one if they match it (checked in C++, as
        stage 5 checks its specialisations), else the one of their key, made if new. The
        autocast state is part of both: the trace holds its casts."""
        mode = (training, autocast.ambient_key())
        if self.last is not None and self.last[0] == mode and self.last[1](args):
            return self.last[1].code
        key = (key_of(args), mode)
        if key not in self.plans:
            self.plans[key] = self.new_plan(args, training)
        self.last = (mode, SameArguments(args, self.plans[key]))
        return self.plans[key]

    def new_plan(self, args, training: bool) -> TrainingGraph | str:
        """The joint graph traced and split for these arguments, or why it runs in torch.
        (Stage 5 keeps plans on disk: its performance/aot_cache.py.)"""
        try:
            joint = call_unhooked(trace_joint, self.gm, list(args), self.decompositions, training)
            parts = partition(joint)
        except NeedsTorch as reason:
            return str(reason)
        log.info(
            "joint graph split: %d saved (%s), %d recomputed in the backward",
            len(parts.saved), ", ".join(parts.saved), len(parts.recomputed),
        )  # fmt: skip
        return TrainingGraph(joint, parts, self.compiler)

    def __call__(self, *args):
        training = needs_autograd(args)
        plan = self.plan(args, training)
        if isinstance(plan, str):
            self.on_torch(plan)
            return self.gm(*args)
        if training:
            return plan(list(args))
        results = plan.run_forward(args)
        count, written = plan.joint.num_outputs, len(plan.joint.mutated)
        write_back(args, plan.joint.mutated, results[count : count + written])
        return regenerate_aliases(plan.joint, list(results[:count]), args)


def aot_autograd(
    gm: torch.fx.GraphModule, compiler: Callable, decompositions=None, on_torch=None
) -> AotGraph:
    """`gm` as two graphs, each compiled by `compiler(gm, example_inputs)` at its first call
    (torch's `aot_autograd(fw_compiler=, bw_compiler=)`; one compiler serves both here)."""
    return AotGraph(gm, compiler, decompositions or {}, on_torch or log.info)
