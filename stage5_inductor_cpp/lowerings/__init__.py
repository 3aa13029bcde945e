"""The breadth of ops: lowerings beyond the core table of lowering.py.

Each module registers its lowerings in `LOWERINGS` when it is imported (graph_lowering.py
imports them all): views as index maps (views.py), composite ops from simple ones
(decompositions.py), windows of images (pooling.py), reads at positions a tensor holds
(gather.py), tensors made from sizes alone (factories.py).
"""

from . import decompositions, factories, gather, pooling, views

__all__ = ["decompositions", "factories", "gather", "pooling", "views"]
