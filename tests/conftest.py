"""Shared pytest set-up: a marker per stage (from the folder) and hypothesis profiles."""

import os
import pathlib

import pytest
from hypothesis import HealthCheck, settings

import stage3_guards

# Strict mode: an internal error of the compiler raises instead of running the frame eagerly
# with a warning, so that no test passes by comparing eager with eager. Subprocesses too.
stage3_guards.config.strict = True
os.environ["MINIDYNAMO_STRICT"] = "1"

settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough",
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def fresh_compiles():
    """Stage 4's compiled code and caches dropped before and after the test, so that each
    test counts its own compiles (a module's `pytestmark` asks for it)."""
    import stage4_fx  # not at the top: the earlier stages' tests run without stage 4

    stage4_fx.reset()
    yield
    stage4_fx.reset()


@pytest.fixture
def fresh_compiles_here_and_in_torch(fresh_compiles):
    """`fresh_compiles`, and torch.compile's caches too: for tests that compare their graph
    and break counts with `torch._dynamo.explain`'s on the same programs."""
    import torch._dynamo

    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def pytest_collection_modifyitems(items):
    """`pytest -m stage3` runs exactly the chapter a reader is on."""
    for item in items:
        folder = pathlib.Path(str(item.fspath)).parent.name
        if folder.startswith("stage") and folder[5:].isdigit():
            item.add_marker(getattr(pytest.mark, folder))
