"""Stage 5's cases about what a caller sees, compiled to Triton: in-place ops computed out of
place, eager's output strides, and constants that must keep their sign (-0.0)."""

import pytest
import torch

from stage6_inductor_triton import compile_fx
from tests.stage5.test_layouts import STRIDES
from tests.stage5.test_mutation import FUNCTIONALIZED
from tests.stage5.test_regressions import NEGATIVE_ZERO, specials
from tests.stage6.helpers import DEVICES, check_lowered, on

pytestmark = pytest.mark.parametrize("device", DEVICES)

x = torch.randn(4, 5)


@pytest.mark.parametrize("name", FUNCTIONALIZED)
def test_in_place_ops_on_intermediates_become_kernels(name, device):
    fn, externs = FUNCTIONALIZED[name]
    check_lowered(fn, x, device=device, externs=externs)


@pytest.mark.parametrize("name", STRIDES)
def test_outputs_have_eagers_strides(name, device):
    fn, args = STRIDES[name]
    check_lowered(fn, *on(device, args), device=device)


@pytest.mark.parametrize("fn", NEGATIVE_ZERO)
def test_negative_zero_constants_keep_their_sign(fn, device):
    check_lowered(fn, specials, device=device)


def test_a_graph_of_factories_alone_runs_its_kernels_on_their_device(device):
    """No input tensor says where the kernels run: the device the factories name does (it
    used to be the CPU, and a CUDA `arange` ran the whole graph in torch)."""

    def fn(n):
        return torch.arange(8, device=device).sin() * n + torch.ones(8, device=device)

    compiled = compile_fx(torch.fx.symbolic_trace(fn), [3])
    result = compiled(3)
    torch.testing.assert_close(result, fn(3))
    assert result.device.type == device
    assert compiled.last.kernel_names and not compiled.torch_reasons
