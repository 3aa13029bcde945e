"""The scheduler: group buffers into kernels, and decide which buffers stay in registers.

Every kernel is a parallel loop over `outer` ranges whose body runs its nodes in
order, each node with its own inner loop: a pointwise node over the remaining
dimensions, a reduction over its reduction ranges. Softmax over rows is one kernel:

    for x0 in rows (parallel):  max over r0;  sum over r0;  out[x0, r0] = exp(...) / sum

A node may join a kernel when (torch/_inductor/scheduler.py `can_fuse` decides the same):
  * its outer ranges are the kernel's (a pointwise-only kernel may narrow its outer
    ranges to a prefix, to take a reduction over the rest);
  * every value it reads from the kernel was written in the same outer iteration:
    the load index equals the store index (over equal inner ranges);
  * everything it depends on runs before or in that kernel;
  * a write-back into a graph input (functionalize.py) runs after every read of the
    input's old value, and joins a kernel only if each read there is of the element
    it stores (then the loop loads `x[i]`, computes, and stores `x[i]`): the rules of
    like_eager/in_place.py.
Each refusal is logged with its reason (`MINIDYNAMO_LOGS=kernels`). Buffers that nothing
reads are not scheduled at all (performance/dead_buffers.py).

How a kernel's loops are written is the code generators' business: the C++ writer's
own decisions (which reduction stashes its values in an output, stash.py) are made there.
"""

import collections
import dataclasses
import functools
import math

import torch.utils._pytree as pytree

from stage1_eval_frame.logs import get_logger

from .ir import (
    BufferView,
    ComputedBuffer,
    ExternKernel,
    Index,
    OpsRecorder,
    Reduction,
    index_vars,
    set_handler,
)
from .like_eager import in_place
from .like_eager.functionalize import WriteBack
from .performance import dead_buffers
from .symbolic.sizes import hint

# On a CPU a node of more elements than this stays after the library call before it
# (rules.py's `fuse_across_library_calls`); a smaller one (a batch norm's per-channel
# scale, a bias cast) joins an earlier kernel: read back from memory it costs less than
# a kernel of its own.
CACHE_RESIDENT = 4096

log = get_logger("kernels")


@dataclasses.dataclass(eq=False)
class SchedulerNode:
    """One buffer to compute, with the questions fusion asks about it."""

    buffer: ComputedBuffer

    @property
    def name(self) -> str:
        return self.buffer.name

    @property
    def is_reduction(self) -> bool:
        return isinstance(self.buffer.data, Reduction)

    @functools.cached_property
    def ranges(self) -> tuple[int, ...]:
        """The node's (outer) ranges without the dims of size 1, which loop once: a batch
        norm's mean, of size (1, C, 1, 1), then loops over C as the sum it divides does,
        and joins its kernel (inductor's `simplify_loops` drops them too)."""
        return tuple(size for size in self.buffer.data.ranges if size != 1)

    def inner_ranges(self, n_outer: int) -> tuple[int, ...]:
        data = self.buffer.data
        return data.reduction_ranges if self.is_reduction else self.ranges[n_outer:]

    def loop_vars(self, n_outer: int):
        """Index variables for a kernel with `n_outer` outer dims: x0.. outer, r0.. inner."""
        n_x = len(self.ranges) if self.is_reduction else n_outer
        return index_vars("x", n_x), index_vars("r", len(self.inner_ranges(n_outer)))

    def indices(self, variables: list[Index]) -> list[Index]:
        """The index of each of the buffer's dims, from the variables of the dims that loop."""
        moving = iter(variables)
        return [Index.const(0) if size == 1 else next(moving) for size in self.buffer.data.ranges]

    def call_inner_fn(self, handler, n_outer: int):
        xs, rs = self.loop_vars(n_outer)
        with set_handler(handler):
            if self.is_reduction:
                return self.buffer.data.inner_fn(self.indices(xs), rs)
            return self.buffer.data.inner_fn(self.indices(xs + rs))

    def store_index(self, n_outer: int) -> Index:
        xs, rs = self.loop_vars(n_outer)
        return self.buffer.layout.index(self.indices(xs if self.is_reduction else xs + rs))

    def loads(self, n_outer: int) -> list[tuple[str, Index]]:
        recorder = OpsRecorder()
        self.call_inner_fn(recorder, n_outer)
        return recorder.loads

    @functools.cached_property
    def _reads(self) -> frozenset[str]:
        return frozenset(name for name, _ in self.loads(0))

    def reads(self) -> set[str]:
        return set(self._reads)

    def op_names(self) -> list[str]:
        recorder = OpsRecorder()
        self.call_inner_fn(recorder, 0)
        names = recorder.names + ([self.buffer.data.reduction_type] if self.is_reduction else [])
        return names


