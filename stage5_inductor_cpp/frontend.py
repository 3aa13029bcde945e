"""`compile(fn)`: stage 4's frontend with this stage's backend, as `torch.compile(fn)`.

Stage 4 finds the graphs (cutting at graph breaks); `compile_fx` turns each into kernels.
"""

import stage4_fx

from .backend import compile_fx


def compile(fn=None, *, fullgraph: bool = False):
    """`stage4_fx.compile(fn, backend=compile_fx)`; also a decorator, with or without arguments."""
    return stage4_fx.compile(fn, backend=compile_fx, fullgraph=fullgraph)
