"""Stage 5 tests compile into a per-session cache directory, shared by the test processes."""

import os

import pytest
import torch

torch.manual_seed(0)  # the module-level example tensors of the tests are the same every run


@pytest.fixture(autouse=True)
def seeded():
    torch.manual_seed(0)


@pytest.fixture(scope="session", autouse=True)
def kernel_cache(tmp_path_factory):
    """An empty cache per test session (xdist workers each get their own)."""
    path = tmp_path_factory.mktemp("minidynamo_cache")
    previous = os.environ.get("MINIDYNAMO_CACHE_DIR")
    os.environ["MINIDYNAMO_CACHE_DIR"] = str(path)
    yield path
    if previous is None:
        del os.environ["MINIDYNAMO_CACHE_DIR"]
    else:
        os.environ["MINIDYNAMO_CACHE_DIR"] = previous
