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


def check_traced(fn, *args, device="cpu", **close):
    """compile_fx(symbolic_trace(fn)) on `device` behaves like fn, strides included;
    returns the compiled graph."""
    run = compile_traced(fn)
    captured = stage5_helpers.lowered(run.state)
    expected = assert_same_as_eager(run, fn, *on(device, args), captured=captured, **close)
    if "result" in run.state:
        stage5_helpers.assert_same_strides(run.state["result"], expected)
    return run.state["compiled"]


def check_lowered(fn, *args, device="cpu", externs=(), **close):
    """`check_traced`, and every op but `externs` became a Triton kernel."""
    compiled = check_traced(fn, *args, device=device, **close)
    stage5_helpers.assert_lowered(compiled, externs)
    return compiled
