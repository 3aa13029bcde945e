"""A value read by several nodes: stored once into a buffer, or computed again by each reader.

Pointwise values are inlined into their readers (lowering.py): a chain of ops becomes one
expression. A value read twice is then computed twice, which is cheaper than a round trip
through memory while the value is cheap; past a threshold it is stored once (`realize`)
and every later reader loads it (`Values`, the node loop's map), as inductor's
`should_realize_on_reuse` and `realize_reads_threshold` decide (torch/_inductor/ir.py
and config.py).

Images between convolutions (a graph stored channels-last, channels_last.py) are stored
too, except where `Rules.recompute_images` (a GPU rule, rules.py) computes them again in
readers that are all kernels. On the CPU a store and a reload cost less than computing
an image again in a reduction loop that selects (a ReLU's gradient).
"""

import torch.fx

from ..ir import Pointwise, loads_of
from ..like_eager.layouts import eager_stride
from ..lowering import LOWERINGS

# A value used more than once is computed once into a buffer when it is this expensive;
# below it, recomputing in each consumer is cheaper than a round trip through memory.
REUSE_COST = 20
# ... or when it reads more buffers than this (inductor's `realize_reads_threshold`): a
# residual stream's gradient, a sum over every block after it, would otherwise be read
# again, term by term, by each of its readers.
REUSE_READS = 4
# A value this expensive is stored even with one reader: its expression would grow past
# what a compiler and a reader of the kernel handle well.
MAX_INLINE_COST = 200


class Values(dict):
    """The node loop's node -> value, where a value already stored in a buffer (`realize`)
    reads as that buffer: inductor's `realize()` turns a TensorBox into a StorageBox that
    all its later readers load, instead of each recomputing the value (a transformer's
    layer norm feeds the Q, K and V products and the residual add: one store, four reads)."""

    def __init__(self, stored: dict):
        super().__init__()
        self.stored = stored

    def __getitem__(self, node):
        value = super().__getitem__(node)
        return self.stored.get(id(value), (None, value))[1]


def maybe_realize(graph, node, value, users: int):
    """A value read by several nodes and dear to compute goes to memory (in eager's layout;
    an image of a graph with convolutions, channels-last, computed in memory order)."""
    if not isinstance(value, Pointwise):
        return value
    image = graph.channels_last and len(value.ranges) == 4
    if value.cost > MAX_INLINE_COST or (users > 1 and stored_once(graph, node, value, image)):
        if image:
            return graph.realize_preferred(value)
        return graph.realize(value, eager_stride(value, graph.meta.snapshots.get(node)))
    return value


def stored_once(graph, node, value: Pointwise, image: bool) -> bool:
    """Whether a value read by several nodes is stored once rather than computed again in
    each: when it is dear (ops, or buffers read), or when it is an image between
    convolutions that a reader needs in memory (a block's output, read by the next
    convolution and the residual add). Without `Rules.recompute_images` (the CPU) every
    such image is stored."""
    if value.cost > REUSE_COST or len({name for name, _ in loads_of(value)}) > REUSE_READS:
        return True
    return image and (not graph.rules.recompute_images or read_stored(node))


def read_stored(node: torch.fx.Node) -> bool:
    """Whether a reader of `node` needs it in memory: a call into torch (an op or method
    without a lowering, a module) or the graph's output. Readers that are all kernels
    compute a cheap image again, as inductor inlines a pointwise value into each of its
    readers unless it is dear (`should_realize_on_reuse`): a training graph's batch-norm
    backward then reads its inputs twice, not a stored copy of each of its terms."""
    lowered = ("call_function", "call_method")  # (a method's lowering is under its name)
    return any(user.op not in lowered or user.target not in LOWERINGS for user in node.users)
