"""Known answers: the examples everyone knows from torch.compile, and the public API."""

import contextlib
import io
import logging

import pytest
import torch

import stage4_fx
from stage2_symbolic_vm.sources import AttrSource, LocalSource
from stage2_symbolic_vm.trace import Trace
from stage4_fx.fx_graph import build_graph, format_graph, placeholder_name
from tests.oracle import assert_same_as_eager
from tests.stage4.functions_table import DynamicModule


def foo(a, b):
    return torch.add(a, b)


def counting_backend():
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    return backend, graphs


def test_foo_is_one_graph_with_one_op():
    report = stage4_fx.explain(foo)(torch.ones(3), torch.ones(3))
    assert (report.graph_count, report.graph_break_count, report.op_count) == (1, 0, 1)
    assert report.ops_per_graph == [["torch.add"]]
    placeholders = [n.name for n in report.graphs[0].graph.nodes if n.op == "placeholder"]
    assert placeholders == ["l_a_", "l_b_"]


def test_dynamic_module_yields_three_graphs():
    backend, graphs = counting_backend()
    model = stage4_fx.compile(DynamicModule(), backend=backend)
    for x in (torch.ones(4), -torch.ones(4), torch.ones(4) * 2, -torch.ones(4) * 3):
        assert_same_as_eager(model, DynamicModule(), x)
    assert len(graphs) == 3  # before the branch, and one per side; later calls hit the cache


def test_explain_names_the_break_and_its_line():
    report = stage4_fx.explain(DynamicModule())(torch.ones(4))
    assert (report.graph_count, report.graph_break_count) == (2, 1)
    (graph_break,) = report.break_reasons
    assert graph_break.kind == "data_dependent_branch"
    assert graph_break.line == "if x.sum() > 0:"
    assert "torch.where" in graph_break.hint
    assert "Graph Count: 2" in str(report)
    assert any("TENSOR_MATCH" in str(guard) for guard in report.out_guards)


def test_torch_inductor_backend_gives_eagers_result():
    from torch._inductor.compile_fx import compile_fx

    def fn(x, y):
        return (x.sin() + y).relu().sum(dim=0)

    x, y = torch.randn(8, 4), torch.randn(8, 4)
    assert_same_as_eager(stage4_fx.compile(fn, backend=compile_fx), fn, x, y)


def test_register_backend_and_dropout_removing_backend():
    @stage4_fx.register_backend
    def no_dropout(gm, example_inputs):
        for node in list(gm.graph.nodes):
            if node.op == "call_function" and node.target is torch.nn.functional.dropout:
                node.replace_all_uses_with(node.args[0])
                gm.graph.erase_node(node)
        gm.recompile()
        return gm.forward

    assert "no_dropout" in stage4_fx.list_backends() and "eager" in stage4_fx.list_backends()

    def fn(x):
        return torch.nn.functional.dropout(x.relu(), p=0.0, training=False) * 2

    x = torch.randn(5)
    assert_same_as_eager(stage4_fx.compile(fn, backend="no_dropout"), fn, x)


def test_a_failing_backend_is_reported_not_hidden():
    def broken(gm, example_inputs):
        raise ValueError("no kernels today")

    fn = stage4_fx.compile(lambda x: x + 1, backend=broken)
    with pytest.raises(stage4_fx.BackendCompilerFailed, match="no kernels today"):
        fn(torch.ones(2))


def test_decorator_forms():
    @stage4_fx.compile
    def plain(x):
        return x + 1

    @stage4_fx.compile(backend="eager", fullgraph=True)
    def with_arguments(x):
        return x * 2

    x = torch.ones(2)
    assert torch.equal(plain(x), x + 1) and torch.equal(with_arguments(x), x * 2)


def test_fullgraph_raises_at_the_first_break_with_its_line():
    @stage4_fx.compile(fullgraph=True)
    def fn(x):
        y = x + 1
        print("not traceable")
        return y

    with pytest.raises(stage4_fx.GraphBreakError, match=r"untraceable_call|print") as info:
        fn(torch.ones(2))
    assert info.value.graph_break.line == 'print("not traceable")'


def test_module_is_compiled_and_keeps_parameters():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU())
    backend, graphs = counting_backend()
    compiled = stage4_fx.compile(model, backend=backend)
    assert_same_as_eager(compiled, model, torch.randn(2, 3))
    assert len(graphs) == 1
    names = [n.name for n in graphs[0].graph.nodes if n.op == "placeholder"]
    assert len(names) == 3 and any("weight" in name for name in names)  # input, weight, bias


def test_recompiles_on_new_shapes_and_reset_drops_caches():
    backend, graphs = counting_backend()
    fn = stage4_fx.compile(lambda x: x * 2, backend=backend)
    fn(torch.ones(2))
    fn(torch.ones(2))
    fn(torch.ones(3))
    assert len(graphs) == 2
    stage4_fx.reset()
    fn(torch.ones(2))
    assert len(graphs) == 3


def test_functions_called_by_an_eager_frame_are_still_compiled():
    backend, graphs = counting_backend()

    def inner(x):
        return x.cos() + 1

    def outer(x):
        try:
            print("in try")
            return inner(x)
        finally:
            pass

    with contextlib.redirect_stdout(io.StringIO()):
        assert_same_as_eager(stage4_fx.compile(outer, backend=backend), outer, torch.ones(3))
    assert len(graphs) >= 1


def test_logs_print_bytecode_graph_and_breaks():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    loggers = [logging.getLogger(f"minidynamo.{t}") for t in ("bytecode", "graph", "breaks")]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    try:
        stage4_fx.explain(DynamicModule())(torch.ones(4))
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
            logger.setLevel(logging.NOTSET)
    text = stream.getvalue()
    for expected in ("ORIGINAL BYTECODE", "MODIFIED BYTECODE", "RESUME FUNCTION", "placeholder"):
        assert expected in text
    assert "if x.sum() > 0:" in text


def test_hand_built_trace_to_fx():
    trace = Trace(code=None)
    x = trace.add_node("input", None, source=LocalSource("x"))
    w = trace.add_node("input", None, source=AttrSource(LocalSource("self"), "weight"))
    trace.add_node("input", None, source=LocalSource("unused"))
    added = trace.add_node("call_function", torch.add, (x, w))
    total = trace.add_node("call_method", "sum", (added,), {"dim": 0})
    trace.add_node("call_function", torch.sin, (x,))  # dead: nothing needs it
    captured = build_graph(trace, [total, x])
    assert [str(s) for s in captured.sources] == ["L['x']", "L['self'].weight"]
    assert captured.op_count == 2 and captured.outputs == [total]
    assert "l_self_weight" in format_graph(captured.gm)
    out = captured.gm(torch.ones(2, 2), torch.ones(2))
    assert torch.equal(out[0], torch.full((2,), 4.0))
    assert build_graph(trace, [x]) is None  # no op needed: no graph


def test_placeholder_names_follow_dynamo():
    assert placeholder_name(LocalSource("x")) == "l_x_"
    assert placeholder_name(AttrSource(AttrSource(LocalSource("self"), "lin"), "weight")) == (
        "l_self_lin_weight"
    )


def test_result_passes_objects_through_unchanged():
    class Config:
        scale = 3

    def fn(a, config, items):
        return {"out": a * 2, "config": config, "items": items, "n": 1}

    config, items, x = Config(), [1, 2], torch.ones(2)
    backend, graphs = counting_backend()
    result = stage4_fx.compile(fn, backend=backend)(x, config, items)
    assert result["config"] is config and result["items"] is items and result["n"] == 1
    assert torch.equal(result["out"], x * 2) and len(graphs) == 1
