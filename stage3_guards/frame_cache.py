"""The cache of one code object: compiled entries, most recent first, and recompilation.

Each entry pairs a guard function (are the assumptions of its trace still
true?) with the replay of that trace. A call walks the entries and runs the
first one whose guards pass. When none does, the frame is compiled again for
the new values and the new entry goes first; the old guards say why they
failed ("size of local 'x' changed: expected 4, got 8"). Past
`config.recompile_limit` entries the frame stops compiling and runs eagerly
from then on, with one warning, as torch does when it hits its own limit.

A frame that will never be compiled -- nothing to compile in it (`SkipFrame`),
or it cannot be captured and has no entry -- is answered with stage 1's `SKIP`:
the hook marks its code object in C, and its later frames run without asking
the cache again. torch marks them the same way (`SKIP_CODE`).

torch keeps this list in the code object's "extra" slot, walked in C
(torch/csrc/dynamo/cache_entry.cpp); a dict keyed by code object says the same.
"""

import functools
import inspect
import os
import threading
import types
import warnings
from dataclasses import dataclass, field, fields

from stage1_eval_frame import SKIP, call_unhooked, skip_code
from stage1_eval_frame.logs import get_logger
from stage2_symbolic_vm.dynamic_shapes import shapes
from stage2_symbolic_vm.errors import Unsupported
from stage2_symbolic_vm.sources import ReducedSource
from stage2_symbolic_vm.torch_api.grad_modes import outside_inference_mode
from stage2_symbolic_vm.trace import Trace

from .guard_function import GuardFunction, failure_reason, first_failure
from .guards import GuardError
from .replay import Replay, argument_names

frames_log = get_logger("frames")
guards_log = get_logger("guards")
recompiles_log = get_logger("recompiles")


@dataclass
class Config:
    """Knobs with torch's names (`torch._dynamo.config.recompile_limit`)."""

    recompile_limit: int = 8  # entries per code object before it runs eagerly for good
    # A size (or int argument) seen to change between two compiles is a symbol in the next
    # one (stage2_symbolic_vm/dynamic_shapes/shapes.py); with assume_static_by_default=False
    # every size is a symbol from the first compile. `compile(dynamic=True/False)` overrides both.
    automatic_dynamic_shapes: bool = True
    assume_static_by_default: bool = True
    # An error inside the compiler that is not a named `Unsupported` is a bug of ours. A user
    # gets one warning per frame and the frame runs eagerly; in strict mode (on in the test
    # suite, MINIDYNAMO_STRICT=1) the error is raised instead, so that no test passes by
    # silently comparing eager with eager (torch: `torch._dynamo.config.suppress_errors`).
    strict: bool = field(default_factory=lambda: os.environ.get("MINIDYNAMO_STRICT") == "1")


config = Config()


class CompileError(RuntimeError):
    """An error the compiler raises for the user on purpose (stage 4: `fullgraph=True` and a
    graph break, a backend that fails): the call raises it, instead of running eagerly."""


class SkipFrame(Exception):
    """The frame has nothing to compile (torch: `exc.SkipFrame`): it runs as it is from now on,
    said in the `frames` log. Not a fallback: its compiled version would be the same code."""


class CompilerWarning(UserWarning):
    """A frame runs eagerly because the compiler itself failed on it (a bug, not a limit)."""


class DivergenceError(AssertionError):
    """The VM said the code raises an exception, and eager did something else: a bug of ours,
    raised in strict mode (a CompilerWarning otherwise)."""


@dataclass
class Counters:
    """What the JIT did, for tests and for users (torch has `torch._dynamo.utils.counters`)."""

    frames: int = 0  # calls of a jitted function that reached the cache
    cache_hits: int = 0  # ... and ran a compiled entry
    compiled: int = 0  # entries compiled: the first one and every recompile
    recompiles: int = 0  # compiles because the guards of every existing entry failed
    eager: int = 0  # calls the cache ran eagerly (could not compile, or the limit); a frame
    # marked SKIP for good is counted once: its later calls do not reach the cache
    skipped: int = 0  # frames found to have nothing to compile, which run as they are
    diverged: int = 0  # eager runs that did not raise what the VM said the code raises

    def reset(self):
        for f in fields(self):
            setattr(self, f.name, 0)


