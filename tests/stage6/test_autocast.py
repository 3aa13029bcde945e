"""Autocast through the Triton kernels, on every device there is: CUDA on the GPU machine
(bfloat16 and float16 against eager, as GPU users run), the CPU under Triton's interpreter.

The programs, tolerances and training steps are stage 5's (tests/stage5/test_autocast.py):
the path is the same (a call under autocast runs the graphs of its ATen trace, whose casts
the kernels fuse), only the kernels' language differs.
"""

import pytest
import torch
from hypothesis import given, note, settings

import stage4_fx
from stage6_inductor_triton import compile_fx
from tests.stage5.helpers import KeepGraphs
from tests.stage5.test_autocast import (
    NETS,
    assert_close_under,
    assert_kernels_ran,
    check_training,
    inputs,
    make_program,
    programs,
    raises_as_eager,
)
from tests.stage6.helpers import DEVICES, on

pytestmark = pytest.mark.usefixtures("fresh_compiles")  # tests/conftest.py


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=8, deadline=None)
@given(program=programs())
def test_random_programs_under_autocast(device, program):
    steps, region, dtype = program
    source, fn = make_program(steps, region, device)
    note(f"autocast {device} {dtype}\n{source}")
    args = on(device, inputs())
    stage4_fx.reset()
    keep = KeepGraphs(compile_fx)
    compiled = stage4_fx.compile(fn, backend=keep, fullgraph=True)
    with torch.autocast(device, dtype=dtype):
        if raises_as_eager(fn, args, keep):
            return
        expected = fn(*args)
        actual = compiled(*args)
    assert actual.dtype == expected.dtype
    assert_close_under(actual, expected, dtype)
    assert_kernels_ran(keep.graphs, kernels=False)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("name", list(NETS))
def test_training_under_autocast_matches_eager(device, dtype, name):
    """Three SGD steps; float16 with a GradScaler, as torch's recipe has it."""
    check_training(name, dtype, dtype == torch.float16, device=device, backend=compile_fx)
