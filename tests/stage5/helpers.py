"""Compile a function both ways the backend is used: a symbolic_trace graph, and torch.compile."""

import contextlib
import logging

import torch

from stage1_eval_frame import logs
from stage5_inductor_cpp import compile_fx
from tests.oracle import assert_same_as_eager


def as_python_function(fn, n_args):
    """symbolic_trace needs a Python function with named parameters: torch.sin gets one."""
    names = ", ".join(f"a{i}" for i in range(n_args))
    namespace = {"fn": fn}
    exec(f"def wrapper({names}):\n    return fn({names})", namespace)
    return namespace["wrapper"]


def compile_traced(fn, backend=compile_fx):
    """`fn` compiled on first call with the call's arguments (so compile errors compare too)."""
    state = {}

    def run(*args):
        gm = torch.fx.symbolic_trace(as_python_function(fn, len(args)))
        state["compiled"] = backend(gm, list(args))
        return state["compiled"](*args)

    run.state = state
    return run


def lowered(state):
    def check():
        compiled = state.get("compiled")
        return (
            compiled is not None
            and compiled.last is not None
            and "def call" in compiled.last.wrapper_source
        )

    return check


def check_traced(fn, *args, **close):
    """compile_fx(symbolic_trace(fn)) behaves like fn; returns the CompiledGraph."""
    run = compile_traced(fn)
    assert_same_as_eager(run, fn, *args, captured=lowered(run.state), **close)
    return run.state.get("compiled")


def check_torch_compile(fn, *args, **close):
    """torch.compile(fn, backend=compile_fx) behaves like fn, and our backend was called."""
    calls = []

    def backend(gm, example_inputs):
        calls.append(gm)
        return compile_fx(gm, example_inputs)

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=backend, fullgraph=True)
    assert_same_as_eager(compiled, fn, *args, captured=lambda: bool(calls), **close)


def check_both(fn, *args, **close):
    check_torch_compile(fn, *args, **close)
    return check_traced(fn, *args, **close)


@contextlib.contextmanager
def kernel_logs():
    """The messages of the `kernels` log topic, collected while the block runs."""
    records = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())
    logger = logs.get_logger("kernels")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield records
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
