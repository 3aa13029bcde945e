"""`stage5_inductor_cpp.compile(fn)`: stage 4's frontend with the C++ backend, against eager."""

import pytest
import torch

import stage4_fx
import stage5_inductor_cpp
from stage5_inductor_cpp import frontend
from tests.oracle import assert_same_as_eager


@pytest.fixture
def graphs(monkeypatch):
    """The CompiledGraphs our backend returned while the test ran."""
    compiled = []

    def counting(gm, example_inputs):
        compiled.append(stage5_inductor_cpp.compile_fx(gm, example_inputs))
        return compiled[-1]

    stage4_fx.reset()
    monkeypatch.setattr(frontend, "compile_fx", counting)
    yield compiled
    stage4_fx.reset()


def kernels_ran(graphs):
    return lambda: any(g.last is not None and g.last.kernel_names for g in graphs)


def mlp(x, w, b):
    return torch.relu(x @ w + b).softmax(-1)


def test_as_a_function(graphs):
    args = (torch.randn(8, 16), torch.randn(16, 4), torch.randn(4))
    compiled = stage5_inductor_cpp.compile(mlp)
    assert_same_as_eager(compiled, mlp, *args, captured=kernels_ran(graphs))


def test_as_a_decorator_with_and_without_arguments(graphs):
    def norm(x):
        return (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + 1e-5)

    plain = stage5_inductor_cpp.compile(norm)
    full = stage5_inductor_cpp.compile(fullgraph=True)(norm)
    x = torch.randn(4, 32)
    assert_same_as_eager(plain, norm, x, captured=kernels_ran(graphs))
    assert_same_as_eager(full, norm, x)


def with_a_break(x):
    y = torch.sin(x) * 2
    if y.sum() > 0:  # a branch on a tensor's value: the graph is cut here
        return torch.softmax(y, -1)
    return torch.cos(y) + 1


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_graph_break_compiles_both_sides(graphs, sign):
    x = sign * torch.rand(3, 5) + sign * 0.1
    compiled = stage5_inductor_cpp.compile(with_a_break)
    assert_same_as_eager(compiled, with_a_break, x, captured=kernels_ran(graphs))
    assert len(graphs) >= 2, "the graph before the break and the branch taken"


def test_fullgraph_refuses_a_graph_break(graphs):
    compiled = stage5_inductor_cpp.compile(with_a_break, fullgraph=True)
    with pytest.raises(stage4_fx.GraphBreakError):
        compiled(torch.rand(3, 5))
