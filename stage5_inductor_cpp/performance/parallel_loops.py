"""The C++ kernel's outer loops: shared out among threads when the work is worth it, and the
last one vectorised (SIMD) when the kernel is pointwise.

A kernel loops over its outer ranges around its nodes' inner loops (scheduler.py). OpenMP
runs the outer loops on all cores (`#pragma omp parallel for`, several dims collapsed into
one), but waking its team of threads costs more than a small kernel's work: below
`PARALLEL_THRESHOLD` elements the kernel runs on one thread. With symbolic sizes
(symbolic/sizes.py) the work is known only at the call, and OpenMP's `if` clause decides
then. A pointwise-only kernel has no inner loop, and its last outer loop is the one the
compiler vectorises (`simd`). Inductor's C++ kernels decide alike (torch/_inductor/codegen/
cpp.py, `decide_parallel_depth`).
"""

import math

import torch

from .. import codegen_cpp as cpp
from ..symbolic.sizes import hint, is_symbolic, text

# Below this many elements a kernel runs on one thread: waking the OpenMP team costs more.
PARALLEL_THRESHOLD = 32768


def work(writer):
    """The elements a kernel visits: its outer iterations times its longest inner loop."""
    n = writer.n
    inner = max((math.prod(node.inner_ranges(n)) for node in writer.kernel.nodes), key=hint)
    return math.prod(writer.kernel.outer) * inner


def collapsed_depth(ranges) -> int:
    """How many outer loops with symbolic bounds to share out: the fewest leading ones that
    give each thread 8 iterations, by this call's sizes (inductor's `decide_parallel_depth`
    picks its depth alike). OpenMP's `collapse` recovers each loop's index from the shared
    one by a division per loop and iteration; by a constant the compiler multiplies
    instead, by a symbol it divides, which costs more than a pooling window's work (a 3x3
    max pool of stride 2 ran 2x slower collapsed over four symbolic loops than over two)."""
    threads, total = torch.get_num_threads(), 1
    for depth, size in enumerate(ranges, start=1):
        total *= hint(size)
        if total >= 8 * threads:
            return depth
    return len(ranges)


def outer_loops(writer, outer, body: list[str], simd_last: bool) -> list[str]:
    """The kernel's outer loop nest around `body`: parallel over the first dims when the work
    is worth it (at run time, for symbolic sizes), SIMD on the last if `simd_last`."""
    elements, condition = work(writer), ""
    if is_symbolic(elements):  # sizes.py: OpenMP's `if` decides at each call
        condition = f" if({text(elements)} >= {PARALLEL_THRESHOLD})"
    parallel = (condition or elements >= PARALLEL_THRESHOLD) and math.prod(outer) != 1
    if not outer:
        return body
    n = len(outer)
    lines = ["{", *cpp.indent(body), "}"]
    simd_dims = 1 if simd_last else 0
    for d in reversed(range(n)):
        var = f"x{d}"
        lines = [f"for (int64_t {var} = 0; {var} < {text(outer[d])}; {var}++)", *lines]
        if simd_last and d == n - 1:
            if parallel and n == 1:
                lines.insert(0, f"#pragma omp parallel for simd{condition}")
            else:
                lines.insert(0, "#pragma omp simd")
    n_parallel = n - simd_dims
    if any(map(is_symbolic, outer[:n_parallel])):
        n_parallel = collapsed_depth(outer[:n_parallel])
    if parallel and n_parallel > 0:
        collapse = f" collapse({n_parallel})" if n_parallel > 1 else ""
        lines.insert(0, f"#pragma omp parallel for{collapse}{condition}")
    return lines
