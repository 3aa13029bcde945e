"""compile_fx as a backend: specialisation, graphs run by torch, logs."""

import torch

from stage5_inductor_cpp import CompiledGraph, compile_fx
from stage5_inductor_cpp.backend import compile_graph, load_cpp, write_cpp
from tests.oracle import assert_same_as_eager
from tests.stage5.helpers import check_torch_compile, kernel_logs


def test_new_shapes_compile_a_new_specialisation():
    compiled = compile_fx(torch.fx.symbolic_trace(lambda a: a.sin() + 1), [torch.randn(4)])
    for shape in [(4,), (7,), (2, 3)]:
        x = torch.randn(shape)
        torch.testing.assert_close(compiled(x), x.sin() + 1)
    x = torch.randn(6, 4).t()  # new strides
    torch.testing.assert_close(compiled(x), x.sin() + 1)
    assert len(compiled.specializations) == 4


def test_torch_compile_with_dynamic_shapes():
    torch._dynamo.reset()
    fn = torch.compile(lambda a: (a * 2).softmax(-1), backend=compile_fx)
    for n in [3, 5, 9]:
        x = torch.randn(n, 4)
        torch.testing.assert_close(fn(x), (x * 2).softmax(-1))


def test_graphs_that_mutate_run_in_torch():
    def fn(a):
        a.add_(1)
        return a * 2

    compiled = compile_fx(torch.fx.symbolic_trace(fn), [torch.randn(3)])
    assert_same_as_eager(compiled, fn, torch.randn(3))
    assert compiled.specializations == {}


def test_autograd_inputs_run_in_torch():
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