counters = Counters()


@dataclass(eq=False)
class CacheEntry:
    """One compiled version of a frame: valid while its guards pass."""

    guards: GuardFunction
    replay: Replay
    trace: Trace

    def __post_init__(self):
        # The hook calls the replacement with the frame's argument slots; run the
        # replay with the hook off (the compiled code is not to be traced), and
        # give it this frame's G and F when it reads globals or closure cells.
        self.check = self.guards.check
        self.replacement = None
        if not self.replay.reads_frame:
            self.replacement = functools.partial(call_unhooked, self.replay.function)

    def replacement_for(self, G: dict, F):
        if self.replacement is not None:
            return self.replacement
        return functools.partial(call_unhooked, self.replay.function, G, F)


def moved_on(guard) -> bool:
    """Whether `guard` is the position of an iterator the frame received (a loop's, in a
    resume function: stage 2's python/iterators.py reads it through `__reduce__`)."""
    source = getattr(guard, "source", None)
    return isinstance(source, ReducedSource) and source.path == (2,)


class FrameCache:
    """The entries of one code object, and the decision to compile, recompile or give up."""

    def __init__(self, code, compile_entry, dynamic: bool | None = None, fullgraph=False):
        self.code = code
        self.compile_entry = compile_entry  # frame -> CacheEntry; raises if it cannot
        self.dynamic = dynamic  # torch.compile's `dynamic=`: None automatic, True, False
        self.fullgraph = fullgraph  # never run the frame eagerly: raise instead
        self.lock = threading.Lock()  # one compile at a time; lookups never wait
        self.plain_code = None  # the frame's code, marked for the hook to let run (checked_run)
        self.clear()

    def clear(self):
        self.entries: list[CacheEntry] = []  # replaced, never mutated: readers need no lock
        self.frame_state = shapes.FrameState()  # the sizes its compiles saw (automatic dynamic)
        self.recompile_reasons: list[str] = []
        self.eager_reason: str | None = None  # set when the frame runs eagerly for good
        self.skip_reason: str | None = None  # set when it has nothing to compile (SkipFrame)

    def lookup(self, frame):
        """The hot path: the replacement for this call, None to run the frame as it is this
        time, or SKIP to run it as it is from now on (the hook stops asking about this code)."""
        counters.frames += 1
        L, G, F = frame.arguments, frame.globals, frame.function
        entry = self.find(L, G, F)  # first: a hit pays for no other check
        if entry is not None:
            counters.cache_hits += 1
            return entry.replacement_for(G, F)
        if self.runs_as_it_is():  # a frame the hook could not mark: asked again
            counters.eager += self.eager_reason is not None
            return SKIP
        if self.eager_reason is not None:
            counters.eager += 1
            return None
        replacement = self.compile(frame)
        return SKIP if replacement is None and self.runs_as_it_is() else replacement

    def runs_as_it_is(self) -> bool:
        """Will every later call run the original frame? Yes if there is nothing to compile,
        or if it runs eagerly for good and no entry is left to hit (past the recompile limit,
        the entries still serve the calls their guards accept)."""
        return self.skip_reason is not None or (self.eager_reason is not None and not self.entries)

    def find(self, L: dict, G: dict, F, entries=None) -> CacheEntry | None:
        for entry in self.entries if entries is None else entries:
            try:
                if entry.check(L, G, F):
                    return entry
            except Exception:  # e.g. len() of what is now an int: not the value the trace saw
                continue
        return None

    def compile(self, frame):
        with self.lock:
            L, G, F = frame.arguments, frame.globals, frame.function
            entry = self.find(L, G, F)  # another thread may have compiled it meanwhile
            if entry is not None:
                counters.cache_hits += 1
                return entry.replacement_for(G, F)
            if self.eager_reason is not None or not self.may_recompile(L, G, F):
                counters.eager += 1
                return None
            policy = self.shape_policy()
            try:
                with shapes.compiling(policy), outside_inference_mode():
                    entry = self.compile_entry(frame)
                if self.find(L, G, F, [entry]) is None:  # a bug, caught here not on every call
                    reason = failure_reason(entry.guards.guards, L, G, F)
                    raise AssertionError(  # a bug of ours: strict mode raises, else a warning
                        f"the new guards reject the values they were made from: {reason}"
                    )
            except Exception as error:
                self.log_recompile(policy)
                return self.run_eagerly(error, frame)
            self.log_recompile(policy)
            counters.compiled += 1
            self.entries = [entry, *self.entries]
            self.log_new_entry(entry)
            return entry.replacement_for(G, F)

    def may_recompile(self, L: dict, G: dict, F) -> bool:
        """Record why the existing entries failed; False once the limit is reached."""
        if not self.entries:
            return True
        guard, reason = first_failure(self.entries[0].guards.guards, L, G, F)
        reason = reason or "guards failed"
        self.recompile_reasons.append(reason)
        if moved_on(guard) and not self.fullgraph:
            # A resume function of a break inside a loop, met at the loop's next step: one
            # entry per step would only lead to the limit. torch.compile runs a frame with a
            # break in a loop eagerly from the start ("graph break in loop"); here the steps
            # compiled so far keep their entries. The calls in the loop compile on their own.
            self.eager_reason = f"a loop's iterator moved on ({reason})"
            recompiles_log.info("%s runs eagerly from now on: %s", self.describe(), reason)
            return False
        if len(self.entries) >= config.recompile_limit:
            self.eager_reason = f"hit the recompile limit ({config.recompile_limit})"
            if self.fullgraph:  # torch raises FailOnRecompileLimitHit for one_graph too
                raise CompileError(
                    f"fullgraph=True, but {self.describe()} {self.eager_reason}: its calls "
                    f"would run eagerly. Last reason: {reason}"
                )
            recompiles_log.warning(
                "%s: %s; it runs eagerly from now on.\n   last reason: %s\n"
                "   To see every recompile reason: MINIDYNAMO_LOGS=recompiles. "
                "To allow more: stage3_guards.config.recompile_limit.",
                self.describe(),
                self.eager_reason,
                reason,
            )
            return False
        counters.recompiles += 1
        return True

    def shape_policy(self) -> shapes.ShapePolicy:
        """How this compile picks its symbols: the config, or `dynamic=` where it was given
        (True: every size a symbol from the first compile; False: none but mark_dynamic's)."""
        if self.dynamic is None:
            automatic, static = config.automatic_dynamic_shapes, config.assume_static_by_default
        else:
            automatic, static = False, not self.dynamic
        return shapes.ShapePolicy(self.frame_state, automatic, static)

    def log_recompile(self, policy: shapes.ShapePolicy):
        """Say why a recompile happened, with the sizes it made symbolic: "size of local 'x'
        changed: expected (4, 8), got (5, 8); dim 0 of local 'x' is now dynamic"."""
        if not self.entries:
            return
        reason = "; ".join([self.recompile_reasons[-1], *policy.notes])
        self.recompile_reasons[-1] = reason
        recompiles_log.info("recompiling %s: %s", self.describe(), reason)

    def run_eagerly(self, error: Exception, frame):
        """The compiler could not handle this call: run the frame as it is, and say why.

        Most of the VM's `Unsupported` stops are properties of the code (a
        branch on a tensor's value, an unsupported call), so the frame runs
        eagerly from then on; an error of the operation itself ("eager_error":
        a shape mismatch) concerns this call only, and eager will raise the
        user's error: it runs checked (`checked_run`). A `CompileError` is for the
        user: the call raises it. Any other exception is a bug of the compiler: strict
        mode raises it, otherwise the user gets one warning and the frame runs eagerly
        from then on.
        """
        if isinstance(error, (CompileError, shapes.ConstraintViolationError)):
            raise error
        if isinstance(error, SkipFrame):
            counters.skipped += 1
            self.skip_reason = str(error)
            frames_log.info("%s runs as it is from now on: %s", self.describe(), error)
            return None
        counters.eager += 1
        if isinstance(error, Unsupported) and error.kind == "eager_error":
            frames_log.info("%s runs eagerly this time: %s", self.describe(), error.reason)
            return self.checked_run(frame, error.exception)
        if isinstance(error, (Unsupported, GuardError)):
            self.eager_reason = f"cannot be captured whole: {error}".splitlines()[0]
            frames_log.info("%s runs eagerly from now on: %s", self.describe(), self.eager_reason)
            return None
        if config.strict:
            raise error
        self.eager_reason = f"the compiler failed: {type(error).__name__}: {error}"
        frames_log.info("%s runs eagerly from now on: %s", self.describe(), self.eager_reason)
        warnings.warn_explicit(  # shown at the user's function, not at this line
            f"minidynamo could not compile {self.code.co_qualname} and runs it eagerly from now "
            f"on (the results are eager's). This is a bug of minidynamo: {type(error).__name__}: "
            f"{error}. Set stage3_guards.config.strict = True to see the traceback.",
            CompilerWarning,
            self.code.co_filename,
            self.code.co_firstlineno,
        )
        return None

    def checked_run(self, frame, predicted: BaseException):
        """Run the frame eagerly, and check that it raises what the VM said it raises.

        The VM decided that the code raises `predicted` (a shape mismatch, a
        `raise`, a TypeError of `set | tuple`). If eager returns instead, or raises
        another type, the VM models Python or torch wrongly: a wrong answer
        hidden behind a fallback. The user still gets eager's result; the bug is
        raised in strict mode, else warned about and counted (`counters.diverged`).
        """
        if self.plain_code is None:  # a copy the hook lets run: it is this very frame
            self.plain_code = self.code.replace()
            skip_code(self.plain_code)
        function = types.FunctionType(
            self.plain_code, frame.globals, self.code.co_name, None, frame.function.__closure__
        )

        def run(*slots):
            args, kwargs = call_arguments(self.code, list(slots))
            try:
                result = function(*args, **kwargs)
            except BaseException as raised:
                if type(raised) is not type(predicted):
                    self.diverged(predicted, f"raises {type(raised).__name__}: {raised}")
                raise
            self.diverged(predicted, "returns")
            return result

        skip_code(run.__code__)
        return run

    def diverged(self, predicted: BaseException, what_eager_did: str):
        counters.diverged += 1
        message = (
            f"minidynamo's VM said that {self.code.co_qualname} raises "
            f"{type(predicted).__name__}: {predicted}, but eager {what_eager_did}. This is a "
            "bug of minidynamo (the result is eager's)."
        )
        if config.strict:
            raise DivergenceError(message)
        frames_log.info("%s", message)
        warnings.warn_explicit(
            message, CompilerWarning, self.code.co_filename, self.code.co_firstlineno
        )

    def log_new_entry(self, entry: CacheEntry):
        if guards_log.isEnabledFor(20):  # INFO: printing guards is not free
            lines = "\n".join(f"  {guard}" for guard in entry.guards.guards)
            count = len(self.entries)
            guards_log.info("guards of %s, entry %d:\n%s", self.describe(), count, lines)

    def describe(self) -> str:
        return f"{self.code.co_name} ({self.code.co_filename}:{self.code.co_firstlineno})"


def call_arguments(code, slots: list) -> tuple[list, dict]:
    """A frame's argument slots as the arguments of a call of its function: positional ones,
    keyword-only ones by name, then the `*args` tuple and `**kwargs` dict spread out."""
    names = argument_names(code)
    positional = code.co_argcount
    keyword_only = positional + code.co_kwonlyargcount
    args = slots[:positional]
    kwargs = dict(zip(names[positional:keyword_only], slots[positional:keyword_only], strict=True))
    rest = slots[keyword_only:]
    if code.co_flags & inspect.CO_VARARGS:
        args = [*args, *rest.pop(0)]
    if code.co_flags & inspect.CO_VARKEYWORDS:
        kwargs.update(rest.pop(0))
    return args, kwargs
