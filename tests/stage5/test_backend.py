"""compile_fx as a backend: specialisation, graphs run by torch, logs."""

import pytest
import torch

import stage3_guards
import stage4_fx
from stage5_inductor_cpp import CompiledGraph, compile_fx
from stage5_inductor_cpp.backend import SameArguments, compile_graph, load_cpp, write_cpp
from stage5_inductor_cpp.lowering import LOWERINGS
from stage5_inductor_cpp.robustness.lowering_bugs import LoweringError
from tests.oracle import assert_same_as_eager
from tests.stage5.helpers import check_torch_compile, compile_traced, kernel_logs


def test_new_shapes_compile_a_new_specialisation():
    compiled = compile_fx(torch.fx.symbolic_trace(lambda a: a.sin() + 1), [torch.randn(4)])
    for shape in [(4,), (7,), (2, 3)]:
        x = torch.randn(shape)
        torch.testing.assert_close(compiled(x), x.sin() + 1)
    x = torch.randn(6, 4).t()  # new strides
    torch.testing.assert_close(compiled(x), x.sin() + 1)
    assert len(compiled.specializations) == 4


def test_same_arguments_checks_what_the_key_holds():
    x = torch.randn(4, 3)
    same = SameArguments([x, 2, None], code=None)
    assert same([torch.randn(4, 3), 2, None])
    differ = [
        [torch.randn(3, 4), 2, None],  # sizes
        [torch.randn(3, 4).t(), 2, None],  # strides
        [torch.randn(4, 3, dtype=torch.float64), 2, None],
        [torch.randn(4, 3, requires_grad=True), 2, None],
        [torch.randn(4, 3), 3, None],  # an integer's value
        [torch.randn(4, 3), 2.0, None],  # ... and type
        [torch.randn(4, 3), 2],  # the count
        [torch.randn(4, 3), torch.tensor(2), None],
    ]
    assert not any(same(args) for args in differ)


def test_the_last_specialisation_is_found_again_after_another():
    compiled = compile_fx(torch.fx.symbolic_trace(lambda a, n: a * n), [torch.randn(4), 2])
    for args in [
        (torch.randn(4), 2),
        (torch.randn(5), 2),
        (torch.randn(4), 3),
        (torch.randn(4), 2),
    ]:
        torch.testing.assert_close(compiled(*args), args[0] * args[1])
    assert len(compiled.specializations) == 3


def test_torch_compile_with_dynamic_shapes():
    torch._dynamo.reset()
    fn = torch.compile(lambda a: (a * 2).softmax(-1), backend=compile_fx)
    for n in [3, 5, 9]:
        x = torch.randn(n, 4)
        torch.testing.assert_close(fn(x), (x * 2).softmax(-1))


def test_autograd_inputs_run_a_forward_and_a_backward_graph():
    fn = lambda a: (a.sin() * 2).sum()  # noqa: E731
    x = torch.randn(3, requires_grad=True)
    compiled = compile_fx(torch.fx.symbolic_trace(fn), [x])
    compiled(x).backward()
    torch.testing.assert_close(x.grad, 2 * x.detach().cos())


def test_module_with_parameters():
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.LayerNorm(16))
    x = torch.randn(4, 8)
    with torch.no_grad():
        compiled = compile_fx(torch.fx.symbolic_trace(model), [x])
        torch.testing.assert_close(compiled(x), model(x))
        check_torch_compile(model, x)


def test_kernels_log_prints_ir_and_code():
    with kernel_logs() as records:
        compile_fx(torch.fx.symbolic_trace(lambda a: a.softmax(-1) * 3), [torch.randn(4, 4)])
    text = "\n".join(records)
    assert "IR before fusion" in text and "IR after fusion" in text and 'extern "C"' in text


def test_another_code_writer_plugs_into_compile_graph():
    """Stage 6's seam: a `CompiledGraph` subclass passes its own writer, loader and prefix."""
    written = []

    def write(kernels, dtypes):
        written.extend(kernel.name for kernel in kernels)
        return write_cpp(kernels, dtypes)

    class Recording(CompiledGraph):
        def compile_graph(self, gm, args):
            return compile_graph(gm, args, write, load_cpp, prefix="recorded")

    def fn(a):
        return a.sin() + 1

    x = torch.randn(8)
    compiled = Recording(torch.fx.symbolic_trace(fn), [x])
    torch.testing.assert_close(compiled(x), fn(x))
    assert written == compiled.last.kernel_names == ["recorded_fused_sin_add_0"]


