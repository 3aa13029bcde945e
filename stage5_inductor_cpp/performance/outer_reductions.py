"""Outer reductions: the C++ writer's loops turned round, SIMD over the last outer dim.

A reduction whose loads are contiguous along the last outer dim and not along the
reduction (a 3x3 max-pool of a channels-last image: the window steps by whole pixels,
the channels are next to each other; a column sum) is written the other way round: an
accumulator per element of the last outer dim, and the SIMD loop over that dim, inside
the reduction loops. For a column sum of `x[r0, x0]`:

    float acc[64];                                   // one accumulator per column
    for (x0 ...) acc[x0] = 0;
    for (r0 ...) { for (x0 ...) acc[x0] += x[64*r0 + x0]; }   // x0 innermost: SIMD
    for (x0 ...) out[x0] = acc[x0];

Inductor's C++ backend vectorizes such "outer" reductions the same way
(torch/_inductor/codegen/cpp.py, its `outer_loop_fusion` and tiling).

A kernel may hold several (a channels-last BatchNorm: the mean, then the squared
deviations from it; in its backward, the sums of the gradient and of the gradient times
the input), written as phases: consecutive reductions over the same ranges that do not
read each other share one loop, which reads their common inputs once (a `Phase`); the
pointwise nodes that follow them run in a loop over the last dim after it. A value a
later phase reads is kept in a row of its own (`buf3_row[x1]`).

When the outer loops around it are one iteration (a channels-last BatchNorm's statistics:
a row per channel over the whole image), the reduction loops are shared out among the
threads instead, each folding into its own rows (`split_among_threads`).
"""

import dataclasses
import math

from .. import codegen_cpp as cpp
from ..kernel_writer import Value
from ..scheduler import SchedulerNode
from ..symbolic.sizes import is_symbolic
from . import parallel_loops

# An outer reduction keeps one accumulator per element of the last outer dim, on the stack.
OUTER_REDUCTION_LIMIT = 4096
SIMD = "#pragma omp simd"


@dataclasses.dataclass
class Phase:
    """Reductions that share one loop over their inputs, then the loops of the pointwise
    nodes that follow them."""

    reductions: list[SchedulerNode]
    loops: list[list[SchedulerNode]] = dataclasses.field(default_factory=list)

    @property
    def nodes(self) -> list[SchedulerNode]:
        return [*self.reductions, *(node for loop in self.loops for node in loop)]


def phases(writer) -> list[Phase] | None:
    """The kernel's nodes as phases to write with the last outer loop inside their reduction
    loops, or None: the kernel is written as usual."""
    if writer.n == 0 or not writer.kernel.nodes[0].is_reduction:
        return None
    size = writer.kernel.outer[-1]
    if is_symbolic(size) or size > OUTER_REDUCTION_LIMIT:
        return None  # its accumulators are arrays of that size, on the stack
    found: list[Phase] = []
    for loop in writer.kernel.loops():
        node = loop[0]
        if not node.is_reduction:
            found[-1].loops.append(loop)
        elif not interchangeable(writer, node):
            return None
        elif found and not found[-1].loops and writer.shares_loop(found[-1].reductions, node):
            found[-1].reductions.append(node)
        else:
            found.append(Phase([node]))
    return found


def interchangeable(writer, node: SchedulerNode) -> bool:
    """Whether a reduction's loads along the last outer dim are contiguous along it, and
    not along its reduction. Loads that do not move with the last dim are the same for its
    whole SIMD loop: a layer norm's backward sums the gradient times the normalised input
    over the rows, reading each row's mean and scale beside the columns."""
    data = node.buffer.data
    if data.reduction_type not in cpp.REDUCTIONS or node.name in writer.stashes:
        return False
    last, rs = f"x{writer.n - 1}", [f"r{i}" for i in range(len(data.reduction_ranges))]
    moving = [i for _, i in node.loads(writer.n) if i.coefficient(last) != 0]
    contiguous = all(index.coefficient(last) == 1 for index in moving)
    along_reduction = any(index.coefficient(r) == 1 for index in moving for r in rs)
    return bool(moving) and contiguous and not along_reduction


class RowAccumulator:
    """A reduction's accumulators, one per element of the last outer dim (`acc_buf1[x1]`),
    and the lines that start, update and read them. Split among threads, the loops update
    each thread's own row of partial results (`acc_buf1_part[x1]`), combined at the end. A
    float max or min keeps a row of NaN flags beside it (OpenMP's max ignores NaN)."""

    def __init__(self, writer, node: SchedulerNode, split: bool):
        self.node, self.last, self.size = node, f"x{writer.n - 1}", writer.kernel.outer[-1]
        self.type, self.start, self.update, self.track_nan = writer.accumulator(node)
        self.acc = f"acc_{node.name}"
        self.into = f"{self.acc}_part" if split else self.acc  # what the reduction loops update

    def declare(self, name: str) -> list[str]:
        nan = [f"int {name}_nan[{self.size}];"] if self.track_nan else []
        return [f"{self.type} {name}[{self.size}];", *nan]

    def starts(self, name: str) -> list[str]:
        nan = [f"{name}_nan[{self.last}] = 0;"] if self.track_nan else []
        return [f"{name}[{self.last}] = {self.start};", *nan]

    def fold(self, value) -> list[str]:
        """Fold one value into this element's accumulator (the loops' body)."""
        element = f"{self.into}[{self.last}]"
        nan = [f"{self.into}_nan[{self.last}] |= ({value} != {value});"] if self.track_nan else []
        return [self.update.format(acc=element, v=value, t=self.type), *nan]

    def combine(self) -> list[str]:
        """Fold a thread's partial result into the accumulator."""
        acc, part = f"{self.acc}[{self.last}]", f"{self.into}[{self.last}]"
        nan = [f"{self.acc}_nan[{self.last}] |= {self.into}_nan[{self.last}];"]
        return [self.update.format(acc=acc, v=part, t=self.type), *(nan if self.track_nan else [])]

    def result(self) -> str:
        element = f"{self.acc}[{self.last}]"
        if not self.track_nan:
            return element
        nan = f"std::numeric_limits<{self.type}>::quiet_NaN()"
        return f"{self.acc}_nan[{self.last}] ? {nan} : {element}"


