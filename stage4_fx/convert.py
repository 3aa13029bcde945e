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
  of the bytecode, see resume.py) returns:

      ___graph_out = __compiled_fn_1(x)
      return __resume_at_30_2(x, ___graph_out[1], print(___graph_out[0]))

Where a break cannot be cut safely (inside `try`/`with`, closure cells, a
value that only exists in the trace) the frame runs eagerly instead, and the
functions it calls are still compiled.
"""

import contextlib
import dataclasses
import dis
import functools
import inspect
import itertools
import types
from dataclasses import dataclass, field

import torch
from bytecode import Bytecode, FreeVar, Instr, Label

import stage2_symbolic_vm.vm as vm
from stage1_eval_frame import call_unhooked, skip_code
from stage1_eval_frame.logs import get_logger
from stage2_symbolic_vm import shapes, variables
from stage2_symbolic_vm.errors import CannotReconstruct, Unsupported
from stage2_symbolic_vm.iterators import IteratorVariable
from stage2_symbolic_vm.sources import LocalSource
from stage2_symbolic_vm.trace import Trace
from stage2_symbolic_vm.variables import LazyVariable, NullVariable
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
from .codegen import (
    GRAPH_OUT,
    PY312,
    PY313,
    Codegen,
    call,
    load_closure,
    load_global,
    make_function_instructions,
    to_bool,
)
from .graph import CapturedGraph, build_graph
from .resume import (
    ITERATOR,
    NULL,
    VALUE,
    ResumeFunction,
    abstract_instructions,
    argument_order,
    live_locals,
    original_position,
    resume_function,
)

graph_log = get_logger("graph")
_serial = itertools.count(1)
RESULT = "___result"
RESUME_ARGUMENTS = "___resume_args"  # at a branch: the tuple both sides call their resume with
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


class CannotCut(Exception):
    """The break cannot be cut here: `kind` (a key of breaks.FRAME_KINDS) says why."""

    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind = kind


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
    any other error (a bug of ours) after recording it, for explain() and the logs."""
    try:
        return convert_frame_or_raise(frame, options)
    except (Unsupported, CompileError, SkipFrame, shapes.ConstraintViolationError):
        raise
    except Exception as error:
        code = frame.code
        kind = "unguardable_value" if isinstance(error, GuardError) else "compiler_error"
        reason = str(error) if isinstance(error, GuardError) else f"{type(error).__name__}: {error}"
        cause = breaks.GraphBreak(
            kind, reason, code.co_qualname, code.co_filename, code.co_firstlineno, eager_frame=True
        )
        options.record_break(code, cause)
        raise


def convert_frame_or_raise(frame, options) -> CompiledFrame:
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
    if error.kind == "eager_error" or error.state is None:
        # The user's own error: eager raises it (stage 3 runs this call eagerly). Said, not
        # silent: if the VM were wrong about the error, explain() would show it here.
        options.record_break(code, dataclasses.replace(graph_break, eager_frame=True))
        raise error
    if options.fullgraph:  # the cache will run the frame eagerly; the callback raises this instead
        raise breaks.GraphBreakError(graph_break)
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


class OutputIndex(dict):
    """Trace node -> index in the graph's output tuple, given out as codegen asks for them."""

    def __missing__(self, node):
        self[node] = len(self)
        return self[node]


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
        outputs = runner(*args)
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


# --- cutting the frame at a break --------------------------------------------------------

