"""The breadth of ops: lowerings beyond the core table of lowering.py.

Each module registers its lowerings in `LOWERINGS` when it is imported (graph_lowering.py
imports them all):

    arguments.py       a call's keyword arguments, by position as the lowerings take them
    views.py           views as index maps: permute, reshape, slicing, cat, ...
    pointwise.py       rounding to decimals, bitwise ops on bools, rsub, powers
    copies.py          casts and copies: `to`, `float`, `clone`, `contiguous`
    reductions.py      max and min with their indices, argmax, argmin
    decompositions.py  composite ops from simple ones: softmax, the norms, gelu, ...
    pooling.py         windows over images: max and average pooling, adaptive ones too
    gather.py          reads at positions a tensor holds: embedding, gather, x[idx]
    factories.py       tensors made from sizes alone: zeros, full, arange
"""

from . import copies, decompositions, factories, gather, pointwise, pooling, reductions, views

__all__ = [
    "copies", "decompositions", "factories", "gather", "pointwise", "pooling", "reductions",
    "views",
]  # fmt: skip
