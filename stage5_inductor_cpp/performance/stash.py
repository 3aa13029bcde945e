"""The C++ writer's stash: a reduction loop stores a costly value where a later loop reads it.

Softmax's last loop computes exp(x - max) again, the value its sum loop folded. Rather
than compute it twice, the sum loop stores it into the output, and the last loop only
scales the output in place:

    for r0: { e = exp(x[r0] - max); out[r0] = e; sum += e; }   // read back by out's loop
    for r0: { out[r0] = out[r0] / sum; }

Inductor does this by realizing exp(x - max) as a buffer and shrinking it to one row
per thread (torch/_inductor/codegen/cpp.py, `try_outer_loop_fusion_with_local_buf`);
storing into the output row needs no buffer of its own. It is a decision of the C++
writer (`CppKernel` asks `stashes` for its kernel), not of the scheduler: stage 6's
persistent Triton reductions keep a whole row in registers, where the common value is
computed once anyway.
"""

import re

from stage1_eval_frame.logs import get_logger

from ..ir import Printer
from ..like_eager import bfloat16
from ..like_eager.functionalize import WriteBack
from ..scheduler import FusedKernel, SchedulerNode

log = get_logger("kernels")

# Ops that cost more than a store and a load: a reduction's values are stashed only if
# they call one. Inductor keeps a value read twice on CPU in a buffer for the same ops
# (torch/_inductor/ir.py, `should_realize_on_reuse`). Without one, as in
# `y = x * x + 1; y / y.sum()`, computing a value again costs no more than reading it back.
HEAVY_OPS = frozenset({"exp", "log", "log1p", "log2", "sigmoid", "tanh"})


def stashes(kernel: FusedKernel) -> dict[str, str]:
    """Reduction -> the buffer its loop stores each value into: the first later output of
    the kernel that computes the value again and can hold it."""
    chosen: dict[str, str] = {}
    for i, node in enumerate(kernel.nodes):
        if worth_stashing(node, len(kernel.outer)):
            stash_in_a_consumer(kernel, node, kernel.nodes[i + 1 :], chosen)
    return chosen


def worth_stashing(node: SchedulerNode, n_outer: int) -> bool:
    """A reduction with a loop, over values that call a heavy op."""
    if not node.is_reduction or not node.inner_ranges(n_outer):
        return False
    return not HEAVY_OPS.isdisjoint(node.op_names())


def stash_in_a_consumer(kernel: FusedKernel, reduction: SchedulerNode, later, chosen: dict):
    n = len(kernel.outer)
    value = expressions(reduction, n)[-1]
    for consumer in later:
        if consumer.is_reduction or value not in expressions(consumer, n):
            continue
        reason = refuse_stash(kernel, reduction, consumer, chosen)
        if reason is None:
            chosen[reduction.name] = consumer.name
            log.info("%s stashes its values in %s", reduction.name, consumer.name)
            return
        log.info("%s's values not stashed in %s: %s", reduction.name, consumer.name, reason)


def refuse_stash(kernel: FusedKernel, reduction: SchedulerNode, consumer: SchedulerNode, chosen):
    """Why `consumer`'s buffer cannot hold `reduction`'s values until its loop, or None."""
    n = len(kernel.outer)
    if consumer.name in kernel.local:
        return "it stays in registers, there is no buffer to store into"
    if isinstance(consumer.buffer, WriteBack) or consumer.name in kernel.in_place:
        return "its memory is an input's, whose old values may still be read"
    if consumer.inner_ranges(n) != reduction.inner_ranges(n):
        return "its loop runs over other inner ranges"
    value_dtype, dtype = reduction.buffer.data.src_dtype, consumer.buffer.layout.dtype
    if value_dtype != dtype:
        return f"the value is {value_dtype}, the buffer {dtype}"
    if consumer.name in chosen.values():
        return "it already holds another reduction's values"
    return None


def expressions(node: SchedulerNode, n_outer: int) -> list[str]:
    """The text of every value the node computes (its result last): equal text, equal value."""
    recorder = Recorder(Printer())
    node.call_inner_fn(recorder, n_outer)
    return recorder.values


class Recorder:
    """A handler that runs another one and keeps every value it returns, in order."""

    def __init__(self, handler):
        self.handler = handler
        self.values: list = []

    def __getattr__(self, name):
        method = getattr(self.handler, name)

        def record(*args):
            self.values.append(method(*args))
            return self.values[-1]

        return record


# --- the C++ writer's side: store the value, read it back --------------------------------


def store(writer, node: SchedulerNode, value, body: list[str]):
    """Store a reduction loop's value into the buffer `stashes` chose for it (`writer` is a
    `CppKernel`): that buffer's loop loads it back instead of computing it again."""
    target = next(n for n in writer.kernel.nodes if n.name == writer.stashes[node.name])
    place = f"{target.name}[{target.store_index(writer.n)}]"
    writer.args[target.name] = "out"
    dtype = writer.dtypes[target.name]  # in memory as bfloat16 keeps it (like_eager/bfloat16.py)
    body.append(f"{place} = {bfloat16.stored(dtype, value)};  // read back by {target.name}'s loop")
    writer.stashed[target.name] = (value.key, bfloat16.loaded(dtype, place))


def without_unused_temporaries(lines: list[str]) -> list[str]:
    """Drop the temporaries nothing reads: those a value read back from a stash replaced."""
    kept, used = [], set()
    for line in reversed(lines):
        defined = re.match(r"\w+ (tmp\d+) = ", line)
        if defined and defined[1] not in used:
            continue
        used.update(re.findall(r"\btmp\d+\b", line))
        kept.append(line)
    return kept[::-1]
