"""The exercises at the end of docs/stage4_fx.md (skipped unless MINIDYNAMO_EXERCISES=1).

MINIDYNAMO_EXERCISES=1 .venv/bin/python -m pytest tests/stage4/test_exercises.py -q
"""

import operator
import os
import sys

import pytest
import torch

import stage4_fx
from tests.oracle import assert_same_as_eager
from tests.stage4 import functions_table
from tests.stage4.functions_table import DynamicModule
from tests.stage4.test_known_answers import counting_backend
from tests.tiny_programs import load_tiny

pytestmark = pytest.mark.skipif(
    os.environ.get("MINIDYNAMO_EXERCISES") != "1",
    reason="exercises: set MINIDYNAMO_EXERCISES=1 to check your solutions",
)


def load_tiny_program():
    """docs/tiny/graph_and_break.py as a module (running it prints its graphs)."""
    return load_tiny("graph_and_break")


def test_live_after():
    """`live_after(ops, at)`: the names that the ops from `at` on read before they make them,
    in the order first read. They are the inputs of the resume function's graph."""
    tiny = load_tiny_program()
    assert tiny.live_after(tiny.TRACE, tiny.BREAK) == ["y", "x"]
    assert tiny.live_after(tiny.TRACE, 1) == ["s", "x"]  # 2 is a constant, not a name
    assert tiny.live_after(tiny.TRACE, 0) == ["x"]
    assert tiny.live_after(tiny.TRACE, len(tiny.TRACE)) == []
    ops = [
        ("a", torch.cos, ["x"]),
        ("b", operator.add, ["a", "a"]),
        ("c", operator.mul, ["b", "x"]),
    ]
    assert tiny.live_after(ops, 1) == ["a", "x"]  # each name once


def test_resume_count():
    report = stage4_fx.explain(DynamicModule())(torch.ones(4))
    assert report.resume_count == 2  # one per side of the branch, both made at the cut
    assert "Resume Functions: 2" in str(report)
    assert stage4_fx.explain(functions_table.add)(torch.ones(3), torch.ones(3)).resume_count == 0


SETTING = "unset"  # a module global the function below drops and sets again


def drops_a_global(x, k):
    global SETTING
    y = x + 1
    del SETTING  # DELETE_GLOBAL, which the VM has no handler for
    SETTING = k
    return y * SETTING


def test_a_function_that_drops_a_global():
    global SETTING
    report = stage4_fx.explain(drops_a_global)(torch.ones(2), 3)
    assert [b.eager_frame for b in report.break_reasons] == [False]  # cut, not the whole frame
    assert report.graph_count == 2  # x + 1, then y * SETTING
    frame = next(f for f in report.frames if f.original is drops_a_global.__code__)
    assert len(frame.resumes) == 1  # from the instruction after `del SETTING`
    stage4_fx.reset()
    compiled = stage4_fx.compile(drops_a_global)
    for k in (3, 4):
        SETTING = "unset"
        assert_same_as_eager(compiled, drops_a_global, torch.ones(2), k)
        assert k == SETTING  # the new code deleted it and the write-back set it


def call_from_here(x, fn):
    return fn(x) + 1


def test_skip_a_module():
    x = torch.ones(3)
    backend, graphs = counting_backend()
    skipped = stage4_fx.compile(functions_table.double, backend=backend, skip=[functions_table])
    assert_same_as_eager(skipped, functions_table.double, x)
    assert graphs == []  # the function asked for lives in a skipped module: it runs as it is

    here = sys.modules[__name__]
    compiled = stage4_fx.compile(call_from_here, backend=backend, skip=[here])
    assert_same_as_eager(compiled, call_from_here, x, functions_table.double)
    assert len(graphs) == 1  # the frame of `double`, called from a skipped frame, is compiled
    assert [n.target.__name__ for n in graphs[0].graph.nodes if n.op == "call_function"] == ["mul"]


def test_suppress_errors():
    calls = []

    def broken(gm, example_inputs):
        calls.append(gm)
        raise RuntimeError("this backend compiles nothing")

    def fn(x):
        return x.sin() + 1

    with pytest.raises(stage4_fx.BackendCompilerFailed):
        stage4_fx.compile(fn, backend=broken)(torch.ones(3))
    calls.clear()
    forgiving = stage4_fx.compile(fn, backend=broken, suppress_errors=True)
    assert_same_as_eager(forgiving, fn, torch.ones(3), captured=lambda: len(calls) == 1)
    cut = functions_table.add_then_print  # a graph break: the backend fails on its first graph
    forgiving = stage4_fx.compile(cut, backend=broken, suppress_errors=True)
    assert_same_as_eager(forgiving, cut, torch.ones(3))


def test_default_partition():
    from stage4_fx.training.aot import TrainingGraph, partition, trace_joint

    def layer(x, w):
        return (x @ w).relu().sin().sum()

    x, w = torch.randn(64, 32), torch.randn(32, 16, requires_grad=True)
    joint = trace_joint(torch.fx.symbolic_trace(layer), [x, w], {}, training=True)
    parts = partition(joint, recompute=False)
    assert parts.saved == ["primals_1", "relu"]  # what the forward computes anyway
    assert parts.recomputed == []
    assert "relu" not in [n.name for n in parts.backward.graph.nodes if n.op == "call_function"]
    assert partition(joint).saved == ["primals_1", "mm"]  # the default is still ours
    loss = TrainingGraph(joint, parts, lambda gm, args: gm.forward)([x, w])
    (grad,) = torch.autograd.grad(loss, w)
    torch.testing.assert_close(loss, layer(x, w))
    torch.testing.assert_close(grad, torch.autograd.grad(layer(x, w), w)[0])
