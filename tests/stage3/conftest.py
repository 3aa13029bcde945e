"""Stage 3 tests start from an empty cache, zero counters and the default limit."""

import pytest

import stage2_symbolic_vm
import stage3_guards

from .handmade import handmade_trace


@pytest.fixture(autouse=True)
def fresh_jit():
    limit = stage3_guards.config.recompile_limit
    stage3_guards.reset()
    yield
    stage3_guards.config.recompile_limit = limit
    stage3_guards.reset()


@pytest.fixture
def handmade(monkeypatch):
    """Trace with the handmade traces of handmade.py instead of the symbolic VM."""
    monkeypatch.setattr(stage2_symbolic_vm, "trace", handmade_trace, raising=False)
