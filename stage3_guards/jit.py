"""`jit(fn)`: hook (stage 1) + symbolic VM (stage 2) + guards and cache = a working JIT.

The pieces meet in one callback, which the stage-1 hook calls for each new
frame while a jitted function runs:

    frame of a jitted code ──> its FrameCache ──> an entry whose guards pass? ──> run its replay
                                                  no: trace the frame (stage 2),
                                                      build guards, add an entry, run it

A function the VM cannot capture whole runs eagerly (stage 4 will cut it into
graphs instead). Frames of other code, and jitted frames that will run as they
are from now on, are answered `SKIP`: the hook stops showing them to us.
torch.compile's `_TorchDynamoContext` is the same wrapper; its callback is
`convert_frame`, its cache walk is C++.
"""

import functools
import inspect

import torch

import stage2_symbolic_vm
from stage1_eval_frame import SKIP, clear_skip_marks, set_eval_frame, skip_code
from stage1_eval_frame.logs import get_logger

from .frame_cache import CacheEntry, FrameCache, counters
from .generated import forget_sources
from .guard_function import compile_guards
from .guards import build_guards
from .replay import argument_names, compile_replay

frames_log = get_logger("frames")

# One cache per code object, for every function made from it (closures share
# code). Registered codes stay registered: `reset()` empties their caches.
_caches: dict[object, FrameCache] = {}


def _callback(frame):
    """Called by the hook for every new frame: jitted codes go to their cache, others are
    not shown to us again (until `jit()` of their function, or a reset)."""
    cache = _caches.get(frame.code)
    return SKIP if cache is None else cache.lookup(frame)


def jit(fn):
    """Compile `fn` (a function, a bound method or an nn.Module) on its first call.

    Each later call runs the compiled trace if its guards pass, recompiles if
    they fail (up to `config.recompile_limit` versions), and runs eagerly if
    the VM cannot capture the function. `jitted.cache` is its `FrameCache`.
    """
    code = _code_of(fn)
    cache = _caches.setdefault(code, FrameCache(code, compile_frame))
    clear_skip_marks(code)  # met before, while another jitted function ran: now it is ours

    @functools.wraps(fn)
    def jitted(*args, **kwargs):
        previous = set_eval_frame(_callback)
        try:
            return fn(*args, **kwargs)
        finally:
            set_eval_frame(previous)

    skip_code(jitted.__code__)  # the wrapper itself is never worth showing to the callback
    jitted.cache = cache
    return jitted


def _code_of(fn):
    if isinstance(fn, torch.nn.Module):
        fn = type(fn).forward
    fn = getattr(fn, "__func__", fn)  # a bound method: its function
    code = getattr(fn, "__code__", None)
    if code is None:
        raise TypeError(f"jit() takes a Python function, method or nn.Module, not {fn!r}")
    return code


def compile_frame(frame) -> CacheEntry:
    """A cache miss: trace the frame with its real arguments, guard what the trace relied on."""
    code = frame.code
    frames_log.info("compiling %s (%s:%d)", code.co_name, code.co_filename, code.co_firstlineno)
    args, kwargs = call_arguments(code, frame.slots)
    trace = stage2_symbolic_vm.trace(frame.function, *args, **kwargs)
    L, G, F = frame.arguments, frame.globals, frame.function
    guards = build_guards(trace.assumptions, L, G, F, shapes=trace.shapes)
    name = code.co_name
    return CacheEntry(compile_guards(guards, name), compile_replay(trace, name), trace)


def call_arguments(code, slots: tuple) -> tuple[tuple, dict]:
    """The (args, kwargs) of a call that binds to these argument slots again."""
    names = argument_names(code)
    n_positional, n_kwonly = code.co_argcount, code.co_kwonlyargcount
    rest = n_positional + n_kwonly
    args = tuple(slots[:n_positional])
    kwargs = dict(zip(names[n_positional:rest], slots[n_positional:rest], strict=True))
    if code.co_flags & inspect.CO_VARARGS:  # the *args tuple is the next slot
        args += slots[rest]
        rest += 1
    if code.co_flags & inspect.CO_VARKEYWORDS:  # then the **kwargs dict
        kwargs.update(slots[rest])
    return args, kwargs


def reset():
    """Forget every compiled entry, every SKIP mark, and zero the counters
    (torch._dynamo.reset())."""
    for cache in _caches.values():
        cache.clear()
    clear_skip_marks()
    counters.reset()
    forget_sources()
