"""The names torch users type: `optimize`, `nopython`, and backend names that mean ours."""

import importlib.metadata
import logging

import pytest
import torch

import stage4_fx
from stage4_fx import backends
from tests.oracle import assert_same_as_eager
from tests.stage4.functions_table import DynamicModule
from tests.stage4.test_known_answers import counting_backend


def toy_example(a, b):
    x = a / (torch.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


def graph_log(caplog) -> str:
    return " ".join(r.getMessage() for r in caplog.records if r.name == "minidynamo.graph")


# Names resolve to ours first.


def test_eager_and_aot_eager_are_stage_4s():
    assert stage4_fx.lookup_backend("eager") is backends.eager
    assert stage4_fx.lookup_backend("aot_eager") is backends.aot_eager
    assert stage4_fx.lookup_backend("aot_eager") is not torch._dynamo.lookup_backend("aot_eager")


def test_the_inductor_names_are_stages_5_and_6():
    import stage5_inductor_cpp
    import stage6_inductor_triton

    assert stage4_fx.lookup_backend("inductor_cpp") is stage5_inductor_cpp.compile_fx
    assert stage4_fx.lookup_backend("inductor") is stage6_inductor_triton.inductor


def test_inductor_by_name_runs_our_kernels_on_the_cpu(caplog):
    def fn(x, y):
        return (x.sin() + y).relu()

    x, y = torch.randn(8, 4), torch.randn(8, 4)
    with caplog.at_level(logging.INFO, logger="minidynamo"):
        assert_same_as_eager(stage4_fx.compile(fn, backend="inductor"), fn, x, y)
    assert "the backend stage6_inductor_triton.frontend.inductor (ours)" in graph_log(caplog)
    kernels = " ".join(r.getMessage() for r in caplog.records if r.name == "minidynamo.kernels")
    assert "cpp_fused_" in kernels  # stage 5's C++, which stage 6 uses for CPU tensors


def test_a_user_registered_name_comes_before_torchs(monkeypatch):
    monkeypatch.setitem(backends._BACKENDS, "cudagraphs", backends.eager)
    assert stage4_fx.lookup_backend("cudagraphs") is backends.eager


def test_only_a_name_we_do_not_have_reaches_torch(caplog):
    with caplog.at_level(logging.INFO, logger="minidynamo.graph"):
        found = stage4_fx.lookup_backend("aot_eager_default_partitioner")
    assert found is torch._dynamo.lookup_backend("aot_eager_default_partitioner")
    assert "'aot_eager_default_partitioner' is torch." in graph_log(caplog)
    assert "(torch's): minidynamo has none of that name" in graph_log(caplog)


def test_an_inductor_not_registered_is_an_error_not_torchs(monkeypatch):
    monkeypatch.delitem(backends._BACKENDS, "inductor", raising=False)
    monkeypatch.setattr(backends, "_entry_points", dict)
    with pytest.raises(ValueError, match="stage6_inductor_triton's, which has not registered it"):
        stage4_fx.lookup_backend("inductor")


def test_an_inductor_that_does_not_import_says_what_to_do(monkeypatch):
    broken = importlib.metadata.EntryPoint(
        "inductor", "no_such_package_for_a_test:inductor", "minidynamo.backends"
    )
    monkeypatch.delitem(backends._BACKENDS, "inductor", raising=False)
    monkeypatch.setattr(backends, "_entry_points", lambda: {"inductor": broken})
    with pytest.raises(ImportError, match="does not import here") as info:
        stage4_fx.compile(toy_example, backend="inductor")
    assert "Triton" in str(info.value) and "'inductor_cpp'" in str(info.value)


def test_an_unknown_name_is_a_clear_error():
    with pytest.raises(ValueError, match=r"unknown backend 'no_such_backend': ours are \[") as info:
        stage4_fx.optimize("no_such_backend")
    assert "'eager'" in str(info.value) and "register_backend" in str(info.value)
    with pytest.raises(TypeError, match="a name or a callable"):
        stage4_fx.lookup_backend(3)


# list_backends() says where each one comes from.


def test_list_backends_says_where_each_comes_from(monkeypatch):
    monkeypatch.setitem(backends._BACKENDS, "mine", counting_backend()[0])
    listed = stage4_fx.list_backends()
    assert listed["eager"] == "stage4_fx.backends.eager (ours)"
    assert listed["aot_eager"] == "stage4_fx.backends.aot_eager (ours)"
    assert listed["inductor"].startswith("stage6_inductor_triton")
    assert listed["inductor_cpp"].startswith("stage5_inductor_cpp")
    assert listed["inductor"].endswith("(ours)") and listed["inductor_cpp"].endswith("(ours)")
    assert listed["mine"].endswith("counting_backend.<locals>.backend (user's)")
    assert listed["cudagraphs"] == "torch._dynamo's registry (torch's)"
    owners = [where.rsplit("(", 1)[1] for where in listed.values()]
    assert owners == sorted(owners, key=["ours)", "user's)", "torch's)"].index)


def test_origin_of_callables():
    assert backends.origin(torch._dynamo.lookup_backend("eager")).endswith("(torch's)")
    assert backends.origin(backends.eager) == "stage4_fx.backends.eager (ours)"


# The log says which backend compiled each graph.


@pytest.mark.parametrize(
    ("backend", "says"),
    [
        ("eager", "the backend stage4_fx.backends.eager (ours)"),
        (torch._dynamo.lookup_backend("eager"), "torch._dynamo.backends.debugging.eager (torch's)"),
        (counting_backend()[0], "counting_backend.<locals>.backend (user's)"),
    ],
)
def test_the_log_names_the_backend_of_each_graph(caplog, backend, says):
    with caplog.at_level(logging.INFO, logger="minidynamo.graph"):
        stage4_fx.compile(toy_example, backend=backend)(torch.ones(3), -torch.ones(3))
    text = graph_log(caplog)
    assert text.count(says) == 2  # the graph before the break, and the resume function's
    assert "the graph of toy_example goes to" in text


# optimize(backend, nopython=False): the older spelling of compile.


def test_optimize_as_a_decorator():
    backend, graphs = counting_backend()
    opt = stage4_fx.optimize(backend)(toy_example)
    a, b = torch.randn(10), torch.randn(10)
    assert_same_as_eager(opt, toy_example, a, b, captured=lambda: graphs)


def test_optimize_a_module():
    backend, graphs = counting_backend()
    model = stage4_fx.optimize(backend)(DynamicModule())
    assert isinstance(model._orig_mod, DynamicModule)
    for x in (torch.ones(4), -torch.ones(4), torch.ones(4)):
        assert_same_as_eager(model, DynamicModule(), x)
    assert len(graphs) == 3


def test_optimize_as_a_context_manager_compiles_the_frames_of_the_block():
    backend, graphs = counting_backend()
    a, b = torch.randn(10), torch.randn(10)
    with stage4_fx.optimize(backend):
        result = toy_example(a, b)
    torch.testing.assert_close(result, toy_example(a, b))
    assert len(graphs) == 2  # before the branch, and the side that ran
    toy_example(a, b)  # outside the block: not compiled
    assert len(graphs) == 2


def test_optimize_blocks_nest_and_restore_the_outer_one():
    outer, outer_graphs = counting_backend()
    inner, inner_graphs = counting_backend()

    def double(x):
        return x * 2

    def triple(x):
        return x * 3

    with stage4_fx.optimize(outer):
        with stage4_fx.optimize(inner):
            double(torch.ones(2))
        triple(torch.ones(2))
    triple(torch.zeros(3))
    assert [len(inner_graphs), len(outer_graphs)] == [1, 1]
    assert "mul" in inner_graphs[0].code and "3" in outer_graphs[0].code


def test_a_block_that_raises_still_restores_the_hook():
    backend, graphs = counting_backend()
    with pytest.raises(RuntimeError, match="inside"), stage4_fx.optimize(backend):
        raise RuntimeError("inside")
    toy_example(torch.ones(3), torch.ones(3))
    assert graphs == []


def test_nopython_raises_at_a_break_like_fullgraph():
    opt = stage4_fx.optimize("eager", nopython=True)(toy_example)
    with pytest.raises(stage4_fx.GraphBreakError, match="graph break: branch on the value") as info:
        opt(torch.ones(3), torch.ones(3))
    assert info.value.graph_break.kind == "data_dependent_branch"
    assert info.value.graph_break.line == "if b.sum() < 0:"
    with pytest.raises(stage4_fx.GraphBreakError), stage4_fx.optimize("eager", nopython=True):
        toy_example(torch.ones(3), torch.ones(3))


def test_nopython_passes_a_function_without_breaks():
    def fn(x):
        return x.sin() * 2

    backend, graphs = counting_backend()
    opt = stage4_fx.optimize(backend, nopython=True)(fn)
    assert_same_as_eager(opt, fn, torch.randn(5), captured=lambda: graphs)


# aot_eager: torch's AOTAutograd with no compiler, under our name.


def test_aot_eager_gives_eagers_values_and_gradients(caplog):
    def fn(x, w):
        return (x.sin() * w).relu().sum()

    x = torch.randn(6)
    w_eager, w_ours = (torch.randn(6).requires_grad_() for _ in range(2))
    with torch.no_grad():
        w_ours.copy_(w_eager)
    with caplog.at_level(logging.INFO, logger="minidynamo.graph"):
        ours = stage4_fx.compile(fn, backend="aot_eager")(x, w_ours)
    expected = fn(x, w_eager)
    torch.testing.assert_close(ours, expected)
    ours.backward()
    expected.backward()
    torch.testing.assert_close(w_ours.grad, w_eager.grad)
    assert "stage4_fx.backends.aot_eager (ours)" in graph_log(caplog)


def test_aot_eager_keeps_writes_into_inputs():
    def fn(x):
        x.add_(1)
        return x * 2

    assert_same_as_eager(stage4_fx.compile(fn, backend="aot_eager"), fn, torch.randn(4))


def test_aot_eager_runs_a_backward_graph_inside_a_block_unhooked():
    backend, graphs = counting_backend()
    compiled = stage4_fx.compile(lambda x: (x.cos() * x).sum(), backend="aot_eager")
    x = torch.randn(5, requires_grad=True)
    with stage4_fx.optimize(backend):
        compiled(x).backward()  # autograd calls the backward graph inside the block
    torch.testing.assert_close(x.grad, x.detach().cos() - x.detach() * x.detach().sin())
    assert graphs == []  # the generated graphs' frames were not compiled again


def test_stage4_passes_the_mode_to_the_backend_as_torch_does():
    seen = []

    def backend(gm, example_inputs, **kwargs):
        seen.append(kwargs)
        return gm.forward

    x = torch.randn(3)
    stage4_fx.compile(lambda x: x.sin(), backend=backend)(x)
    stage4_fx.compile(lambda x: x.cos(), backend=backend, mode="default")(x)
    stage4_fx.compile(lambda x: x.tan(), backend=backend, mode="reduce-overhead")(x)
    assert seen == [{}, {}, {"mode": "reduce-overhead"}]


def test_a_backend_that_takes_no_mode_is_refused_at_once():
    with pytest.raises(ValueError, match="takes no `mode`"):
        stage4_fx.compile(lambda x: x.sin(), backend="eager", mode="reduce-overhead")
