"""One frame in, one new code object out: trace, build the graph, write the new bytecode.

This is torch/_dynamo/convert_frame.py + the end of symbolic_convert.py. The
stage-3 cache calls `convert_frame(frame, options)` on a miss, and gets back
a `CompiledFrame`, whose guards it checks on later calls and whose new code
the hook runs instead of the original. Two outcomes:

* the VM traced the whole frame: the new code calls the compiled graph and
  rebuilds the result,

      ___graph_out = __compiled_fn_1(x, y)
      return ___graph_out[0]

* the VM stopped at an instruction (a graph break): the new code calls the
  graph so far, rebuilds the live locals and the stack, runs that one
  instruction in plain Python, and returns what a resume function (the rest
  of the bytecode, see resume.py) returns; cut.py writes this part:

      ___graph_out = __compiled_fn_1(x)
      return __resume_at_30_2(x, ___graph_out[1], print(___graph_out[0]))

Where a break cannot be cut safely (inside `try`/`with`, closure cells, a
value that only exists in the trace) the frame runs eagerly instead, and the
functions it calls are still compiled.
"""

import contextlib
import dataclasses
import functools
import inspect
import itertools
import types
from dataclasses import dataclass, field

import torch
from bytecode import Bytecode, Instr

import stage2_symbolic_vm.vm as vm
from stage1_eval_frame import call_unhooked, skip_code
from stage1_eval_frame.logs import get_logger
from stage2_symbolic_vm.dynamic_shapes import shapes
from stage2_symbolic_vm.errors import CannotReconstruct, Unsupported
from stage2_symbolic_vm.sources import LocalSource
from stage2_symbolic_vm.trace import Trace
from stage2_symbolic_vm.variables import LazyVariable
from stage3_guards import (
    CompileError,
    GuardError,
    GuardFunction,
    SkipFrame,
    build_guards,
    compile_guards,
)
from stage3_guards.replay import argument_names

from . import breaks
from .backends import BackendCompilerFailed, origin
from .breaks import GraphBreak
from .bytecode_writer import GRAPH_OUT, Codegen, OutputIndex, call, load_global
from .cut import CannotCut, cut
from .fx_graph import CapturedGraph, build_graph
from .resume import ResumeFunction
from .tools import progress

graph_log = get_logger("graph")
_serial = itertools.count(1)
RESULT = "___result"
INSTALLED: list[tuple[dict, str]] = []  # (globals, name) of every compiled graph, for reset()


@dataclass(eq=False)
class CompiledFrame:
    """A cache entry of stage 3 (it reads `check`, `guards`, `replacement_for`), and what
    it holds: the new code, its graph (None when the frame ran no tensor op), the
    break it cut (if any) and the resume functions the new code calls."""

    original: types.CodeType
    code: types.CodeType
    guards: GuardFunction
    trace: Trace
    graph: CapturedGraph | None
    graph_break: GraphBreak | None = None
    resumes: list[ResumeFunction] = field(default_factory=list)

    def __post_init__(self):
        self.check = self.guards.check

    def replacement_for(self, G: dict, F):
        """The new code as a function of this call's globals and closure, called with the slots."""
        return types.FunctionType(self.code, G, self.code.co_name, None, F.__closure__)


# --- tracing the frame ------------------------------------------------------------------


