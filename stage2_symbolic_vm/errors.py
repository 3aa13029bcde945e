"""`Unsupported`: where and why the symbolic VM stops, as structured data.

Every stop has a *kind* from the registry below, with an explanation and a
hint a student can act on. Stage 4 turns an `Unsupported` into a graph break
(it cuts the graph at `state`, the root frame's stack and locals), `explain()`
prints the explanation, and the tests match on the kind. torch/_dynamo keeps
the same idea in `exc.Unsupported` + `graph_break_registry.json`.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class BreakKind:
    explanation: str
    hint: str


BREAK_KINDS = {
    "data_dependent_branch": BreakKind(
        "a branch on the value of a tensor (`if x.sum() > 0`): the trace records operations, "
        "not values, so it cannot know which way the branch goes",
        "use `torch.where(cond, a, b)`, or branch on shapes and Python values instead",
    ),
    "item_call": BreakKind(
        "a tensor's data was turned into a Python value (`.item()`, `.tolist()`, `int(x)`, "
        "`bool(x)`): tracing uses meta tensors, which have a shape but no data",
        "keep the value as a 0-d tensor and use tensor operations on it",
    ),
    "dynamic_shape_op": BreakKind(
        "an operation whose output shape depends on the data (`nonzero`, `unique`, `x[mask]`): "
        "shapes are static in this stage",
        "use a fixed-shape form such as `torch.where(mask, x, 0)`",
    ),
    "untraceable_call": BreakKind(
        "a call to a function the VM cannot look inside (`print`, a C function of another "
        "library such as NumPy, I/O, the random generator's seed)",
        "move the call outside the compiled function, or use a torch operation instead",
    ),
    "unsupported_opcode": BreakKind(
        "a bytecode instruction the VM has no handler for (a `class` statement inside the "
        "function, `match` on a sequence, ...)",
        "see `python -m stage2_symbolic_vm.tools.coverage`; adding a handler is one method",
    ),
    "unsupported_mutation": BreakKind(
        "a change the new code cannot write back after the graph (a module's parameter or "
        "submodule replaced, globals that are not a module's); and stage 2's `replay`, which "
        "runs a trace alone, writes back no change at all",
        "compute the new value and return it, or change the object outside the compiled function",
    ),
    "unsupported_value": BreakKind(
        "an operation on a Python value the VM does not model (an object of a C library, "
        "a dict key with its own __hash__, a generator sent a value before it started, ...)",
        "pass tensors, numbers, strings, containers of them, or objects of Python classes",
    ),
    "eager_error": BreakKind(
        "the operation raises an error when run (a shape mismatch, a wrong argument, an "
        "explicit `raise`): the traced function would raise here too",
        "run the function eagerly to see the error",
    ),
    "trace_limit": BreakKind(
        "the trace grew too long: calls nested too deeply (recursion) or a loop that does not end",
        "make the recursion a loop with a fixed bound",
    ),
}


@dataclass(frozen=True)
class Location:
    """One frame of the user's stack at the stop: function, file, line and instruction."""

    function: str
    filename: str
    lineno: int | None
    offset: int
    opname: str

    def __str__(self):
        where = f'File "{self.filename}", line {self.lineno}, in {self.function}'
        return f"{where} ({self.opname} @ {self.offset})"


class Unsupported(Exception):
    """The VM cannot go on; stage 4 turns this into a graph break.

    `kind` is a key of BREAK_KINDS; `reason` says in words what happened.
    `offset`, `opname`, `lineno`, `filename` locate the instruction where it
    stopped, in the innermost frame (inside an inlined helper if that is where
    it stopped); `frames` lists the Location of every frame, root first.
    `state` is the VMState of the *root* frame at its current instruction
    (the CALL that entered the helper, before its operands were popped), and
    `trace` the Trace recorded so far: everything stage 4 needs to cut the
    graph there, and `side_effects` the changes to outside objects it made so far. The
    VM fills those in as the exception leaves it.
    """

    def __init__(self, kind: str, reason: str):
        assert kind in BREAK_KINDS, kind
        super().__init__(reason)
        self.kind = kind
        self.reason = reason
        self.frames: list[Location] = []
        self.state = None
        self.trace = None
        self.side_effects = None  # the changes to outside objects made before the stop

    @property
    def explanation(self) -> str:
        return BREAK_KINDS[self.kind].explanation

    @property
    def hint(self) -> str:
        return BREAK_KINDS[self.kind].hint

    def _innermost(self, field):
        return getattr(self.frames[-1], field) if self.frames else None

    offset = property(lambda self: self._innermost("offset"))
    opname = property(lambda self: self._innermost("opname"))
    lineno = property(lambda self: self._innermost("lineno"))
    filename = property(lambda self: self._innermost("filename"))

    def __str__(self):
        where = "\n".join(f"  {loc}" for loc in self.frames)
        return f"{self.reason}\n{where}\n  why: {self.explanation}\n  hint: {self.hint}"


class ObservedException(Unsupported):
    """An exception the traced code raises (eager would raise it at this point too).

    The code may catch it itself: the VM then jumps to its `except` as CPython does (the
    frame's exception table); otherwise it stops the VM, and the frame runs eagerly and
    raises it for real. torch/_dynamo/exc.py calls these "observed exceptions".
    """

    def __init__(self, exception: BaseException, what: str | None = None):
        text = f"{type(exception).__name__}: {exception}"
        super().__init__("eager_error", f"{what} raises {text}" if what else text)
        self.exception = exception


class ObservedAttributeError(ObservedException):
    """An attribute that does not exist: `hasattr` and `getattr(x, name, default)` go on."""

    def __init__(self, reason: str):
        super().__init__(AttributeError(reason))


class CannotReconstruct(Exception):
    """A value that exists only inside the trace and cannot be rebuilt in Python (stage 4)."""