def write(writer, found: list[Phase]) -> list[str]:
    """The body of the kernel's outer loops but the last: each phase in turn."""
    split, lines = split_among_threads(writer), []
    for i, phase in enumerate(found):
        read_later = set().union(*[n.reads() for later in found[i + 1 :] for n in later.nodes])
        lines += write_phase(writer, phase, split, read_later)
    return lines


def write_phase(writer, phase: Phase, split: bool, read_later: set[str]) -> list[str]:
    """One phase: its accumulators started, the reduction loops around a SIMD loop over the
    last outer dim, then a loop over that dim for the results and the pointwise nodes."""
    last, size = f"x{writer.n - 1}", writer.kernel.outer[-1]
    accs = [RowAccumulator(writer, node, split) for node in phase.reductions]
    with writer.block() as body:  # the value each reduction folds, computed once per element
        for acc in accs:
            body += acc.fold(acc.node.call_inner_fn(writer, writer.n))
    ranges = phase.reductions[0].buffer.data.reduction_ranges
    nest = cpp.loop_nest("r", ranges, loop_over(last, size, body, SIMD), "")
    if split:
        nest = among_threads(nest, len(ranges), accs, last, size)
    lines = [line for acc in accs for line in acc.declare(acc.acc)]
    lines += loop_over(last, size, [line for acc in accs for line in acc.starts(acc.acc)], SIMD)
    lines += nest
    return lines + write_results(writer, phase, accs, read_later)


def write_results(writer, phase: Phase, accs: list[RowAccumulator], read_later) -> list[str]:
    """The loop over the last outer dim after a phase's reduction loops: each reduction's
    result, the pointwise loops that read them, and the rows later phases read."""
    last, size = f"x{writer.n - 1}", writer.kernel.outer[-1]
    inner = [n for loop in phase.loops for n in loop if n.inner_ranges(writer.n)]
    rows = [n for n in phase.nodes if n.name in read_later and n not in inner]
    with writer.block() as after:
        for acc in accs:
            writer.define(acc.node, Value(acc.result(), None))
        for loop in phase.loops:
            writer.pointwise_loop(loop, simd=True)
        for node in rows:
            after.append(f"{node.name}_row[{last}] = {writer.scopes[-1][('local', node.name)]};")
    lines = []
    for node in rows:  # declared before the loop; later phases load them there
        dtype = node.buffer.layout.dtype
        lines.append(f"{writer.overrides.ctype(dtype)} {node.name}_row[{size}];")
        writer.scopes[0][("local", node.name)] = Value(f"{node.name}_row[{last}]", dtype)
    return lines + loop_over(last, size, after, "" if inner else SIMD)  # SIMD: no loop inside


def split_among_threads(writer) -> bool:
    """Whether an outer reduction's loops are shared out among the threads: when the outer
    loops around it are one iteration (a channels-last BatchNorm's statistics: a row per
    channel over the whole image), which would otherwise run on one thread."""
    work = parallel_loops.work(writer)
    worth_it = not is_symbolic(work) and work >= parallel_loops.PARALLEL_THRESHOLD
    return worth_it and math.prod(writer.kernel.outer[:-1]) == 1


def among_threads(nest: list[str], depth: int, accs: list[RowAccumulator], last, size):
    """`nest`, the reduction loops (`depth` of them), shared out among the threads, each
    folding into rows of its own. The rows are combined in the threads' order, so a result
    depends on the number of threads but not on which thread finished first. Inductor
    splits such reductions too, with a row of partial results per thread
    (torch/_inductor/codegen/cpp.py, `reduction_prefix` / `parallel_reduction_suffix`)."""
    collapse = f" collapse({depth})" if depth > 1 else ""
    combine = loop_over(last, size, [line for acc in accs for line in acc.combine()], "")
    region = [
        *[line for acc in accs for line in acc.declare(acc.into)],
        *loop_over(last, size, [line for acc in accs for line in acc.starts(acc.into)], SIMD),
        f"#pragma omp for{collapse}",
        *nest,
        "#pragma omp for ordered schedule(static, 1)",
        "for (int thread = 0; thread < omp_get_num_threads(); thread++)",
        "{",
        *cpp.indent(["#pragma omp ordered", *combine]),
        "}",
    ]
    return ["#pragma omp parallel", "{", *cpp.indent(region), "}"]


def loop_over(var: str, size: int, body: list[str], pragma: str) -> list[str]:
    """One `for` loop over `var`, an outer loop's variable, around `body`."""
    header = [pragma] if pragma else []
    loop = f"for (int64_t {var} = 0; {var} < {size}; {var}++)"
    return [*header, loop, "{", *cpp.indent(body), "}"]
