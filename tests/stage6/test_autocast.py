"""Autocast through the Triton kernels, on every device there is: CUDA on the GPU machine
(bfloat16 and float16 against eager, as GPU users run), the CPU under Triton's interpreter.

The programs, tolerances and training steps are stage 5's (tests/stage5/test_autocast.py):
the path is the same (a call under autocast runs the graphs of its ATen trace, whose casts
the kernels fuse), only the kernels' language differs.
"""

import pytest
import torch
from hypothesis import given, settings

from stage6_inductor_triton import compile_fx
from tests.stage5.test_autocast import NETS, check_program, check_training, programs
from tests.stage6.helpers import DEVICES

pytestmark = pytest.mark.usefixtures("fresh_compiles")  # tests/conftest.py


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=8, deadline=None)
@given(program=programs())
def test_random_programs_under_autocast(device, program):
    check_program(program, device, compile_fx)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("name", list(NETS))
def test_training_under_autocast_matches_eager(device, dtype, name):
    """Three SGD steps; float16 with a GradScaler, as torch's recipe has it."""
    check_training(name, dtype, dtype == torch.float16, device=device, backend=compile_fx)