def test_each_reason_to_run_in_torch_is_logged_once_and_kept():
    def fn(a, b):
        return a.add_(b.sin())

    x, y = torch.randn(3), torch.randn(3)
    with kernel_logs() as records:
        compiled = compile_fx(torch.fx.symbolic_trace(fn), [x, y])
        for _ in range(3):
            z = torch.randn(3)
            expected = z.clone().add_(z.clone().sin())
            torch.testing.assert_close(compiled(z, z), expected)  # one tensor, read and written
    reason = "an input the graph writes into shares memory with another input"
    assert compiled.torch_reasons == [reason]
    assert sum(reason in r for r in records) == 1
    a, b = torch.randn(3), torch.randn(3)
    torch.testing.assert_close(compiled(a.clone(), b), a + b.sin())  # kernels, still
    assert compiled.last.kernel_names


def test_a_graph_torch_must_run_says_why_in_its_code():
    compiled = compile_fx(torch.fx.symbolic_trace(lambda a: a.t_()), [torch.randn(3, 2)])
    assert compiled.code == (
        "# the graph runs in torch: t_ changes the sizes or strides of a, "
        "whose memory the caller or other tensors see"
    )


@pytest.fixture
def broken_sin(monkeypatch):
    """A lowering of `torch.sin` with a bug: it raises where torch does not."""

    def sin(graph, out, x):
        raise TypeError("a bug")

    monkeypatch.setitem(LOWERINGS, torch.sin, sin)


def test_a_lowering_that_raises_where_torch_does_not_is_a_bug(broken_sin, monkeypatch):
    fn = lambda a: torch.sin(a) + 1  # noqa: E731
    x = torch.randn(3)
    with pytest.raises(LoweringError, match="a bug"):  # strict mode: the tests' mode
        compile_fx(torch.fx.symbolic_trace(fn), [x])
    monkeypatch.setattr(stage3_guards.config, "strict", False)
    with kernel_logs() as records:
        compiled = compile_fx(torch.fx.symbolic_trace(fn), [x])
    torch.testing.assert_close(compiled(x), fn(x))
    assert compiled.last.extern_names == ("sin",)  # torch computes it
    assert any("a bug of minidynamo" in r for r in records)


def test_a_lowering_that_raises_where_torch_raises_is_eagers_error(broken_sin):
    fn = lambda a: torch.sin(a, 1)  # noqa: E731  (torch.sin takes one tensor)
    assert_same_as_eager(compile_traced(fn), fn, torch.randn(3))


def matmul_relu(a, b):
    return (a @ b).relu() + 1


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_graph_called_under_autocast_runs_the_kernels_of_its_aten_trace(dtype):
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    compiled = compile_fx(torch.fx.symbolic_trace(matmul_relu), [a, b])
    with torch.autocast("cpu", dtype=dtype):
        result, expected = compiled(a, b), matmul_relu(a, b)
    assert result.dtype == expected.dtype == dtype
    torch.testing.assert_close(result, expected)
    assert compiled.torch_reasons == []
    (forward,) = compiled.parts  # autocast's casts are kernels: float32 in, `dtype` out
    assert forward.last.kernel_names and forward.last.extern_names == ("mm",)
    assert str(dtype).removeprefix("torch.") in forward.last.source
    torch.testing.assert_close(compiled(a, b), matmul_relu(a, b))  # outside: float32 again
    assert compiled(a, b).dtype == torch.float32


def test_a_graph_compiled_under_autocast_runs_its_casts_under_it():
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        compiled = compile_fx(torch.fx.symbolic_trace(matmul_relu), [a, b])
        assert compiled.specializations == {}  # compiled at its first call, traced to ATen
        torch.testing.assert_close(compiled(a, b), matmul_relu(a, b))
        check_torch_compile(matmul_relu, a, b)
    torch.testing.assert_close(compiled(a, b), matmul_relu(a, b))
    assert compiled.last.kernel_names and not compiled.torch_reasons


def test_a_graph_with_symbolic_sizes_compiles_at_its_first_call_and_never_runs_in_torch():
    backend_graphs = []

    def backend(gm, example_inputs):
        backend_graphs.append(compile_fx(gm, example_inputs))
        return backend_graphs[-1]

    fn = stage4_fx.compile(lambda a: (a * 2).softmax(-1), backend=backend)
    for n in [3, 5, 9]:
        x = torch.randn(n, 4)
        torch.testing.assert_close(fn(x), (x * 2).softmax(-1))
    symbolic = backend_graphs[-1]  # the second graph: its rows are a symbol
    assert any(n.op == "placeholder" and "s" in n.name for n in symbolic.gm.graph.nodes)
    assert symbolic.torch_reasons == [] and len(symbolic.specializations) == 2
