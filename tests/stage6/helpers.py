"""Run stage 5's test cases through the Triton backend, on every device there is.

"cpu" runs the kernels under Triton's interpreter (always, in CI); "cuda" compiles
them for the GPU when one is present.
"""

import torch
import torch.utils._pytree as pytree

from stage6_inductor_triton import compile_fx
from tests.oracle import assert_same_as_eager
from tests.stage5 import helpers as stage5_helpers

DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]


def on(device, args):
    return pytree.tree_map(lambda a: a.to(device) if isinstance(a, torch.Tensor) else a, args)


def compile_traced(fn):
    """Stage 5's `compile_traced`, with this stage's backend."""
    return stage5_helpers.compile_traced(fn, backend=compile_fx)


def generated_kernels(state) -> bool:
    compiled = state.get("compiled")
    return (
        compiled is not None
        and compiled.last is not None
        and "def call" in compiled.last.wrapper_source
    )


def check_traced(fn, *args, device="cpu", **close):
    """compile_fx(symbolic_trace(fn)) on `device` behaves like fn; returns the compiled graph."""
    run = compile_traced(fn)
    assert_same_as_eager(
        run, fn, *on(device, args), captured=lambda: generated_kernels(run.state), **close
    )
    return run.state["compiled"]
