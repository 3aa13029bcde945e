"""Stage 6 compiles both graphs of training too (on CPU tensors, under Triton's interpreter)."""

import torch
import torch.nn.functional as F

from stage6_inductor_triton import compile_fx


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