# Instructions the new code can run on their own: opname -> (values popped, values pushed).
# CALL, LOAD_GLOBAL and jumps are handled apart; anything else (a `for` step, a local
# access) is not cut.
SIMPLE_EFFECTS = {
    "BINARY_OP": (2, 1), "COMPARE_OP": (2, 1), "BINARY_SUBSCR": (2, 1), "CONTAINS_OP": (2, 1),
    "IS_OP": (2, 1), "UNARY_NEGATIVE": (1, 1), "UNARY_NOT": (1, 1), "UNARY_INVERT": (1, 1),
    "UNARY_POSITIVE": (1, 1), "GET_ITER": (1, 1), "STORE_ATTR": (2, 0), "STORE_SUBSCR": (3, 0),
    "DELETE_SUBSCR": (2, 0), "STORE_GLOBAL": (1, 0), "BINARY_SLICE": (3, 1), "STORE_SLICE": (4, 0),
    "CALL_INTRINSIC_1": (1, 1), "FORMAT_SIMPLE": (1, 1), "FORMAT_WITH_SPEC": (2, 1),
    "CONVERT_VALUE": (1, 1),
}  # fmt: skip
CONDITIONAL_JUMPS = {"POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "POP_JUMP_IF_NONE"}
CONDITIONAL_JUMPS |= {"POP_JUMP_IF_NOT_NONE"}
CONDITIONAL_JUMPS |= {f"POP_JUMP_{d}_IF_{c}" for d in ("FORWARD", "BACKWARD") for c in (
    "FALSE", "TRUE", "NONE", "NOT_NONE")}  # fmt: skip


# Builtins that see the frame that calls them: in a resume function they would see its
# locals (the live ones only, and the stack's), not the function's.
FRAME_READERS = {"locals", "vars", "eval", "exec"}
FRAME_READERS_BY_NAME = {"_getframe", "currentframe", "stack"}  # sys., inspect.


def reads_its_own_frame(code) -> str | None:
    """The name of a builtin or function the code calls that reads its frame, or None."""
    for inst in dis.get_instructions(code):
        if inst.opname in ("LOAD_GLOBAL", "LOAD_NAME") and inst.argval in FRAME_READERS:
            return f"{inst.argval}()"
        if inst.opname in ("LOAD_ATTR", "LOAD_METHOD") and inst.argval in FRAME_READERS_BY_NAME:
            return f"{inst.argval}()"
    return None


def cut(code, state, globals_, side_effects) -> tuple[Codegen, list[ResumeFunction]]:
    """The instructions after the graph call, at a break before `state`'s instruction:
    the live values pushed, the changes the trace made to outside objects, the instruction,
    then a call of the resume function."""
    if state.exception_handler is not None:
        raise CannotCut("break_in_block", "the break is inside a `try` or `with` block")
    frame_code = code
    code, offset = original_position(code, state.offset)
    if offset is None:
        raise CannotCut("stops_in_resume_prologue", "it stopped in a resume function's prologue")
    if introspection := reads_its_own_frame(code):
        raise CannotCut("reads_its_own_frame", f"the function calls `{introspection}`")
    instructions = [i for i in dis.get_instructions(code) if i.opname != "EXTENDED_ARG"]
    index = next(i for i, inst in enumerate(instructions) if inst.offset == offset)
    inst = instructions[index]
    abstract, position_of = abstract_instructions(code)
    cg = Codegen(OutputIndex(), globals_)
    own_cells = [name for name in code.co_cellvars if name not in frame_code.co_freevars]
    cg.make_cells({name: state.cells[name] for name in own_cells})
    closure = [*code.co_cellvars, *code.co_freevars]  # the resume function's, see resume.py
    if inst.opname in CONDITIONAL_JUMPS:
        jump = abstract[position_of[inst.offset]]
        following = instructions[index + 1]
        return cut_at_jump(code, state, inst, following, jump, cg, closure, side_effects)
    pops, results, emitted, after = simple_instruction(instructions, index, abstract, position_of)
    split = len(state.stack) - pops
    prefix, operands = state.stack[:split], state.stack[split:]
    live = bound_live_locals(code, state, after.offset)
    kinds = slot_kinds(prefix, state, live) + results
    resume = resume_function(code, after.offset, kinds, tuple(live))
    cg.push_callable(lambda: make_function(cg, closure, resume))
    for name in live:
        cg.reconstruct(state.locals[name])
    push_stack(cg, prefix, kinds)
    for var in operands:
        cg.reconstruct(var)
    # The values are on the stack (read before the changes, as the trace read them); now the
    # changes to outside objects, then the instruction sees the world as eager leaves it.
    side_effects.codegen(cg)
    cg.add(*emitted)
    cg.add(*call(len(live) + len(kinds) - kinds.count(NULL)), Instr("RETURN_VALUE"))
    return cg, [resume]


def slot_kinds(prefix, state, live) -> tuple[str, ...]:
    """NULL, VALUE or ITERATOR for each stack slot below the instruction (see resume.py).

    An iterator goes as the list of its remaining items unless it is also
    held elsewhere (`it = iter(xs)`): then it must stay one object.
    """
    held = [state.locals[name] for name in live] + list(state.stack)
    kinds = []
    for var in prefix:
        if isinstance(var, NullVariable):
            kinds.append(NULL)
        elif (
            isinstance(var, IteratorVariable)
            and var.remaining() is not None
            and (sum(v is var for v in held) == 1)
        ):
            kinds.append(ITERATOR)
        else:
            kinds.append(VALUE)
    return tuple(kinds)


def push_stack(cg: Codegen, prefix, kinds):
    """Push the stack slots below the instruction, as `slot_kinds` says (NULLs are not pushed)."""
    for var, kind in zip(prefix, kinds[: len(prefix)], strict=True):
        if kind == ITERATOR:
            cg.build_sequence(var.remaining(), "BUILD_LIST")
        elif kind == VALUE:
            cg.reconstruct(var)


def simple_instruction(instructions, index, abstract, position_of):
    """(values popped, kinds of the values pushed, instructions to emit, next instruction).

    The emitted instructions are copies of the original ones (line numbers
    kept, so a traceback points at the user's line).
    """
    inst, after = instructions[index], instructions[index + 1]
    this = abstract[position_of[inst.offset]].copy()
    if inst.opname == "CALL":  # KW_NAMES (and 3.11's PRECALL) before it were run by the VM
        before = [abstract[position_of[i.offset]].copy() for i in instructions[index - 2 : index]]
        extra = [] if PY312 else [before.pop()]  # 3.11: KW_NAMES, PRECALL, CALL
        if before and before[-1].name == "KW_NAMES":
            extra.insert(0, before[-1])
        return inst.arg + 2, (VALUE,), [*extra, this], after
    if inst.opname == "CALL_KW":  # 3.13: the keywords' names are on the stack, above the rest
        return inst.arg + 3, (VALUE,), [this], after
    if inst.opname == "CALL_FUNCTION_EX":
        return 3 + (inst.arg & 1), (VALUE,), [this], after
    if inst.opname == "LOAD_METHOD" or (PY312 and inst.opname == "LOAD_ATTR" and inst.arg & 1):
        # the attribute and a NULL are a shape CALL accepts: a plain LOAD_ATTR, the NULL in the
        # prologue
        name = this.arg[1] if PY312 else this.arg
        load = Instr("LOAD_ATTR", (False, name) if PY312 else name)
        return 1, callable_slots(null=True), [load], after
    if inst.opname == "UNARY_NOT":  # 3.13: the VM let its TO_BOOL pass; the value is as it was
        return 1, (VALUE,), [*to_bool(this), this], after
    if inst.opname in SIMPLE_EFFECTS:
        pops, pushes = SIMPLE_EFFECTS[inst.opname]
        return pops, (VALUE,) * pushes, [this], after
    if inst.opname == "LOAD_ATTR":
        return 1, (VALUE,), [this], after
    if inst.opname == "STORE_DEREF":  # a free variable's cell (the VM only breaks on those)
        return 1, (), [Instr("STORE_DEREF", FreeVar(this.arg.name))], after
    if inst.opname == "LOAD_GLOBAL":  # every version: the low bit asks for a NULL
        slots = callable_slots(null=this.arg[0])
        return 0, slots, [Instr("LOAD_GLOBAL", (False, this.arg[1]))], after
    if inst.opname == "UNPACK_SEQUENCE":
        return 1, (VALUE,) * inst.arg, [this], after
    if inst.opname == "FORMAT_VALUE":
        return 1 + bool(inst.arg & 0x04), (VALUE,), [this], after
    if inst.opname == "BUILD_STRING":
        return inst.arg, (VALUE,), [this], after
    raise CannotCut("unresumable_instruction", f"{inst.opname} at offset {inst.offset}")


def callable_slots(null: bool) -> tuple[str, ...]:
    """The kinds of the stack slots, bottom first, of a callable pushed with (or without) the
    NULL a call wants beside it: below it on 3.11 and 3.12, above it on 3.13."""
    if not null:
        return (VALUE,)
    return (VALUE, NULL) if PY313 else (NULL, VALUE)


def cut_at_jump(code, state, inst, following, original_jump, cg, closure, side_effects):
    """A branch on a value the VM does not know: both sides get their own resume function.

    The live locals and the stack are rebuilt into one tuple first (before the
    branch runs any Python), then each side calls its resume function with it.
    """
    prefix, condition = state.stack[:-1], state.stack[-1]
    live = sorted(
        set(bound_live_locals(code, state, following.offset))
        | set(bound_live_locals(code, state, inst.argval))
    )
    live.sort(key=argument_order(code))  # stable: the rest stays sorted by name
    kinds = slot_kinds(prefix, state, live)
    for name in live:
        cg.reconstruct(state.locals[name])
    push_stack(cg, prefix, kinds)
    cg.add(Instr("BUILD_TUPLE", len(live) + len(kinds) - kinds.count(NULL)))
    cg.add(Instr("STORE_FAST", RESUME_ARGUMENTS))
    cg.reconstruct(condition)
    side_effects.codegen(cg)
    taken = Label()
    if original_jump.name in ("POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE"):
        cg.add(*to_bool(original_jump))  # 3.13: the VM let the TO_BOOL before it pass
    cg.add(Instr(original_jump.name.replace("BACKWARD", "FORWARD"), taken))  # 3.11: ours go forward
    resumes = []
    for label, offset in ((None, following.offset), (taken, inst.argval)):
        if label is not None:
            cg.add(label)
        resume = resume_function(code, offset, kinds, tuple(live))
        resumes.append(resume)
        cg.push_callable(lambda resume=resume: make_function(cg, closure, resume))
        cg.add(Instr("LOAD_FAST", RESUME_ARGUMENTS), Instr("CALL_FUNCTION_EX", 0))
        cg.add(Instr("RETURN_VALUE"))
    return cg, resumes


def bound_live_locals(code, state, offset) -> list[str]:
    """The locals read later that hold a value now (an unbound one stays unbound)."""
    live = live_locals(code, offset)
    bound = [name for name, var in state.locals.items() if var is not variables.NULL]
    return sorted((name for name in bound if name in live), key=argument_order(code))


def make_function(cg: Codegen, closure: list[str], resume: ResumeFunction):
    """Push the resume function, with the frame's cells and free variables as its closure."""
    if closure:
        for name in closure:
            if f"___cell_{name}" in cg.temps.values():  # a cell this new code made
                cg.add(Instr("LOAD_FAST", f"___cell_{name}"))
            else:
                cg.add(load_closure(FreeVar(name)))
        cg.add(Instr("BUILD_TUPLE", len(closure)))
    cg.load_const(resume.code)
    cg.add(*make_function_instructions(0x08 if closure else 0))
