"""The whole JIT with the real symbolic VM: the laws of stage 3 on real functions, against eager."""

import logging

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import stage3_guards
from stage1_eval_frame import skip_marks
from stage3_guards import config, counters, jit
from stage3_guards.jit import _callback
from tests.oracle import assert_same_as_eager

OFFSET = 1.5
TABLE = torch.arange(4.0)


def mlp(x, w, b, n, unused):
    for _ in range(n):
        x = torch.tanh(x @ w + b)
    return x.sum(dim=-1), x.shape[0]


def with_globals(x):
    return x * OFFSET + TABLE


def fresh(x):
    return x + torch.ones(x.shape)  # torch.ones reads the default dtype


def branchy(x):
    if x.sum() > 0:  # on a tensor's value: the VM cannot capture this
        return x
    return -x


def signature(a, *rest, scale=2, **options):
    return a * scale + sum(rest), options.get("shift", 0)


def captured():
    return counters.compiled >= 1


dtypes = st.sampled_from([torch.float32, torch.float64])
sizes = st.integers(1, 4)


@given(sizes, sizes, dtypes, st.integers(0, 3), st.integers())
def test_equal_inputs_never_recompile(rows, cols, dtype, n, unused):
    stage3_guards.reset()
    f = jit(mlp)
    args = (torch.randn(rows, cols, dtype=dtype), torch.randn(cols, cols, dtype=dtype),
            torch.randn(cols, dtype=dtype), n, unused)  # fmt: skip
    for _ in range(3):
        assert_same_as_eager(f, mlp, *args, captured=captured)
    assert (counters.compiled, counters.recompiles, counters.cache_hits) == (1, 0, 2)


@given(sizes, dtypes, sizes, dtypes, st.integers(0, 2), st.integers(0, 2), st.text(max_size=2))
def test_what_the_trace_used_recompiles_and_nothing_else(rows, dtype, rows2, dtype2, n, n2, unused):
    stage3_guards.reset()
    f = jit(mlp)
    w, b = torch.randn(3, 3), torch.randn(3)
    assert_same_as_eager(f, mlp, torch.randn(rows, 3, dtype=dtype), w.to(dtype), b.to(dtype), n, 0)
    x2 = torch.randn(rows2, 3, dtype=dtype2)
    assert_same_as_eager(f, mlp, x2, w.to(dtype2), b.to(dtype2), n2, unused, captured=captured)
    changed = (rows, dtype, n) != (rows2, dtype2, n2)
    assert counters.recompiles == changed


def test_recompile_reasons_are_exact():
    f = jit(mlp)
    w, b = torch.randn(3, 3), torch.randn(3)
    f(torch.randn(2, 3), w, b, 1, None)
    f(torch.randn(5, 3), w, b, 1, None)
    f(torch.randn(5, 3), w, b, 2, None)
    f(torch.randn(5, 3).double(), w.double(), b.double(), 2, None)
    assert f.cache.recompile_reasons == [
        "size of local 'x' changed: expected (2, 3), got (5, 3); dim 0 of local 'x' is now dynamic",
        "value of local 'n' changed: expected 1, got 2; local 'n' is now dynamic",
        "dtype of local 'x' changed: expected float32, got float64",
    ]


def test_a_global_the_trace_read(monkeypatch):
    f = jit(with_globals)
    x = torch.randn(4)
    assert_same_as_eager(f, with_globals, x, captured=captured)
    monkeypatch.setitem(globals(), "TABLE", torch.full((4,), 7.0))  # same metadata
    assert_same_as_eager(f, with_globals, x)
    assert counters.recompiles == 0
    monkeypatch.setitem(globals(), "OFFSET", 2.5)  # a Python scalar the trace baked in
    assert_same_as_eager(f, with_globals, x)
    assert f.cache.recompile_reasons == ["value of global 'OFFSET' changed: expected 1.5, got 2.5"]


@given(st.booleans(), st.booleans())
def test_grad_mode(first, second):
    stage3_guards.reset()
    f = jit(with_globals)
    x = torch.randn(4, requires_grad=True)
    with torch.set_grad_enabled(first):
        assert f(x).requires_grad == first
    with torch.set_grad_enabled(second):
        assert f(x).requires_grad == second
    assert counters.recompiles == (first != second)


