"""The whole JIT through the stage-1 hook: properties against eager, on handmade traces.

These tests trace with the handmade traces of handmade.py, so they check stage 3
alone; test_jit_vm.py runs the same laws through the real symbolic VM.
"""

import logging

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import stage3_guards
from stage3_guards import config, counters, jit
from tests.oracle import assert_same_as_eager

from . import handmade
from .handmade import add, make_shift, scale, total, weighted

pytestmark = pytest.mark.usefixtures("handmade")

dtypes = st.sampled_from([torch.float32, torch.float64, torch.int32])
shapes = st.lists(st.integers(1, 3), min_size=1, max_size=2).map(tuple)


def tensor(shape, dtype):
    return (torch.arange(torch.Size(shape).numel()) % 5).to(dtype).reshape(shape)


def compiled_once():
    return counters.compiled >= 1


@given(shapes, dtypes)
def test_equal_inputs_never_recompile(shape, dtype):
    stage3_guards.reset()
    f = jit(add)
    x, y = tensor(shape, dtype), tensor(shape, dtype)
    for _ in range(3):
        assert_same_as_eager(f, add, x, y, captured=compiled_once)
    assert (counters.compiled, counters.recompiles, counters.cache_hits) == (1, 0, 2)


@given(shapes, dtypes, shapes, dtypes)
def test_a_new_dtype_or_shape_recompiles(shape, dtype, new_shape, new_dtype):
    stage3_guards.reset()
    f = jit(add)
    assert_same_as_eager(f, add, tensor(shape, dtype), tensor(shape, dtype))
    x = tensor(new_shape, new_dtype)
    assert_same_as_eager(f, add, x, x, captured=compiled_once)
    changed = (shape, dtype) != (new_shape, new_dtype)
    assert counters.recompiles == changed
    assert counters.compiled == 1 + changed


@given(st.integers(-3, 3), st.integers(-3, 3), st.integers(), st.integers())
def test_a_used_scalar_recompiles_an_unused_argument_does_not(n, new_n, unused, new_unused):
    stage3_guards.reset()
    f = jit(scale)
    x = torch.arange(4.0)
    assert_same_as_eager(f, scale, x, n, unused)
    assert_same_as_eager(f, scale, x, new_n, new_unused, captured=compiled_once)
    assert counters.recompiles == (n != new_n)


def test_bool_and_float_are_not_mistaken_for_int():
    f = jit(scale)
    x = torch.arange(4.0)
    for n in (1, True, 1.0, 1):
        assert_same_as_eager(f, scale, x, n, None)
    assert counters.compiled == 3
    assert f.cache.recompile_reasons == [
        "value of local 'n' changed: expected 1, got True",
        "value of local 'n' changed: expected True, got 1.0",
    ]  # the last call, 1 again, hits the first entry


def test_a_changed_global_recompiles(monkeypatch):
    f = jit(scale)
    x = torch.arange(4.0)
    assert_same_as_eager(f, scale, x, 2, None)
    monkeypatch.setattr(handmade, "SCALE", 3.0)
    assert_same_as_eager(f, scale, x, 2, None)
    assert f.cache.recompile_reasons == ["value of global 'SCALE' changed: expected 2.0, got 3.0"]


def test_a_global_tensor_is_read_on_every_call(monkeypatch):
    """Same metadata, new values: no recompile, and the result uses the new tensor."""
    f = jit(weighted)
    x = torch.arange(8.0)
    assert_same_as_eager(f, weighted, x)
    monkeypatch.setattr(handmade, "WEIGHT", torch.full((8,), 3.0))
    assert_same_as_eager(f, weighted, x)
    assert (counters.compiled, counters.cache_hits) == (1, 1)
    monkeypatch.setattr(handmade, "WEIGHT", torch.ones(2))
    assert_same_as_eager(f, weighted, x)
    assert f.cache.recompile_reasons[-1] == "size of global 'WEIGHT' changed: expected 8, got 2"


@given(st.booleans(), st.booleans())
def test_grad_mode_recompiles(first, second):
    stage3_guards.reset()
    f = jit(add)
    x = torch.ones(3, requires_grad=True)
    with torch.set_grad_enabled(first):
        assert f(x, x).requires_grad == first
    with torch.set_grad_enabled(second):
        assert f(x, x).requires_grad == second
    assert counters.recompiles == (first != second)
    if first != second:
        was, now = ("enabled", "disabled") if first else ("disabled", "enabled")
        assert f.cache.recompile_reasons == [f"grad mode changed: expected {was}, got {now}"]


def test_closures_share_code_but_read_their_own_cells():
    one, two = make_shift(torch.ones(3)), make_shift(torch.full((3,), 2.0))
    f_one, f_two = jit(one), jit(two)
    x = torch.zeros(3)
    assert_same_as_eager(f_one, one, x)
    assert_same_as_eager(f_two, two, x)
    assert (counters.compiled, counters.cache_hits) == (1, 1)  # one entry serves both


@given(st.integers(1, 4), st.integers(1, 4))
def test_list_length_recompiles(n, new_n):
    stage3_guards.reset()
    f = jit(total)
    assert_same_as_eager(f, total, [torch.ones(2)] * n)
    assert_same_as_eager(f, total, [torch.ones(2)] * new_n)
    assert counters.recompiles == (n != new_n)
    if n != new_n:
        assert f.cache.recompile_reasons == [
            f"length of local 'xs' changed: expected {n}, got {new_n}"
        ]


@given(st.integers(1, 6), st.lists(st.integers(1, 9), min_size=1, max_size=12))
def test_the_recompile_limit_is_honoured(limit, sizes):
    stage3_guards.reset()
    config.recompile_limit = limit
    f = jit(add)
    for n in sizes:
        x = torch.ones(n)
        assert_same_as_eager(f, add, x, x)
    assert counters.compiled == min(limit, len(set(sizes)))
    assert len(f.cache.entries) <= limit


def test_the_limit_warning_is_logged_once(caplog):
    config.recompile_limit = 2
    f = jit(add)
    with caplog.at_level(logging.WARNING, logger="minidynamo.recompiles"):
        for n in range(1, 6):
            f(torch.ones(n), torch.ones(n))
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.startswith(f"add ({add.__code__.co_filename}:")
    assert "hit the recompile limit (2); it runs eagerly from now on." in warning


def test_an_uncapturable_function_runs_eagerly():
    def branchy(x):  # no handmade trace: the stand-in VM says Unsupported
        return x + 1

    f = jit(branchy)
    assert_same_as_eager(f, branchy, torch.ones(2))
    assert counters.eager == 1 and counters.compiled == 0


def test_the_user_error_is_the_eager_one():
    f = jit(add)
    with pytest.raises(RuntimeError, match="size of tensor a"):
        f(torch.ones(2), torch.ones(3))


def test_calls_inside_other_code_are_compiled_and_methods_work():
    class Model(torch.nn.Module):
        def forward(self, x, y):
            return add(x, y)

    f = jit(add)

    def outer(x):
        return f(x, x) * 2

    assert_same_as_eager(outer, lambda x: (x + x) * 2, torch.ones(2))
    assert counters.compiled == 1
    with pytest.raises(TypeError, match="jit\\(\\) takes a Python function"):
        jit(len)


def test_reset_forgets_entries_but_keeps_functions_jitted():
    f = jit(add)
    f(torch.ones(2), torch.ones(2))
    stage3_guards.reset()
    assert f.cache.entries == [] and counters.compiled == 0
    f(torch.ones(2), torch.ones(2))
    assert counters.compiled == 1
