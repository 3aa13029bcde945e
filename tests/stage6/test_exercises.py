"""The exercises of docs/stage6_inductor_triton.md, easiest first (skipped unless asked for).

MINIDYNAMO_EXERCISES=1 .venv/bin/python -m pytest tests/stage6/test_exercises.py -q
"""

import os
import re

import pytest
import torch

from tests.stage5.test_lowering import specials
from tests.stage6.helpers import DEVICES, check_lowered, check_traced
from tests.tiny_programs import load_tiny

pytestmark = pytest.mark.skipif(
    os.environ.get("MINIDYNAMO_EXERCISES") != "1",
    reason="exercises: set MINIDYNAMO_EXERCISES=1 to check your solutions",
)
on_every_device = pytest.mark.parametrize("device", DEVICES)


def load_tiny_program(monkeypatch):
    """docs/tiny/triton_kernel.py as a module. It sets TRITON_INTERPRET=1 for its kernel;
    monkeypatch takes the variable back afterwards, so that later kernels stay compiled."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    return load_tiny("triton_kernel")


def test_tiny_kernel_adds_a_bias_per_column(monkeypatch):
    """`fused(x, bias)` is relu(sin(x) * 2 + bias), `bias` broadcast over the rows of `x`.
    37 x 33 elements: five programs of 256, the last one partly masked."""
    tiny = load_tiny_program(monkeypatch)
    x, bias = torch.randn(37, 33), torch.randn(33)
    torch.testing.assert_close(tiny.fused(x, bias), torch.relu(torch.sin(x) * 2 + bias))


@on_every_device
def test_sign(device):
    for args in (torch.randn(6, 8), specials, torch.randint(-3, 4, (5, 7))):  # NaN's sign is 0
        assert check_lowered(torch.sign, args, device=device).last.kernel_names


@on_every_device
def test_a_recording_per_size(device, monkeypatch):
    import stage4_fx
    from stage6_inductor_triton import compile_fx
    from stage6_inductor_triton.performance.cudagraphs import Recording

    replays = []
    replay = Recording.replay
    monkeypatch.setattr(
        Recording, "replay", lambda self, args: replays.append(1) or replay(self, args)
    )
    made = []

    def backend(gm, example_inputs, mode):
        made.append(compile_fx(gm, example_inputs, mode=mode))
        return made[-1]

    backend.modes = ("default", "reduce-overhead")

    def fn(x):
        return x.sin() * 2

    compiled = stage4_fx.compile(fn, backend=backend, mode="reduce-overhead", dynamic=True)
    for rows in (4, 5, 9) * 3:
        x = torch.randn(rows, 8, device=device)
        torch.testing.assert_close(compiled(x), fn(x))
    (graph,) = made
    assert graph.symbolic is not None, graph.per_size_reason  # one code for every size
    assert graph.cudagraph_reasons == []
    assert len(replays) == 6  # per size: the first call runs as it is, the next two replay


LONG_ROWS = {  # rows longer than PERSISTENT_RBLOCK_MAX: only the looped kernel is written
    "sum": lambda a: a.sum(1),
    "amax_nan": lambda a: torch.where(a > 2.5, float("nan"), a).amax(1),
    "argmin_nan": lambda a: torch.where(a > 2.5, float("nan"), a).argmin(1),
    "softmax": lambda a: torch.softmax(a, -1),
}


@on_every_device
@pytest.mark.parametrize("name", LONG_ROWS)
def test_looped_reduction_folds_each_block(name, device):
    # Whole numbers: every order of additions gives the same float32 sum, so the test checks
    # the kernel and not its rounding (which the exercise asks about: on random floats whose
    # sum cancels to near 0, the variant often differs from eager beyond the tolerance).
    rows = torch.randint(-8, 8, (2, 9000)).float()
    compiled = check_traced(LONG_ROWS[name], rows, device=device)
    shapes = re.findall(r"(acc_\w+) = tl\.full\(\[XBLOCK, (\w+)\]", compiled.code)
    assert shapes, f"no looped reduction in:\n{compiled.code}"
    assert all(width == "1" for _, width in shapes), f"accumulators {shapes}: expected [XBLOCK, 1]"
