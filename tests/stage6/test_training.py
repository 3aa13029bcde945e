"""Stage 6 compiles both graphs of training too (on CPU tensors, under Triton's interpreter)."""

import pytest
import torch
import torch.nn.functional as F

import stage4_fx
from stage6_inductor_triton import compile_fx
from tests.stage6.helpers import DEVICES


def test_forward_and_backward_graphs_are_triton_kernels():
    def fn(x, w, b):
        return F.gelu(x @ w + b).sum(-1)

    x, w, b = torch.randn(8, 4), torch.randn(4, 6), torch.randn(6)
    ours = [t.clone().requires_grad_() for t in (w, b)]
    eager = [t.clone().requires_grad_() for t in (w, b)]
    compiled = compile_fx(torch.fx.symbolic_trace(fn), [x, *ours])
    actual, expected = compiled(x, *ours), fn(x, *eager)
    torch.testing.assert_close(actual, expected)
    actual.sum().backward()
    expected.sum().backward()
    for a, e in zip(ours, eager, strict=True):
        torch.testing.assert_close(a.grad, e.grad)
    assert compiled.torch_reasons == []
    assert all(part.last.kernel_names for part in compiled.parts) and len(compiled.parts) == 2
    assert all("triton" in part.last.source for part in compiled.parts)


@pytest.mark.parametrize("device", DEVICES)
def test_a_training_batch_norm_is_kernels_and_updates_its_statistics(device):
    """Batch norm in training mode becomes our kernels on every device, and the running
    statistics it writes come back as eager leaves them. On the GPU, F.batch_norm calls
    cuDNN's, whose schema writes nothing: traced without the Python dispatcher's
    decompositions, it stayed an extern call that wrote the statistics itself."""
    conv, eager_conv = torch.nn.Conv2d(3, 4, 3).to(device), torch.nn.Conv2d(3, 4, 3).to(device)
    norm, eager_norm = torch.nn.BatchNorm2d(4).to(device), torch.nn.BatchNorm2d(4).to(device)
    eager_conv.load_state_dict(conv.state_dict())
    made = []

    def backend(gm, example_inputs):
        made.append(compile_fx(gm, example_inputs))
        return made[-1]

    compiled = stage4_fx.compile(lambda x: norm(conv(x)).relu(), backend=backend)
    x = torch.randn(2, 3, 8, 8, device=device)
    for _ in range(2):  # the second call reads the statistics the first one wrote
        compiled(x).square().sum().backward()
        eager_norm(eager_conv(x)).relu().square().sum().backward()
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        torch.testing.assert_close(getattr(norm, name), getattr(eager_norm, name))
    torch.testing.assert_close(conv.weight.grad, eager_conv.weight.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(norm.weight.grad, eager_norm.weight.grad, rtol=1e-4, atol=1e-4)
    externs = [name for g in made for part in g.parts for name in part.last.extern_names]
    assert not [name for name in externs if "norm" in name], externs
