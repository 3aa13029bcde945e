"""Autocast through the Triton kernels, on every device there is: CUDA on the GPU machine
(bfloat16 and float16 against eager, as GPU users run), the CPU under Triton's interpreter.

The programs, tolerances and training steps are stage 5's (tests/stage5/test_autocast.py):
the path is the same (a call under autocast runs the graphs of its ATen trace, whose casts
the kernels fuse), only the kernels' language differs.
"""

import pytest
import torch
from hypothesis import given, settings

import stage4_fx
from stage6_inductor_triton import compile_fx
from tests.oracle import assert_same_as_eager
from tests.stage5.helpers import KeepGraphs
from tests.stage5.test_autocast import (
    NETS,
    attention_with_a_traced_mask,
    check_program,
    check_training,
    programs,
)
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


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the GPU's attention kernels")
@pytest.mark.parametrize("autocast", [True, False], ids=["bf16-autocast", "float32"])
def test_a_mask_broadcast_along_the_keys_gets_a_fused_attention_on_the_gpu(autocast):
    """Hugging Face's traced BERT mask (stride 0 along the keys) sent torch's choice to the
    math path, float32 scores and two products (stage5_inductor_cpp/performance/
    attention_masks.py). Copied, it gets a fused kernel: in the ATen trace of autocast no
    product is left but the attention's own. Lowered (float32), the attention is one call
    of ours, which copies the mask when it runs. Queries that see no key are zeros, as the
    math path (eager's, for this mask) has them; the fused kernels alone gave them values."""
    q = torch.randn(2, 4, 64, 64, device="cuda")
    keep = torch.arange(64, device="cuda") % 3 > 0  # queries 0, 3, 6, ... see nothing
    graphs = KeepGraphs(compile_fx)
    compiled = stage4_fx.compile(attention_with_a_traced_mask, backend=graphs)
    amp = torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast)
    with amp:
        assert_same_as_eager(compiled, attention_with_a_traced_mask, q, keep, atol=1e-2, rtol=1e-2)
    (graph,) = graphs.graphs
    externs = [n for part in (graph.parts or [graph]) for n in part.last.extern_names]
    assert not [n for n in externs if "bmm" in n or "softmax" in n], externs
    assert len([n for n in externs if "attention" in n]) == 1, externs
