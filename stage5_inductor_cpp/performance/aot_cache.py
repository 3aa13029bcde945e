"""Training plans kept on disk: a fresh process does not trace the joint graph again.

A call that needs autograd is traced by stage 4's training/aot.py into a joint forward
and backward graph (`make_fx` on fake tensors: the longest part of a warm training start)
and split into a forward and a backward graph, each compiled by graph_cache.py's
`compile_graph`. `CachedAotGraph` keeps the result of the trace and the split, a
*plan*, in `$MINIDYNAMO_CACHE_DIR/plans/<hash>.json`: the two graphs (as graph_text.py
spells them, their ATen ops already made the torch calls the lowerings know, aten.py),
and what the runtime needs besides: which outputs are differentiable, the tangents'
shapes, the inputs the graph writes, the outputs that are inputs or their views, how
many values the forward saves and which tangents each gradient reads. A process whose
key matches rebuilds the two graphs from the file and compiles them (from graph_cache.py's
files, when they are there too). Torch's AOTAutograd cache keeps the same
(torch/_functorch/_aot_autograd/autograd_cache.py), with the compiled graphs by their
FX graph cache keys.

The key holds what the plan is made of: the graph as graph_text.py spells it, each
input's metadata (requires_grad and whether autograd made it included: they decide which
gradients the trace computes), whether the call trains, and graph_cache.py's `settings`
(torch and the stages' sources, which hold the decompositions, autocast, grad mode...).
A process that compiles a plan compiles the graphs as the file keeps them, rebuilt from
their text, so that this process and the next compile the same graphs.
"""

import torch

from stage4_fx.training.aot import AotGraph, Joint, Partition, TrainingGraph, log

from ..training.aten import as_torch_calls
from .graph_cache import key_of, read_entry, write_entry
from .graph_text import NotCacheable, graph_of, graph_text, read, spell

stats = {"written": 0, "from_disk": 0}  # what the tests count
CONTAINERS = {"tuple": tuple, "list": list, None: None}


class CachedAotGraph(AotGraph):
    """Stage 4's `AotGraph`, whose plans are kept on disk and whose graphs are made the
    torch calls of the lowerings (aten.py) before they are compiled."""

    def new_plan(self, args, training: bool) -> TrainingGraph | str:
        key = key_of("plan", self.gm, args, [training])
        if key is not None and (plan := self.recall(key)) is not None:
            return plan
        plan = super().new_plan(args, training)
        if isinstance(plan, str):  # the reason it runs in torch
            return plan
        parts = plan.parts
        parts.forward, parts.backward = map(as_torch_calls, (parts.forward, parts.backward))
        try:
            # the constants the trace made (`torch.tensor([...])` in the program) by value
            texts = [graph_text(g, "values") for g in (parts.forward, parts.backward)]
        except NotCacheable as reason:
            log.info("a training plan not kept on disk: %s", reason)
            return plan
        parts.forward, parts.backward = map(graph_of, texts)  # as the next process reads them
        if key is not None:
            remember(key, plan, texts)
        return plan

    def recall(self, key: str) -> TrainingGraph | None:
        data = read_entry("plans", key)
        if data is None:
            return None
        try:
            joint = Joint(
                None, data["num_primals"], data["num_outputs"], data["differentiable"],
                [(torch.Size(s), read(d), read(v)) for s, d, v in data["tangents"]],
                data["mutated"],
                {i: (j, None if at is None else tuple(at)) for i, j, at in data["aliases"]},
                CONTAINERS[data["container"]],
            )  # fmt: skip
            forward, backward = map(graph_of, data["graphs"])
            tangents_of = [set(t) for t in data["tangents_of"]]
            parts = Partition(forward, backward, data["saved"], data["recomputed"], tangents_of)
        except (NotCacheable, KeyError, TypeError, ValueError):
            return None  # traced again, and written over
        stats["from_disk"] += 1
        log.info("joint graph split (from disk): %d saved", len(parts.saved))
        return TrainingGraph(joint, parts, self.compiler)


def remember(key: str, plan: TrainingGraph, texts: list):
    joint, parts = plan.joint, plan.parts
    try:
        tangents = [[list(s), spell(d), spell(v)] for s, d, v in joint.tangents]
    except NotCacheable as reason:
        log.info("a training plan not kept on disk: %s", reason)
        return
    aliases = [
        [i, j, None if at is None else [list(at[0]), list(at[1]), at[2]]]
        for i, (j, at) in joint.aliases.items()
    ]
    container = {tuple: "tuple", list: "list", None: None}[joint.container]
    stats["written"] += 1
    write_entry(
        "plans", key,
        {
            "num_primals": joint.num_primals, "num_outputs": joint.num_outputs,
            "differentiable": joint.differentiable, "tangents": tangents,
            "mutated": joint.mutated, "aliases": aliases, "container": container,
            "graphs": texts, "saved": parts.saved, "recomputed": parts.recomputed,
            "tangents_of": [sorted(t) for t in parts.tangents_of],
        },
    )  # fmt: skip
