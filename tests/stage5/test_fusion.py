"""The scheduler: how many kernels a graph becomes, what stays in registers, what is reused."""

import pytest
import torch
import torch.nn.functional as F

from stage5_inductor_cpp import compile_fx
from stage5_inductor_cpp.graph import GraphLowering
from stage5_inductor_cpp.scheduler import FusedKernel, Scheduler
from tests.stage5.helpers import check_both, check_traced, kernel_logs


def kernels(fn, *args) -> list[str]:
    compiled = compile_fx(torch.fx.symbolic_trace(fn), list(args))
    return (
        compiled.last.kernel_names
        if compiled.last
        else next(iter(compiled.specializations.values())).kernel_names
    )


def chain(a, b):
    return torch.relu(torch.sin(a) * torch.cos(b) + a * 0.5 - b)


def test_pointwise_chain_is_one_kernel():
    a, b = torch.randn(1000), torch.randn(1000)
    assert kernels(chain, a, b) == ["cpp_fused_sin_cos_mul_add_sub_relu_0"]
    check_both(chain, a, b)


@pytest.mark.parametrize("dim", [-1, 0])
def test_softmax_is_at_most_two_kernels(dim):
    x = torch.randn(64, 128)
    assert len(kernels(lambda t: torch.softmax(t, dim), x)) <= 2
    assert len(kernels(lambda t: torch.softmax(t, -1), x)) == 1


def test_layer_norm_is_at_most_two_kernels():
    x, w, b = torch.randn(32, 64), torch.randn(64), torch.randn(64)
    names = kernels(lambda t, w, b: F.layer_norm(t, (64,), w, b), x, w, b)
    assert len(names) <= 2
    check_both(lambda t, w, b: F.layer_norm(t, (64,), w, b), x, w, b)


def test_mlp_fuses_bias_and_activation_between_externs():
    x, w, b = torch.randn(8, 16), torch.randn(16, 16), torch.randn(16)
    fn = lambda x, w, b: torch.relu(x @ w + b) @ w + b  # noqa: E731
    assert len(kernels(fn, x, w, b)) == 2
    check_traced(fn, x, w, b)


def schedule(fn, *args, fuse=True):
    graph = GraphLowering(torch.fx.symbolic_trace(fn), list(args)).run()
    return Scheduler(graph, fuse=fuse)


def test_fusion_cuts_kernels_and_keeps_intermediates_local():
    x = torch.randn(16, 32)
    before = schedule(lambda t: torch.softmax(t, -1), x, fuse=False)
    after = schedule(lambda t: torch.softmax(t, -1), x)
    assert len(before.steps) == 3 and len(after.steps) == 1
    (kernel,) = after.steps
    assert kernel.local == {"buf0", "buf1"}  # max and sum never reach memory


def test_horizontal_fusion_of_independent_outputs():
    x = torch.randn(16, 32)
    steps = schedule(lambda t: (t.sin(), t.cos(), t.sum(1)), x).steps
    assert len(steps) == 1


def test_refused_fusion_is_logged():
    with kernel_logs() as records:
        steps = schedule(lambda t: (t.sum(0), t.sum(1)), torch.randn(16, 32)).steps
    assert len(steps) == 2
    assert any("not fusing buf1" in r and "iteration spaces differ" in r for r in records)


def test_transposed_read_of_a_fused_buffer_is_refused():
    x = torch.randn(16, 16)

    # y is expensive and used twice, so it gets a buffer; y.t() reads it transposed:
    # the same iteration space, but another iteration writes the element it reads.
    def fn(t):
        y = t
        for _ in range(25):
            y = y * 1.01
        return y, y.t() + 1

    with kernel_logs() as records:
        steps = [s for s in schedule(fn, x).steps if isinstance(s, FusedKernel)]
    assert len(steps) == 2
    assert any("which another iteration writes" in r for r in records)
    check_traced(fn, x)


def test_dead_buffers_are_reused():
    x, w = torch.randn(32, 32), torch.randn(32, 32) * 0.1  # keeps each matmul well conditioned

    def fn(x, w):
        h = (x.sin() @ w).cos()
        h = (h @ w).sin()
        h = (h @ w).cos()
        return (h @ w).sin()

    compiled = compile_fx(torch.fx.symbolic_trace(fn), [x, w])
    assert "# reuse" in compiled.code
    check_traced(fn, x, w)


def test_output_code_is_printable_and_names_kernels():
    a, b = torch.randn(100), torch.randn(100)
    code = compile_fx(torch.fx.symbolic_trace(chain), [a, b]).code
    assert "def call(args):" in code
    assert 'extern "C" void cpp_fused_sin_cos_mul_add_sub_relu_0' in code
    assert "#pragma omp" in code