@dataclasses.dataclass(eq=False)
class FusedKernel:
    """Nodes sharing one parallel loop over `outer`; `local` buffers never reach memory."""

    outer: tuple[int, ...]
    nodes: list[SchedulerNode]
    name: str = ""
    local: set[str] = dataclasses.field(default_factory=set)
    in_place: dict[str, str] = dataclasses.field(default_factory=dict)  # output -> input

    def loops(self) -> list[list[SchedulerNode]]:
        """Consecutive pointwise nodes with equal inner ranges share one inner loop."""
        loops: list[list[SchedulerNode]] = []
        n = len(self.outer)
        for node in self.nodes:
            previous = loops[-1][-1] if loops else None
            if (
                previous is not None
                and not node.is_reduction
                and not previous.is_reduction
                and previous.inner_ranges(n) == node.inner_ranges(n)
            ):
                loops[-1].append(node)
            else:
                loops.append([node])
        return loops

    def produced(self) -> set[str]:
        return {node.name for node in self.nodes}

    def __str__(self) -> str:
        lines = [f"{self.name}: outer={list(self.outer)}"]
        for node in self.nodes:
            where = "local" if node.name in self.local else "stored"
            lines.append(f"    {node.buffer} [{where}]")
        return "\n".join(lines)


@dataclasses.dataclass(eq=False)
class ExternCall:
    """A step that calls torch (matmul, conv, unknown ops)."""

    buffer: ExternKernel

    @property
    def name(self) -> str:
        return self.buffer.name

    def produced(self) -> set[str]:
        return {self.buffer.name}

    def __str__(self) -> str:
        return f"extern: {self.buffer}"


def step_reads(step) -> set[str]:
    """The buffers a step loads (an extern: its tensor arguments)."""
    if isinstance(step, ExternCall):
        return extern_reads(step.buffer)
    return set().union(*[node.reads() for node in step.nodes])


def extern_reads(buffer: ExternKernel) -> set[str]:
    return {view.buffer.name for view in buffer.inputs()}


def other_element(name, index, writer: SchedulerNode, reader: SchedulerNode, n: int):
    """Why `reader`, loading `name` at `index`, would see an element that `writer` stores in
    another iteration of the kernel (or over other inner ranges), or None."""
    if index != writer.store_index(n):
        return f"reads {name} at {index}, which another iteration writes"
    uses_inner = any(v.startswith("r") for v in index.variables())
    if uses_inner and writer.inner_ranges(n) != reader.inner_ranges(n):
        return f"reads {name} over different inner ranges"
    return None