def test_default_dtype():
    f = jit(fresh)
    x = torch.randn(3, dtype=torch.float64)
    assert_same_as_eager(f, fresh, x, captured=captured)
    torch.set_default_dtype(torch.float64)
    try:
        assert_same_as_eager(f, fresh, x)
    finally:
        torch.set_default_dtype(torch.float32)
    assert f.cache.recompile_reasons == ["default dtype changed: expected float32, got float64"]


def test_an_uncapturable_function_runs_eagerly(caplog):
    f = jit(branchy)
    with caplog.at_level(logging.INFO, logger="minidynamo.frames"):
        for sign in (1, -1, 1):
            assert_same_as_eager(f, branchy, torch.full((3,), float(sign)))
    # Asked once: the frame is marked in C, and its later calls never reach the cache.
    assert (counters.frames, counters.compiled, counters.eager) == (1, 0, 1)
    assert skip_marks(branchy.__code__) == [_callback]
    assert f.cache.eager_reason.startswith("cannot be captured whole: ")
    assert sum("runs eagerly from now on" in r.getMessage() for r in caplog.records) == 1


def test_reset_clears_the_marks_and_the_frame_is_tried_again():
    f = jit(branchy)
    f(torch.ones(3))
    assert skip_marks(branchy.__code__) == [_callback]
    stage3_guards.reset()
    assert skip_marks(branchy.__code__) == []
    f(torch.ones(3))
    assert (counters.frames, counters.eager) == (1, 1)  # traced again after the reset


def helper(x):
    return x * 2


def calls_helper(x):
    if x.sum() > 0:  # runs eagerly: helper's frame is met as a frame of its own
        return helper(x)
    return x


def test_a_function_met_before_it_was_jitted_is_compiled_once_jitted():
    outer = jit(calls_helper)
    outer(torch.ones(2))
    assert skip_marks(helper.__code__) == [_callback]  # not jitted: marked, never asked again
    jit(helper)  # jitted now: the mark goes
    assert skip_marks(helper.__code__) == []
    assert_same_as_eager(outer, calls_helper, torch.ones(3))
    assert counters.compiled == 1  # helper, inside the eager calls_helper


@given(st.integers(-2, 2), st.integers(-2, 2), st.integers(0, 2))
def test_every_kind_of_argument(a, scale, shift):
    stage3_guards.reset()
    f = jit(signature)
    x = torch.full((2,), float(a))
    kwargs = {"scale": scale, "shift": shift}
    assert_same_as_eager(f, signature, x, x, kwargs=kwargs, captured=captured)
    assert_same_as_eager(f, signature, x, x, x, kwargs=kwargs)
    assert counters.recompiles == 1
    assert f.cache.recompile_reasons == ["length of local 'rest' changed: expected 1, got 2"]


def test_modules_and_methods():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU())

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = model

        def forward(self, x):
            return self.body(x) * 2

    net = Net()
    f = jit(net)
    x = torch.randn(2, 3)
    assert_same_as_eager(f, net, x, captured=captured)
    assert_same_as_eager(f, net, x)
    assert counters.cache_hits == 1
    with torch.no_grad():
        net.body[0].weight.add_(1.0)  # new values, same metadata: still a hit, new result
    assert_same_as_eager(f, net, x)
    assert counters.cache_hits == 2


def test_the_recompile_limit_with_the_vm(caplog):
    config.recompile_limit = 2
    f = jit(with_globals)
    with caplog.at_level(logging.WARNING, logger="minidynamo.recompiles"):
        for dtype in (torch.float32, torch.float64, torch.float16, torch.float32):
            assert_same_as_eager(f, with_globals, torch.ones(4, dtype=dtype))
    assert counters.compiled == 2 and counters.cache_hits == 1 and counters.eager == 1
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1
    assert skip_marks(with_globals.__code__) == []  # not marked: its entries still hit


@pytest.mark.parametrize("threads", [4])
def test_threads(threads):
    import threading

    f = jit(mlp)
    w, b = torch.randn(3, 3), torch.randn(3)
    errors = []

    def work(rows):
        try:
            for _ in range(20):
                x = torch.randn(rows, 3)
                torch.testing.assert_close(f(x, w, b, 1, None), mlp(x, w, b, 1, None))
        except Exception as error:
            errors.append(error)

    pool = [threading.Thread(target=work, args=(1 + i % 2,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    assert not errors
    assert counters.compiled == 2
