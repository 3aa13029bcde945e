"""The `mm + bias` rewrite (bias_addmm.py) on lowered graphs: what it makes, and when it refuses.

test_fusion.py checks the same rewrite through the whole backend (the wrapper's
`# addmm` lines, and results equal to eager's).
"""

import operator

import torch

from stage5_inductor_cpp.bias_addmm import broadcasts_to
from stage5_inductor_cpp.graph import GraphLowering
from stage5_inductor_cpp.ir import ComputedBuffer, ExternKernel


def lowered(fn, *args) -> GraphLowering:
    return GraphLowering(torch.fx.symbolic_trace(fn), list(args)).run()


def externs(graph) -> list:
    return [b.target for b in graph.buffers if isinstance(b, ExternKernel)]


def test_the_product_becomes_an_addmm_after_its_bias():
    x, w, b = torch.randn(4, 3), torch.randn(3, 5), torch.randn(5)
    graph = lowered(lambda x, w, b: x @ w + b * 2, x, w, b)
    bias, addmm = graph.buffers
    assert isinstance(bias, ComputedBuffer)  # b * 2, computed first
    assert addmm.target is torch.addmm and addmm.name == "buf0"  # the product's own name
    assert [str(a) for a in addmm.args] == [bias.name, "arg0", "arg1"]
    assert str(graph.outputs) == "buf0"


def test_the_bias_may_come_first():
    x, w, b = torch.randn(4, 3), torch.randn(3, 5), torch.randn(4, 1)
    assert externs(lowered(lambda x, w, b: b + torch.mm(x, w), x, w, b)) == [torch.addmm]


def test_other_adds_and_other_ops_are_left_alone():
    x, w, b = torch.randn(4, 3), torch.randn(3, 5), torch.randn(5)
    assert externs(lowered(lambda x, w, b: x @ w - b, x, w, b)) == [operator.matmul]
    assert externs(lowered(lambda x, w, b: (x @ w).add(b, alpha=2), x, w, b)) == [operator.matmul]


def test_a_bias_that_would_grow_the_product_does_not_broadcast_to_it():
    assert broadcasts_to((5,), (4, 5)) and broadcasts_to((4, 1), (4, 5))
    assert not broadcasts_to((2, 4, 5), (4, 5)) and not broadcasts_to((3,), (4, 5))
