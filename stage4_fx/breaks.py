"""Graph breaks as structured data: one registry of kinds, one record per break.

Stage 2 says why the VM stopped (`Unsupported.kind`, one of its BREAK_KINDS).
Stage 4 adds the reasons it may have to run a whole frame eagerly instead of
cutting it (a break inside a `try` block, a value on the stack it cannot
rebuild). `explain()`, the `breaks` log, the docs and the tests all read the
same `GraphBreak` records, so a student sees one story everywhere.
torch/_dynamo keeps this in `graph_break_registry.json` + `exc.Unsupported`.
"""

import linecache
from dataclasses import dataclass

from stage2_symbolic_vm.errors import BREAK_KINDS, BreakKind, Unsupported
from stage3_guards import CompileError

# Why a frame with a break runs eagerly (its callees are still compiled).
FRAME_KINDS = {
    "break_in_block": BreakKind(
        "the break is inside a `try` or `with` block: the new code would have to rebuild the "
        "block around the rest of the function, which this stage does not do",
        "move the untraceable line out of the `try`/`with` block, or accept that this frame "
        "runs eagerly (the functions it calls are still compiled)",
    ),
    "unresumable_instruction": BreakKind(
        "the VM stopped at an instruction that the new code cannot run on its own and then "
        "resume after (a `for` step, a jump that keeps a value, a local variable access)",
        "move the untraceable operation onto its own line",
    ),
    "reads_its_own_frame": BreakKind(
        "the function calls `locals()`, `vars()`, `dir()`, `eval()`, `sys._getframe()` or the "
        "like: after the break they would run in the resume function, whose local variables are "
        "not the function's (only the live ones, under other names)",
        "move the untraceable line out of the function that reads its own frame",
    ),
    "stops_in_resume_prologue": BreakKind(
        "the VM stopped while a resume function was loading the values it resumes with, "
        "before any of the original code: there is no graph to cut, and nothing to resume",
        "the value it could not load is named above: keep such values out of the live "
        "variables at the earlier break, or accept that this part runs eagerly",
    ),
    "compiler_error": BreakKind(
        "minidynamo itself failed on this frame (a bug): the frame runs eagerly, so its "
        "results are still eager's, and a CompilerWarning says so once",
        "report it with the warning's text; `stage3_guards.config.strict = True` shows the "
        "traceback",
    ),
    "unguardable_value": BreakKind(
        "the trace depends on a value that no guard can check on the next call (a dict whose "
        "keys are objects, a constant of a type compared by identity ...): a cached graph "
        "could not know when it no longer applies",
        "pass the value as an argument, or make it a number, string or tuple of them",
    ),
    "unreconstructable_value": BreakKind(
        "a value live at the break (on the stack or in a local variable) exists only inside the "
        "trace and cannot be rebuilt in Python (a generator part-way through, a closure of a "
        "function the VM inlined, an iterator over values computed on the fly ...)",
        "keep tensors, numbers and lists/tuples/dicts of them in variables across the break",
    ),
}

REGISTRY: dict[str, BreakKind] = {**BREAK_KINDS, **FRAME_KINDS}


@dataclass(frozen=True)
class GraphBreak:
    """One graph break: where (function, file, line and its text), what kind, why, what to do."""

    kind: str
    reason: str
    function: str
    filename: str
    lineno: int | None
    eager_frame: bool = False  # True: the frame ran eagerly instead of being cut

    @property
    def explanation(self) -> str:
        return REGISTRY[self.kind].explanation

    @property
    def hint(self) -> str:
        return REGISTRY[self.kind].hint

    @property
    def line(self) -> str:
        """The user's source line, as written."""
        if self.lineno is None:
            return ""
        return linecache.getline(self.filename, self.lineno).strip()

    @property
    def where(self) -> str:
        return f'File "{self.filename}", line {self.lineno}, in {self.function}'

    def __str__(self):
        text = f"{self.reason}\n  {self.where}"
        if self.line:
            text += f"\n    {self.line}"
        return f"{text}\n  why: {self.explanation}\n  hint: {self.hint}"


def from_unsupported(error: Unsupported, code) -> GraphBreak:
    """The record of a VM stop; located at the innermost user frame, as the user reads it."""
    filename = error.filename or code.co_filename
    function = error.frames[-1].function if error.frames else code.co_name
    return GraphBreak(error.kind, error.reason, function, filename, error.lineno)


def frame_runs_eagerly(kind: str, reason: str, cause: GraphBreak) -> GraphBreak:
    """A break that could not be cut: the whole frame runs eagerly. Located where the VM stopped."""
    assert kind in FRAME_KINDS, kind
    text = f"{reason} (the VM stopped on: {cause.reason})"
    return GraphBreak(kind, text, cause.function, cause.filename, cause.lineno, eager_frame=True)


# What `fullgraph=True` found instead of one graph, by kind; any other kind is a break.
FULLGRAPH_FAILURES = {
    "eager_error": "the function raises an exception it does not catch (torch: 'Observed "
    "exception')",
    "compiler_error": "minidynamo failed on the function (a bug of minidynamo)",
    "unguardable_value": "the trace relies on a value no guard can check",
    "unreconstructable_value": "the new code cannot rebuild the function's result",
}


class GraphBreakError(CompileError):
    """`fullgraph=True` and the function cannot be one graph (a break, an exception it raises,
    a failure of ours): say which, where, and why. It never runs eagerly instead."""

    def __init__(self, graph_break: GraphBreak):
        found = FULLGRAPH_FAILURES.get(graph_break.kind, "the function has a graph break")
        super().__init__(f"fullgraph=True, but {found}: {graph_break}")
        self.graph_break = graph_break
