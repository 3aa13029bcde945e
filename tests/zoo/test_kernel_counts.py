"""How many kernels, and calls into torch, the C++ inductor makes of each zoo model.

A fusion lost shows nowhere else: the answer stays eager's, and the time moves within a
benchmark's noise on a small model. A rule for one model once split the Llama-style
model's RMS norms from their sums (64 kernels instead of 55 at the benchmark's size) and
every other test passed. So each model, tiny, under `no_grad`, in float32 and under CPU
bfloat16 autocast, may make at most the kernels and extern calls below. When a change
makes fewer, lower the numbers here with it: the table is a record of decisions.

The counts depend on torch's decompositions and on the models' code, so they are checked
only with the versions they were taken with (the CPU machine's; the GPU machine skips).
"""

import contextlib

import pytest
import torch

import stage4_fx
from benchmarks.bench_models import kernel_summary, our_backend
from benchmarks.zoo import ZOO

TAKEN_WITH = ("2.13.0+cpu", "5.23.0")  # torch, transformers

# (model, under autocast?): (kernels, extern calls), all graphs together
COUNTS = {
    ("resnet18", False): (27, 21),
    ("resnet50", False): (62, 54),
    ("transformer_encoder_layer", False): (0, 1),
    ("nanogpt_block", False): (4, 5),
    ("nanogpt_block_handwritten", False): (6, 6),
    ("bert", False): (9, 19),
    ("gpt2", False): (10, 13),
    ("vit", False): (9, 16),
    ("llama", False): (13, 18),
    ("resnet18", True): (37, 21),
    ("resnet50", True): (94, 54),
    ("transformer_encoder_layer", True): (0, 1),
    ("nanogpt_block", True): (7, 10),
    ("nanogpt_block_handwritten", True): (11, 10),
    ("bert", True): (12, 21),
    ("gpt2", True): (20, 24),
    ("vit", True): (14, 18),
    ("llama", True): (17, 21),
}


def versions() -> tuple[str, str]:
    transformers = pytest.importorskip("transformers")
    return torch.__version__, transformers.__version__


@pytest.mark.parametrize(("name", "autocast"), COUNTS, ids=lambda v: str(v))
def test_no_more_kernels_than_recorded(name, autocast):
    if versions() != TAKEN_WITH:
        pytest.skip(f"counts taken with torch and transformers {TAKEN_WITH}, not {versions()}")
    model, args = ZOO[name]("tiny")
    backend, made = our_backend(torch.device("cpu"))
    compiled = stage4_fx.compile(model, backend=backend)
    bf16 = torch.autocast("cpu", dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
    with torch.no_grad(), bf16:
        compiled(*args)
    summary = kernel_summary(made)
    assert not summary["in_torch"]
    kernels, externs = COUNTS[name, autocast]
    found = f"{summary['kernels']} kernels and {summary['externs']} externs"
    assert summary["kernels"] <= kernels, f"{found}, recorded {kernels} and {externs}"
    assert summary["externs"] <= externs, f"{found}, recorded {kernels} and {externs}"
