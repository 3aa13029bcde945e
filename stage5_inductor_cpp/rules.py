"""The rules that differ between devices, as one object a backend passes to the lowering.

The lowering's passes are the same for every device; a few choices are not: what is fast
on a GPU can be slow on a CPU's threads. Each such choice is a field of `Rules`, named
after what it does and read by the pass it belongs to. Stage 5 compiles for the CPU, and
`CPU_RULES` are its rules: every GPU rule off. Stage 6 passes its own `GPU_RULES` for
CUDA graphs, with them on.

A test switches a rule through this object, for every graph it compiles:
`monkeypatch.setattr(rules.CPU_RULES, "split_reductions", True)`; or it passes a
`Rules` of its own to `GraphLowering` or `compile_graph`.
"""

import dataclasses


@dataclasses.dataclass
class Rules:
    """Which device rules the lowering follows (all off: the CPU's)."""

    # A reduction over much into few results is cut in two kernels, so that more programs
    # share the work (performance/split_reductions.py).
    split_reductions: bool = False
    # Products of one input by several weights are one product by the weights stacked,
    # one wide GEMM (performance/sibling_products.py).
    stack_sibling_products: bool = False
    # An image between convolutions that only kernels read is computed again in each of
    # them, as other cheap values are, rather than stored (performance/reuse.py).
    recompute_images: bool = False
    # A graph with few convolutions among many ops keeps eager's layout, where the CPU
    # runs every graph with convolutions channels-last (performance/channels_last.py).
    few_convolutions_keep_eager_layout: bool = False
    # A node joins an earlier kernel across calls into torch, when it reads nothing those
    # calls make (autocast's weight casts: one launch for them all, where the host is the
    # bound). On a CPU a big one stays after the last call before it: its values are still
    # in the cache when the call after it reads them (scheduler.py's `place`).
    fuse_across_library_calls: bool = False
    # A variance over rows that one kernel holds whole (not split) is two passes in float,
    # as CUDA's eager accumulates in float; the CPU's eager accumulates in double, and so
    # does its variance here (lowerings/decompositions.py, `_variance`).
    float_variance_of_rows: bool = False


CPU_RULES = Rules()  # stage 5's
