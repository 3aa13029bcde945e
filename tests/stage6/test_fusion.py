"""Fusion carries over: the Triton backend runs stage 5's scheduler, so the kernel counts match."""

import pytest
import torch
import torch.nn.functional as F

from stage6_inductor_triton import compile_fx
from tests.oracle import assert_same_as_eager
from tests.stage5.test_fusion import chain, per_channel_statistics, softmax_of_exp
from tests.stage6.helpers import DEVICES, check_traced

pytestmark = pytest.mark.parametrize("device", DEVICES)


def kernel_names(fn, *args, device):
    return check_traced(fn, *args, device=device).last.kernel_names


def test_pointwise_chain_is_one_kernel(device):
    names = kernel_names(chain, torch.randn(1000), torch.randn(1000), device=device)
    assert names == ["triton_fused_sin_cos_mul_add_sub_relu_0"]


def test_softmax_and_layer_norm_are_one_kernel(device):
    x, w, b = torch.randn(32, 64), torch.randn(64), torch.randn(64)
    assert len(kernel_names(lambda t: torch.softmax(t, -1), x, device=device)) == 1
    assert (
        len(kernel_names(lambda t, w, b: F.layer_norm(t, (64,), w, b), x, w, b, device=device)) == 1
    )


def test_a_persistent_softmax_computes_exp_once_without_a_stash(device):
    # Stage 5's C++ stores exp(x - max) into the output to read it back (its stash.py);
    # a persistent Triton reduction holds the row in registers and shares it as it is.
    compiled = check_traced(softmax_of_exp, torch.randn(16, 32), device=device)
    assert compiled.code.count("tl.exp(") == 1
    assert "tl.load(buf" not in compiled.code


def test_horizontal_fusion_of_independent_outputs(device):
    fn = lambda t: (t.sin(), t.cos(), t.sum(1))  # noqa: E731
    assert len(kernel_names(fn, torch.randn(16, 32), device=device)) == 1


def test_a_pointwise_over_a_reductions_rows_with_dims_of_size_1_joins_its_kernel(device):
    x = torch.randn(2, 8, 5, 5)
    assert len(kernel_names(per_channel_statistics, x, device=device)) == 1


def test_mlp_adds_biases_in_the_gemm_and_fuses_the_activation_between_externs(device):
    x, w, b = torch.randn(8, 16), torch.randn(16, 16), torch.randn(16)
    fn = lambda x, w, b: torch.relu(x @ w + b) @ w + b  # noqa: E731
    assert kernel_names(fn, x, w, b, device=device) == ["triton_fused_relu_1"]


def test_dead_buffers_are_reused(device):
    def fn(x, w):
        h = (x.sin() @ w).cos()
        h = (h @ w).exp()
        return (h @ w).tanh()

    # The matmuls amplify a 1-ulp difference of exp (numpy's, in the interpreter): keep
    # the values small.
    args = torch.randn(32, 32) / 8, torch.randn(32, 32) / 8
    compiled = check_traced(fn, *args, device=device, rtol=1e-4, atol=1e-4)
    assert "# reuse" in compiled.code


def test_works_as_a_torch_compile_backend(device):
    calls = []

    def backend(gm, example_inputs):
        calls.append(compile_fx(gm, example_inputs))
        return calls[-1]

    torch._dynamo.reset()
    fn = lambda a: torch.softmax(a, -1) * 2  # noqa: E731
    x = torch.randn(4, 10, device=device)
    assert_same_as_eager(torch.compile(fn, backend=backend, fullgraph=True), fn, x)
    assert calls[0].last.kernel_names == ["triton_fused_max_sub_exp_sum_truediv_mul_0"]