class Scheduler:
    """Turns a `GraphLowering` into an ordered list of `FusedKernel` and `ExternCall` steps."""

    def __init__(self, graph, fuse: bool = True, prefix: str = "cpp"):
        """`prefix` starts every kernel's name: "cpp" here, "triton" in stage 6."""
        self.graph = graph
        self.steps: list[FusedKernel | ExternCall] = []
        for buffer in dead_buffers.live_buffers(graph):  # what nothing reads is not computed
            if isinstance(buffer, ExternKernel):
                self.steps.append(ExternCall(buffer))
            else:
                node = SchedulerNode(buffer)
                if fuse:
                    self.place(node)
                else:
                    self.steps.append(self.new_kernel(node))
        self.decide_storage()
        for i, step in enumerate(self.steps):
            if isinstance(step, FusedKernel):
                step.name = self.kernel_name(step, i, prefix)

    @staticmethod
    def new_kernel(node: SchedulerNode) -> FusedKernel:
        return FusedKernel(tuple(node.ranges), [node])

    def place(self, node: SchedulerNode):
        """Fuse into the latest kernel that accepts the node, or start a new one."""
        reads = node.reads()
        earliest = max(
            (i for i, step in enumerate(self.steps) if step.produced() & reads), default=-1
        )
        earliest = max(earliest, in_place.last_step_before(self.steps, node))  # a write-back
        rule = self.graph.rules.fuse_across_library_calls  # rules.py says why
        if not rule and hint(math.prod(node.ranges)) > CACHE_RESIDENT:
            earliest = max(earliest, self.last_extern_call())
        for i in range(len(self.steps) - 1, max(earliest, 0) - 1, -1):
            reason = self.refuse(self.steps[i], node)
            if reason is None:
                self.fuse_into(self.steps[i], node)
                return
            log.info("not fusing %s into step %d: %s", node.name, i, reason)
        self.steps.append(self.new_kernel(node))

    def last_extern_call(self) -> int:
        return max((i for i, s in enumerate(self.steps) if isinstance(s, ExternCall)), default=-1)

    def refuse(self, step, node: SchedulerNode) -> str | None:
        """Why `node` cannot join `step`, or None when it can."""
        if isinstance(step, ExternCall):
            return "the step is an extern call into torch"
        outer = self.fused_outer(step, node)
        if outer is None:
            return f"iteration spaces differ: kernel outer {[*step.outer]}, node {[*node.ranges]}"
        if outer != step.outer and not node.reads() & step.produced():
            # A reduction that shares nothing with a pointwise kernel would only cost it its
            # inner loops, and itself the loop order of a column sum (outer_reductions.py).
            return "a reduction of other values would change the kernel's loops"
        biggest = max(hint(math.prod(n.ranges)) for n in [*step.nodes, node])  # sizes.py
        if math.prod(outer) == 1 and biggest > 1:
            return "the fused kernel would have no parallel loop"
        n = len(outer)
        producers = {p.name: p for p in step.nodes}
        for name, index in node.loads(n):
            if name in producers and (why := other_element(name, index, producers[name], node, n)):
                return why
        return in_place.refuse_write_back(step, node, n)  # a write-back: after the old reads

    @staticmethod
    def fused_outer(step: FusedKernel, node: SchedulerNode):
        outer = step.outer
        if node.is_reduction:
            if tuple(node.ranges) == outer:
                return outer
            pointwise_only = not any(n.is_reduction for n in step.nodes)
            if pointwise_only and outer[: len(node.ranges)] == tuple(node.ranges):
                return tuple(node.ranges)
            return None
        return outer if tuple(node.ranges[: len(outer)]) == outer else None

    def fuse_into(self, step: FusedKernel, node: SchedulerNode):
        step.outer = self.fused_outer(step, node)
        step.nodes.append(node)

    def decide_storage(self):
        """A buffer stays in a register unless an output, another step, or another loop reads it."""
        outputs = {
            leaf.buffer.name
            for leaf in pytree.tree_leaves(self.graph.outputs)
            if isinstance(leaf, BufferView)
        }
        readers = collections.defaultdict(set)
        for i, step in enumerate(self.steps):
            for name in step_reads(step):
                readers[name].add(i)
        stored_into = {b.name for b in self.graph.buffers if isinstance(b, WriteBack)}
        for i, step in enumerate(self.steps):
            if not isinstance(step, FusedKernel):
                continue
            for loop in step.loops():
                for producer in loop:
                    in_inner_loop = bool(producer.inner_ranges(len(step.outer)))
                    read_by_other_loop = any(
                        producer.name in node.reads() for node in step.nodes if node not in loop
                    )
                    if producer.name in outputs or readers[producer.name] - {i}:
                        continue
                    if producer.name in stored_into:  # its store is the point, or a later
                        continue  # write-back stores into it (a view of it, in place)
                    if in_inner_loop and not producer.is_reduction and read_by_other_loop:
                        continue
                    step.local.add(producer.name)

    @staticmethod
    def kernel_name(step: FusedKernel, i: int, prefix: str) -> str:
        names = []
        for node in step.nodes:
            for op in node.op_names():
                if op not in names:
                    names.append(op)
        return "_".join([prefix, "fused", *names[:6], str(i)])

    def __str__(self) -> str:
        return "\n".join(str(step) for step in self.steps)
