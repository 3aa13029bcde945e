"""Every zoo test starts from empty caches and the same seed, and leaves the caches empty."""

import pytest
import torch

import stage4_fx


@pytest.fixture(autouse=True)
def fresh():
    stage4_fx.reset()
    torch.manual_seed(0)
    yield
    stage4_fx.reset()
