"""0-dim CPU tensors among a GPU's tensors: eager takes them as numbers, and so do our
kernels, which read a copy on the GPU (like_eager/cpu_scalars.py)."""

import pytest
import torch

from stage6_inductor_triton import compile_fx
from stage6_inductor_triton.like_eager.cpu_scalars import as_caller_sees, cpu_scalars
from tests.oracle import assert_same_as_eager
from tests.stage5.helpers import assert_lowered
from tests.stage6.helpers import compile_traced

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def test_scalars_are_found_only_among_one_other_devices_tensors():
    x, s = torch.randn(3), torch.tensor(2.0)
    assert cpu_scalars([x, s]) == (None, ())  # all on the CPU: nothing to move
    meta = torch.empty(3, device="meta")
    assert cpu_scalars([meta, s, 4, x]) == (torch.device("meta"), (1,))


def test_a_call_on_copies_looks_to_the_caller_as_a_call_on_its_tensors():
    """Written scalars are written back, and outputs that share a copy's memory share the
    caller's tensor's instead (here the copies are on the CPU too: the same logic)."""

    def fn(x, s):
        s.add_(1)
        return x * s, s, s.view(1)

    x, s = torch.randn(3), torch.tensor(2.0)
    out, same, view = as_caller_sees(fn, [x, s], (1,), torch.device("cpu"))
    assert s.item() == 3.0
    torch.testing.assert_close(out, x * 3)
    assert same.data_ptr() == s.data_ptr() and view.data_ptr() == s.data_ptr()
    assert view.shape == (1,)


@cuda
def test_a_cpu_scalar_among_cuda_tensors_runs_the_kernels():
    def fn(x, s):
        return torch.relu(x * s + 1)

    x, s = torch.randn(64, device="cuda"), torch.tensor(0.5)
    run = compile_traced(fn)
    assert_same_as_eager(run, fn, x, s)
    assert_lowered(run.state["compiled"])


@cuda
def test_a_cpu_scalar_the_graph_writes_into_is_written_back():
    def fn(x, s):
        s.mul_(2)
        return x + s, s

    x = torch.randn(8, device="cuda")
    s, expected_s = torch.tensor(1.5), torch.tensor(1.5)
    compiled = compile_fx(torch.fx.symbolic_trace(fn), [x, s.clone()])
    out, alias = compiled(x, s)
    expected, _ = fn(x, expected_s)
    torch.testing.assert_close(out, expected)
    assert s.item() == expected_s.item() and alias.device.type == "cpu"
    assert alias.data_ptr() == s.data_ptr()
