"""The cache of one code object, driven by plain frames: hits, recompiles, the limit, fallbacks."""

import logging
import threading
import types
import warnings

import pytest
import torch

import stage3_guards
from stage1_eval_frame import SKIP
from stage2_symbolic_vm.errors import Unsupported
from stage3_guards import CacheEntry, FrameCache, compile_guards, compile_replay, config, counters
from stage3_guards.guards import build_guards
from stage3_guards.replay import argument_names

from .handmade import add, trace_add


def frame_of(fn, *args):
    """What the stage-1 hook shows the callback (only the attributes stage 3 reads)."""
    names = argument_names(fn.__code__)
    return types.SimpleNamespace(
        code=fn.__code__,
        globals=fn.__globals__,
        function=fn,
        slots=args,
        arguments=dict(zip(names, args, strict=True)),
    )


def compile_add(frame):
    trace = trace_add(frame.function, *frame.slots)
    guards = build_guards(trace.assumptions, frame.arguments, frame.globals, frame.function)
    return CacheEntry(compile_guards(guards, "add"), compile_replay(trace, "add"), trace)


def call(cache, fn, *args):
    """Run a call as the hook would: the replacement, or the frame itself (None or SKIP)."""
    replacement = cache.lookup(frame_of(fn, *args))
    return fn(*args) if replacement in (None, SKIP) else replacement(*args)


def test_hit_miss_and_recompile_reason():
    cache = FrameCache(add.__code__, compile_add)
    x4, x8 = torch.ones(4), torch.ones(8)
    torch.testing.assert_close(call(cache, add, x4, x4), x4 + x4)
    torch.testing.assert_close(call(cache, add, x4, x4), x4 + x4)
    assert (counters.frames, counters.compiled, counters.cache_hits) == (2, 1, 1)
    call(cache, add, x8, x8)
    assert counters.recompiles == 1
    assert cache.recompile_reasons == ["size of local 'x' changed: expected 4, got 8"]
    assert [e.trace.inputs[0].meta.shape[0] for e in cache.entries] == [8, 4]  # newest first
    call(cache, add, x4, x4)
    assert (counters.compiled, counters.cache_hits) == (2, 2)


def test_recompile_limit_warns_once_and_runs_eagerly(caplog):
    config.recompile_limit = 3
    cache = FrameCache(add.__code__, compile_add)
    with caplog.at_level(logging.WARNING, logger="minidynamo.recompiles"):
        for n in range(1, 7):
            x = torch.ones(n)
            torch.testing.assert_close(call(cache, add, x, x), x + x)
    assert len(cache.entries) == 3
    assert (counters.compiled, counters.recompiles, counters.eager) == (3, 2, 3)
    assert cache.eager_reason == "hit the recompile limit (3)"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "hit the recompile limit (3)" in warnings[0].getMessage()
    assert "size of local 'x' changed: expected 3, got 4" in warnings[0].getMessage()
    call(cache, add, torch.ones(1), torch.ones(1))  # an old entry still hits
    assert counters.cache_hits == 1


def test_unsupported_runs_eagerly_from_then_on():
    def refuse(frame):
        raise Unsupported("data_dependent_branch", "branch on x.sum() > 0")

    cache = FrameCache(add.__code__, refuse)
    x = torch.ones(2)
    torch.testing.assert_close(call(cache, add, x, x), x + x)
    assert cache.eager_reason == "cannot be captured whole: branch on x.sum() > 0"
    call(cache, add, x, x)
    assert (counters.eager, counters.compiled) == (2, 0)


def test_a_compiler_error_raises_in_strict_mode():
    def broken(frame):
        raise RuntimeError("a bug in the compiler")

    cache = FrameCache(add.__code__, broken)
    with pytest.raises(RuntimeError, match="a bug in the compiler"):
        call(cache, add, torch.ones(2), torch.ones(2))


def test_a_compiler_error_warns_once_and_runs_eagerly_from_then_on(monkeypatch):
    monkeypatch.setattr(stage3_guards.config, "strict", False)
    attempts = []

    def broken(frame):
        attempts.append(frame)
        raise RuntimeError("a bug in the compiler")

    cache = FrameCache(add.__code__, broken)
    x = torch.ones(2)
    with pytest.warns(stage3_guards.CompilerWarning, match="a bug in the compiler"):
        torch.testing.assert_close(call(cache, add, x, x), x + x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning, no second attempt
        torch.testing.assert_close(call(cache, add, x, x), x + x)
    assert len(attempts) == 1
    assert cache.eager_reason == "the compiler failed: RuntimeError: a bug in the compiler"


def test_a_guard_that_raises_is_a_miss():
    cache = FrameCache(add.__code__, compile_add)
    call(cache, add, torch.ones(2), torch.ones(2))
    cache.lookup(frame_of(add, 3, 4))  # type guard fails first: no exception escapes
    assert cache.recompile_reasons == ["type of local 'x' changed: expected Tensor, got int"]


def test_threads_share_one_entry():
    compiles = []

    def slow_compile(frame):
        compiles.append(frame)
        return compile_add(frame)

    cache = FrameCache(add.__code__, slow_compile)
    x = torch.ones(3)
    errors = []

    def worker():
        try:
            for _ in range(50):
                torch.testing.assert_close(call(cache, add, x, x), x + x)
        except AssertionError as error:
            errors.append(error)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(compiles) == 1


@pytest.mark.parametrize("limit", [1, 2, 5])
def test_the_limit_counts_entries(limit):
    config.recompile_limit = limit
    cache = FrameCache(add.__code__, compile_add)
    for n in range(10):
        call(cache, add, torch.ones(n), torch.ones(n))
    assert len(cache.entries) == counters.compiled == limit


def test_an_entry_whose_guards_reject_its_own_call_is_a_bug_not_kept(monkeypatch):
    def wrong_guards(frame):
        entry = compile_add(frame_of(add, torch.ones(5), torch.ones(5)))  # made for size 5
        return entry

    x = torch.ones(2)
    with pytest.raises(AssertionError, match="size of local 'x' changed: expected 5, got 2"):
        call(FrameCache(add.__code__, wrong_guards), add, x, x)  # strict: the bug is raised
    monkeypatch.setattr(stage3_guards.config, "strict", False)
    cache = FrameCache(add.__code__, wrong_guards)
    with pytest.warns(stage3_guards.CompilerWarning, match="guards reject the values"):
        torch.testing.assert_close(call(cache, add, x, x), x + x)
    assert cache.entries == [] and counters.eager == 2
