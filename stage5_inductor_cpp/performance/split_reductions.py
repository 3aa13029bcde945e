"""Split reductions: a reduction over much into few results, cut in two kernels.

A reduction that covers much and makes few values (a batch norm's sums per channel over
a batch of images; a sum of a whole tensor) is cut in two on the GPU, as inductor's split
reductions are (`Reduction.create`, `num_splits` in torch/_inductor/ir.py): a first kernel
reduces chunks of each row into partial results, a second reduces the partials.
In one pass, each of the few results gets one program and most of the GPU waits. The C++
kernels share such a loop among their threads instead (performance/outer_reductions.py).
A channels-last image's per-channel sums also want many partials: a program then sums
neighbouring channels, side by side in memory, over a short run of pixels (stage 6's
autotune.py tries configurations across rows), where one channel over many pixels loads
4 bytes per row.

A row that lies along memory (a softmax's, a layer norm's) is not split while there are
rows enough for every multiprocessor: a program per row already reads at the copy limit,
and the split would read the input once more per reduction (`inner_reduction_splits` in
torch/_inductor/ir.py: no split from `2 * num_sm` results on).

A rule of the GPU's: `Rules.split_reductions` (rules.py) switches it on, stage 6 for CUDA.
"""

import dataclasses
import math

from ..ir import OpsRecorder, Reduction, index_vars, set_handler
from ..symbolic.sizes import is_symbolic

SPLIT_INTO = 32768  # at most this many partial results in all
SPLIT_MIN_CHUNK = 1024  # each of which still reduces at least this many elements
ROWS_ENOUGH = 256  # rows along memory that keep a GPU busy unsplit (2 x 132 SMs on an H100)
SPLITTABLE = {"sum", "prod", "max", "min", "any", "all"}  # the partials combine the same way


def split_counts(ranges, most: int) -> list[int]:
    """How many even chunks to cut each of the leading reduced dims into, `most` in all: the
    first into a divisor of its size, and only when it is cut into single elements (each
    image of the batch its own chunk) the next, and so on (`Index` is affine: a chunk of
    the flattened dims would need a division)."""
    counts = []
    for size in ranges:
        count = next((c for c in range(min(most, size), 1, -1) if size % c == 0), 1)
        if count < 2:
            break
        counts.append(count)
        most //= count
        if count < size:
            break
    return counts


def reads_along_rows(reduction: Reduction) -> bool:
    """Whether a load walks each row with stride 1 along its last reduced dim (an inner
    reduction, inductor's `ReductionHint.INNER`)."""
    recorder, last = OpsRecorder(), f"r{len(reduction.reduction_ranges) - 1}"
    with set_handler(recorder):
        reduction.inner_fn(
            index_vars("x", len(reduction.ranges)), index_vars("r", len(reduction.reduction_ranges))
        )
    return any(index.coefficient(last) == 1 for _, index in recorder.loads)


def splits(graph, reduction: Reduction) -> list[int]:
    """How `split_reduction` cuts `reduction`'s leading reduced dims (`split_counts`), or
    [] when it keeps it whole: one kernel, each row in one program."""
    xnumel, rnumel = math.prod(reduction.ranges), math.prod(reduction.reduction_ranges)
    if (
        not graph.rules.split_reductions
        or reduction.reduction_type not in SPLITTABLE
        or any(map(is_symbolic, (*reduction.ranges, *reduction.reduction_ranges)))
        or not 0 < xnumel < SPLIT_INTO  # no results (an empty dim): nothing to share out
        or rnumel < 2 * SPLIT_MIN_CHUNK
        or (xnumel >= ROWS_ENOUGH and reads_along_rows(reduction))
    ):
        return []
    return split_counts(
        reduction.reduction_ranges, min(SPLIT_INTO // xnumel, rnumel // SPLIT_MIN_CHUNK)
    )


def split_reduction(graph, reduction: Reduction) -> Reduction:
    """`reduction`, or its second stage: the partial results over chunks of its leading
    reduced dims go to a buffer first, and it reduces those."""
    counts = splits(graph, reduction)
    if not counts:
        return reduction
    k, ranges = len(counts), reduction.reduction_ranges
    chunks = [size // count for size, count in zip(ranges, counts, strict=False)]
    inner_fn, compute = reduction.inner_fn, reduction.src_dtype

    def partial_fn(idx, ridx):  # idx: (chunk numbers..., *outputs); ridx: within the chunks
        starts = [i * chunk + r for i, chunk, r in zip(idx[:k], chunks, ridx[:k], strict=True)]
        return inner_fn(idx[k:], [*starts, *ridx[k:]])

    partial = graph.add_buffer(
        Reduction(
            compute, (*counts, *reduction.ranges), (*chunks, *ranges[k:]),
            reduction.reduction_type, partial_fn, compute,
        )
    )  # fmt: skip
    load = partial.loader()
    return dataclasses.replace(
        reduction,
        reduction_ranges=tuple(counts),
        inner_fn=lambda idx, ridx: load([*ridx, *idx]),
    )
