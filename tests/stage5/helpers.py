"""Compile a function both ways the backend is used: a symbolic_trace graph, and torch.compile.

`check_traced` compares with eager through the oracle, and the outputs' strides too
(`assert_same_strides`); `check_lowered` also asserts that the ops became our kernels
(`assert_lowered`): a correct result alone does not prove it, since an op without a
lowering becomes a correct call into torch.
"""

import contextlib
import logging

import torch
import torch.utils._pytree as pytree

from stage1_eval_frame import logs
from stage5_inductor_cpp import compile_fx
from tests.oracle import assert_same_as_eager, significant_strides


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
        state["result"] = state["compiled"](*args)
        return state["result"]

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


def assert_same_strides(actual, expected):
    """Every tensor of `actual` is laid out as its counterpart in `expected` (eager's)."""
    for ours, eager in zip(pytree.tree_leaves(actual), pytree.tree_leaves(expected), strict=True):
        if isinstance(eager, torch.Tensor):
            assert significant_strides(ours) == significant_strides(eager), (
                f"strides {ours.stride()} where eager's are {eager.stride()} (size {eager.shape})"
            )


def assert_lowered(compiled, externs=()):
    """The graph ran as our kernels: never in torch, and no op but `externs` called torch."""
    assert not compiled.torch_reasons, f"the graph ran in torch: {compiled.torch_reasons}"
    assert compiled.last is not None, "nothing was compiled"
    called = [name for name in compiled.last.extern_names if name not in externs]
    assert not called, f"these ops became calls into torch, not kernels: {called}"


def assert_program_compiled(run, expected):
    """After the oracle passed on a random program (programs.py): its outputs have eager's
    strides, and it ran as kernels, unless an in-place step wrote into memory that others
    see (an input's, through a view), which torch must run."""
    assert_same_strides(run.state["result"], expected)
    reasons = run.state["compiled"].torch_reasons
    assert reasons or lowered(run.state)(), "nothing was compiled"
    assert all(" writes into " in reason for reason in reasons), f"ran in torch: {reasons}"


def check_traced(fn, *args, **close):
    """compile_fx(symbolic_trace(fn)) behaves like fn, strides included; returns the
    CompiledGraph."""
    run = compile_traced(fn)
    expected = assert_same_as_eager(run, fn, *args, captured=lowered(run.state), **close)
    if "result" in run.state:
        assert_same_strides(run.state["result"], expected)
    return run.state.get("compiled")


def check_lowered(fn, *args, externs=(), **close):
    """`check_traced`, and every op but `externs` became a kernel."""
    compiled = check_traced(fn, *args, **close)
    assert_lowered(compiled, externs)
    return compiled


def torch_compile_with_ours(fn):
    """`torch.compile(fn, backend=compile_fx, fullgraph=True)`, and the list of the
    CompiledGraphs our backend makes for it."""
    calls = []

    def backend(gm, example_inputs):
        calls.append(compile_fx(gm, example_inputs))
        return calls[-1]

    torch._dynamo.reset()
    return torch.compile(fn, backend=backend, fullgraph=True), calls


def check_torch_compile(fn, *args, **close):
    """torch.compile(fn, backend=compile_fx) behaves like fn, and our backend was called;
    returns the CompiledGraphs."""
    compiled, calls = torch_compile_with_ours(fn)
    assert_same_as_eager(compiled, fn, *args, captured=lambda: bool(calls), **close)
    return calls


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


class KeepGraphs:
    """A backend for the frontend (`stage4_fx.compile(fn, backend=KeepGraphs())`) that compiles
    with `compile` (stage 5's by default) and keeps each compiled graph, to ask it what it
    compiled (`.symbolic`, `.specializations`)."""

    def __init__(self, compile=compile_fx):
        self.compile, self.graphs = compile, []

    def __call__(self, gm, example_inputs):
        self.graphs.append(self.compile(gm, example_inputs))
        return self.graphs[-1]
