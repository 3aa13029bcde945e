"""Stage 3: guards, a cache per code object, recompilation — a working whole-function JIT.

Stage 2 traces a function for one set of arguments and records every
assumption it made about them. This stage turns those assumptions into
guards (`guards.py`: one builder per kind), compiles the guards of a trace
into one generated Python function (`guard_function.py`) and the trace into a
straight-line replay (`replay.py`), keeps the compiled versions of each code
object in a cache that recompiles when the guards fail (`frame_cache.py`), and ties
it to the stage-1 hook in `jit(fn)` (`jit.py`). Read them in that order.
A size that changes between two compiles of a frame becomes a symbol (stage 2's
`shapes.py`; `mark_dynamic`, `config.automatic_dynamic_shapes`), guarded by the
relations the trace relied on (`guards.shape_env_guard`).

    >>> f = stage3_guards.jit(lambda x, y: x + y)
    >>> f(torch.ones(8), torch.ones(8))     # compiled; later calls hit the cache
"""

from stage2_symbolic_vm.shapes import ConstraintViolationError, mark_dynamic, mark_static

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
from .guard_function import GuardFunction, SameArguments, compile_guards, failure_reason
from .guards import GUARD_BUILDERS, Check, Guard, GuardError, build_guards
from .jit import jit, reset
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
