"""Stage 3: guards, a cache per code object, recompilation — a working whole-function JIT.

Stage 2 traces a function for one set of arguments and records every
assumption it made about them. This stage turns those assumptions into guards,
compiles them into one function that says whether a trace still applies to a
call, keeps the compiled versions of each code object in a cache that
recompiles when every guard function says no, and puts it all behind the
stage-1 hook: a JIT for functions the VM captures whole.

The core, in reading order:

    guards.py           one guard builder per kind of assumption: Guard, Check, build_guards
    guard_function.py   the guards of an entry as one generated Python function, and why it failed
    generated.py        how generated source becomes a function (named, in linecache, never hooked)
    replay.py           the trace as a straight-line Python function: the smallest backend
    frame_cache.py      the entries of one code object: lookup, compile, recompile, give up
    jit.py              jit(fn): hook + VM + guards + cache

The rest, by purpose:

    dynamic_shapes/     guards of a trace whose sizes are symbols (SHAPE_ENV, dim by dim)
    performance/        torch's C++ check of many tensors at once (guard functions, backends);
                        guard functions' sources kept on disk for the next process

    >>> f = stage3_guards.jit(lambda x, y: x + y)
    >>> f(torch.ones(8), torch.ones(8))     # compiled; later calls hit the cache
"""

from stage2_symbolic_vm.dynamic_shapes.shapes import (
    ConstraintViolationError,
    mark_dynamic,
    mark_static,
)

from .frame_cache import (
    CacheEntry,
    CompileError,
    CompilerWarning,
    Config,
    Counters,
    DivergenceError,
    FrameCache,
    SkipFrame,
    config,
    counters,
)
from .guard_function import GuardFunction, compile_guards, failure_reason
from .guards import GUARD_BUILDERS, Check, Guard, GuardError, build_guards
from .jit import jit, reset
from .performance.tensor_checks import SameArguments
from .replay import Replay, compile_replay

__all__ = [
    "GUARD_BUILDERS",
    "CacheEntry",
    "Check",
    "CompileError",
    "CompilerWarning",
    "Config",
    "ConstraintViolationError",
    "Counters",
    "DivergenceError",
    "FrameCache",
    "Guard",
    "GuardError",
    "GuardFunction",
    "Replay",
    "SameArguments",
    "SkipFrame",
    "build_guards",
    "compile_guards",
    "compile_replay",
    "config",
    "counters",
    "failure_reason",
    "jit",
    "mark_dynamic",
    "mark_static",
    "reset",
]