class _Translator(vm.InstructionTranslator):
    """The stage-2 VM, counting how often the root frame reaches each instruction, and able
    to stop at one of them: how a break inside an inlined call is moved to the root's CALL."""

    def __init__(self, *args, stop_at=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.visits: dict[int, int] = {}
        self.stop_at = stop_at  # (offset, visit, Unsupported) or None

    def step(self, inst):
        if self.parent is None:
            visit = self.visits[inst.offset] = self.visits.get(inst.offset, 0) + 1
            if self.stop_at is not None and self.stop_at[:2] == (inst.offset, visit):
                original = self.stop_at[2]
                raise Unsupported(original.kind, original.reason)
        super().step(inst)


def start_translator(frame, stop_at=None) -> _Translator:
    """The VM set up for a frame, as `stage2_symbolic_vm.trace` sets it up; we run it ourselves
    to keep the returned Variable (its sources say how to rebuild it) and the visit counts.
    The locals are the frame's own argument slots by name: nothing to bind (a resume
    function's parameters may be names no `def` could have, as pytest's `@py_assert1`)."""
    code, function = frame.code, frame.function
    tx = _Translator(code, function.__globals__, Trace(code), stop_at=stop_at)
    tx.locals.update(
        {name: LazyVariable(value, LocalSource(name)) for name, value in frame.arguments.items()}
    )
    tx.bind_closure(function)
    return tx


def stop_at_root(frame, error: Unsupported, visits: dict) -> Unsupported:
    """A break inside an inlined call: trace again and stop *before* the root's CALL.

    The first trace already ran part of the callee, whose recorded ops and
    changes to lists would otherwise happen twice (once in the graph, once
    when the call runs in Python). torch/_dynamo restarts the same way
    (its "speculation log").
    """
    root = error.frames[0]
    tx = start_translator(frame, stop_at=(root.offset, visits[root.offset], error))
    try:
        tx.run()
    except Unsupported as again:
        again.frames = error.frames  # the user wants to see where it really stopped
        return again
    raise AssertionError("the second trace did not stop where the first did")


# --- the new code ------------------------------------------------------------------------


def convert_frame(frame, options) -> CompiledFrame:
    """Compile one frame (a cache miss). Raises Unsupported when it must run eagerly, and
    any other error (a bug of ours) after recording it, for explain() and the logs. With
    `fullgraph=True` nothing runs eagerly: every one of these is a CompileError that names
    the frame (torch raises `Unsupported` there too)."""
    code = frame.code
    try:
        with progress.compiling(f"compiling {code.co_qualname}"):  # shown when it takes long
            return convert_frame_or_raise(frame, options)
    except (CompileError, SkipFrame, shapes.ConstraintViolationError):
        raise
    except Unsupported as error:
        if options.fullgraph:  # a break the VM found, an error it saw, a result not rebuilt
            raise breaks.GraphBreakError(breaks.from_unsupported(error, code)) from error
        raise
    except Exception as error:
        kind = "unguardable_value" if isinstance(error, GuardError) else "compiler_error"
        reason = str(error) if isinstance(error, GuardError) else f"{type(error).__name__}: {error}"
        cause = breaks.GraphBreak(
            kind, reason, code.co_qualname, code.co_filename, code.co_firstlineno, eager_frame=True
        )
        options.record_break(code, cause)
        if options.fullgraph:
            raise breaks.GraphBreakError(cause) from error
        raise


def convert_frame_or_raise(frame, options) -> CompiledFrame:
    progress.step("tracing")
    while True:  # once, or twice when the first symbol appears late (shapes.RestartTrace)
        tx = start_translator(frame)
        try:
            result = tx.run()
            break
        except shapes.RestartTrace:
            continue
        except Unsupported as error:
            return convert_break(frame, options, error, tx.visits)
    if nothing_to_compile(frame, options, tx):
        raise SkipFrame("no tensor operation and no change outside the frame: nothing to compile")
    cg = Codegen(OutputIndex(), frame.globals)
    try:
        cg.reconstruct(result)
        if tx.side_effects:  # the result first (it may read what the changes overwrite)
            cg.add(Instr("STORE_FAST", RESULT))
            tx.side_effects.codegen(cg)
            cg.add(Instr("LOAD_FAST", RESULT))
    except CannotReconstruct as why:  # e.g. returns an iterator part-way through its items
        code = frame.code
        cause = breaks.GraphBreak(
            "unreconstructable_value",
            f"the new code cannot rebuild the frame's result or its changes: {why}",
            *(code.co_qualname, code.co_filename, code.co_firstlineno),
            eager_frame=True,
        )
        options.record_break(code, cause)
        raise Unsupported("unsupported_value", cause.reason) from None
    cg.add(Instr("RETURN_VALUE"))
    return finish(frame, options, tx.trace, cg, None, [])


def nothing_to_compile(frame, options, tx) -> bool:
    """A frame the hook met on its own (not one the user compiled) whose trace has no operation
    and changed nothing outside: an audit hook, a config helper called after a graph break.
    torch/_dynamo raises `SkipFrame("because no content in function call")` for these: guards
    and new code would only slow the frame down, and a guard on an argument such as an audit
    event's name would recompile on every new value."""
    if frame.code in options.entry_codes or tx.side_effects:
        return False
    return all(node.op == "input" for node in tx.trace.nodes)


def convert_break(frame, options, error, visits) -> CompiledFrame:
    code = frame.code
    graph_break = breaks.from_unsupported(error, code)
    if options.fullgraph:  # the cache would run the frame eagerly; the callback raises this
        raise breaks.GraphBreakError(graph_break) from error
    if error.kind == "eager_error" or error.state is None:
        # The user's own error: eager raises it (stage 3 runs this call eagerly, and checks
        # that it does raise it). Said, not silent: explain() shows it here.
        options.record_break(code, dataclasses.replace(graph_break, eager_frame=True))
        raise error
    if len(error.frames) > 1:
        error = stop_at_root(frame, error, visits)
    try:
        cg, resumes = cut(code, error.state, frame.globals, error.side_effects)
    except (CannotCut, CannotReconstruct) as why:
        kind = why.kind if isinstance(why, CannotCut) else "unreconstructable_value"
        eager = breaks.frame_runs_eagerly(kind, str(why), graph_break)
        options.record_break(code, eager)
        raise error from None  # stage 3 runs this frame eagerly from now on
    entry = finish(frame, options, error.trace, cg, graph_break, resumes)
    options.record_break(code, graph_break)
    return entry


def finish(frame, options, trace, cg, graph_break, resumes) -> CompiledFrame:
    """Compile the graph with the backend, assemble the new code, build the guards."""
    code = frame.code
    captured = build_graph(trace, list(cg.graph_outputs))
    head = [Instr("COPY_FREE_VARS", len(code.co_freevars))] if code.co_freevars else []
    head.append(Instr("RESUME", 0))
    if captured is not None:
        name = install_compiled_graph(frame, options, captured)
        call_graph = Codegen({})
        call_graph.push_callable(lambda: call_graph.add(load_global(name)))
        call_graph.read_once(captured.sources)
        for source in captured.sources:
            call_graph.load_source(source)
        call_graph.add(*call(len(captured.sources)), Instr("STORE_FAST", GRAPH_OUT))
        head += call_graph.instructions
    new_code = assemble(code, head + cg.instructions)
    L, G, F = frame.arguments, frame.globals, frame.function
    guards = build_guards(trace.assumptions, L, G, F, shapes=trace.shapes)
    guard_function = compile_guards(guards, code.co_name)
    entry = CompiledFrame(code, new_code, guard_function, trace, captured, graph_break, resumes)
    # A resume function is compiled like the frame it came from, even where that frame's
    # file is a library's (a compiled function or module forward that lives in site-packages).
    options.add_entry_codes(*(resume_fn.code for resume_fn in resumes))
    options.record_frame(entry)
    return entry


def install_compiled_graph(frame, options, captured: CapturedGraph) -> str:
    """Hand the graph to the backend; put the result in the frame's globals, as Dynamo does."""
    L, G, F = frame.arguments, frame.globals, frame.function
    # As torch passes them: this call's tensors, and the SymInt of each symbolic int input
    # (its placeholder's example value; at run time the graph gets the int itself).
    example_inputs = [
        example if isinstance(example, torch.SymInt) else source.get(L, G, F)
        for source, example in zip(captured.sources, captured.examples, strict=True)
    ]
    graph_log.info(
        "the graph of %s goes to the backend %s", frame.code.co_qualname, origin(options.backend)
    )
    progress.step("the backend compiles the graph")
    try:
        with backend_context(captured):
            compiled = options.backend(captured.gm, example_inputs)
    except Exception as error:  # raised to the caller, on every call (a CompileError)
        where = f"{frame.code.co_qualname} ({frame.code.co_filename}:{frame.code.co_firstlineno})"
        raise BackendCompilerFailed(options.backend, error, where) from error
    where = f"{frame.code.co_qualname} ({frame.code.co_filename}:{frame.code.co_firstlineno})"
    if not callable(compiled):
        error = TypeError(f"it returned {compiled!r}, not a callable that runs the graph")
        raise BackendCompilerFailed(options.backend, error, where)
    name = f"__compiled_fn_{next(_serial)}"
    # The graph must not be traced again: run it with the hook off.
    runner = functools.partial(call_unhooked, compiled)

    def first_call(*args):
        """Check, once, that the backend's callable returns one value per graph output (the
        new bytecode indexes them): a clear error, not an IndexError in generated code."""
        with progress.compiling(f"first call of {frame.code.co_qualname}'s graph"):
            outputs = runner(*args)  # a backend may compile on it: stage 6 its kernels
        expected = len(captured.outputs)
        if not isinstance(outputs, (tuple, list)) or len(outputs) != expected:
            got = f"{len(outputs)} values" if isinstance(outputs, (tuple, list)) else outputs
            error = TypeError(f"its callable returned {got!r}; the graph has {expected} outputs")
            raise BackendCompilerFailed(options.backend, error, where)
        frame.globals[name] = runner  # later calls go straight to the compiled graph
        return outputs

    frame.globals[name] = first_call
    INSTALLED.append((frame.globals, name))
    return name


def backend_context(captured: CapturedGraph):
    """For a graph with symbols, torch's TracingContext holding its FakeTensorMode: torch's
    own backends (inductor, aot_eager) find the ShapeEnv there, and the symbolic FakeTensors
    of this call's tensors (`from_tensor` keeps one per tensor), as under torch.compile."""
    fake_mode = getattr(captured.shapes, "fake_mode", None)
    if fake_mode is None:
        return contextlib.nullcontext()
    from torch._guards import TracingContext, tracing

    return tracing(TracingContext(fake_mode))


def assemble(original, instructions) -> types.CodeType:
    """A code object that takes the frame's argument slots as plain positional parameters."""
    bytecode = Bytecode(instructions)
    bytecode.argnames = argument_names(original)
    bytecode.argcount = len(bytecode.argnames)
    bytecode.freevars = list(original.co_freevars)
    bytecode.flags = original.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    bytecode.name, bytecode.qualname = original.co_name, original.co_qualname
    bytecode.filename, bytecode.first_lineno = original.co_filename, original.co_firstlineno
    new_code = bytecode.to_code()
    skip_code(new_code)  # it calls the graph itself; the hook must not compile it again
    return new_code
