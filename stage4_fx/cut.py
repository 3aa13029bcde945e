"""Cutting a frame at a graph break: the new code after the graph call.

At a break before an instruction the VM could not trace, `convert.py` has
the graph so far; this file writes what the new code does after calling it
(torch/_dynamo/symbolic_convert.py: `break_graph_if_unsupported`,
`generic_jump` and `create_call_resume_at`):

* rebuild the live locals and the stack below the instruction (bytecode_writer.py),
* replay the changes the trace made to objects outside the frame,
* run that one instruction in plain Python,
* call the resume function holding the rest of the bytecode (resume.py)
  with what the original frame would hold after it.

A branch on a value the VM does not know (`if x.sum() > 0:`) gets a resume
function per side (`cut_at_jump`). Where a break cannot be cut safely, inside
`try`/`with`, a function that reads its own frame, an instruction we cannot
resume after, `CannotCut` says why and the frame runs eagerly instead.
"""

import dis
import inspect
import sys
import types

from bytecode import FreeVar, Instr, Label

from stage2_symbolic_vm import variables
from stage2_symbolic_vm.python.iterators import IteratorVariable
from stage2_symbolic_vm.variables import NullVariable

from .bytecode_writer import (
    PY312,
    PY313,
    Codegen,
    OutputIndex,
    call,
    load_closure,
    make_function_instructions,
    to_bool,
)
from .resume import (
    ITERATOR,
    NULL,
    VALUE,
    ResumeFunction,
    Slot,
    abstract_instructions,
    argument_order,
    live_locals,
    original_position,
    resume_function,
)

RESUME_ARGUMENTS = "___resume_args"  # at a branch: the tuple both sides call their resume with


class CannotCut(Exception):
    """The break cannot be cut here: `kind` (a key of breaks.FRAME_KINDS) says why."""

    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind = kind


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
# locals (the live ones only, and the stack's), not the function's. `dir` only without
# arguments: `dir(obj)` lists obj's attributes.
FRAME_READERS = {"locals", "vars", "dir", "eval", "exec"}
# Functions that return their caller's frame (or every frame), known by what the code's
# globals hold: `sys._getframe()`, `inspect.stack()`, or the function imported by name.
# By the attribute's name alone, `torch.stack(...)` read as `inspect.stack()`.
FRAME_FUNCTIONS = (sys._getframe, inspect.currentframe, inspect.stack)


def reads_its_own_frame(code, globals_) -> str | None:
    """The name of a builtin or function the code calls that reads its frame, or None."""
    instructions = list(dis.get_instructions(code))
    for index, inst in enumerate(instructions):
        if inst.opname in ("LOAD_GLOBAL", "LOAD_NAME") and inst.argval in FRAME_READERS:
            if inst.argval == "dir" and called_with_arguments(instructions, index):
                continue
            return f"{inst.argval}()"
        if frame_function(instructions, index, globals_):
            return f"{inst.argval}()"
    return None


def frame_function(instructions, index, globals_) -> bool:
    """Whether the instruction at `index` loads one of FRAME_FUNCTIONS: a global, or an
    attribute of a global module; a module the globals do not hold (imported inside the
    function) by its name, `sys` or `inspect`."""
    inst = instructions[index]
    if inst.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
        value = globals_.get(inst.argval)
    elif inst.opname in ("LOAD_ATTR", "LOAD_METHOD") and index > 0:
        owner = instructions[index - 1].argval
        module = globals_.get(owner) if isinstance(owner, str) else None
        if module is None and owner in ("sys", "inspect"):
            module = sys if owner == "sys" else inspect
        value = getattr(module, inst.argval, None) if isinstance(module, types.ModuleType) else None
    else:
        return False
    return any(value is function for function in FRAME_FUNCTIONS)


def called_with_arguments(instructions, index) -> bool:
    """Whether the builtin loaded at `index` is called there with at least one argument.

    A LOAD_GLOBAL that pushes a NULL loads the callable of a call `f(...)`:
    its call is the first whose argument count is the number of values pushed
    since (a call nested in the arguments has its own callable above them).
    Where the walk cannot be sure (a jump, `f(*args)`), the answer is no.
    """
    if instructions[index].opname != "LOAD_GLOBAL" or not instructions[index].arg & 1:
        return False  # not called right here: `d = dir`, then `d()`
    depth = 0  # values pushed above the callable since
    for inst in instructions[index + 1 :]:
        if inst.opname in ("PRECALL", "CALL") and depth == inst.arg:  # 3.11: PRECALL first
            return inst.arg > 0
        if inst.opcode in dis.hasjrel + dis.hasjabs or inst.opname == "CALL_FUNCTION_EX":
            return False
        depth += dis.stack_effect(inst.opcode, inst.arg)
    return False


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
    if introspection := reads_its_own_frame(code, globals_):
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
    cg.add(*call(len(live) + arguments(kinds)), Instr("RETURN_VALUE"))
    return cg, [resume]


def slot_kinds(prefix, state, live) -> tuple[Slot, ...]:
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
            and var.exact_snapshot()  # else the iterator itself (a list's: over the list)
            and (sum(v is var for v in held) == 1)
        ):
            kinds.append(ITERATOR)
        else:
            kinds.append(VALUE)
    return tuple(kinds)


def push_stack(cg: Codegen, prefix, kinds):
    """Push the stack slots below the instruction, each as its kind passes it."""
    for var, slot in zip(prefix, kinds[: len(prefix)], strict=True):
        slot.push(cg, var)


def arguments(kinds) -> int:
    """How many of the slots are passed to the resume function (a NULL is not)."""
    return sum(slot.argument for slot in kinds)


def simple_instruction(instructions, index, abstract, position_of):
    """(values popped, kinds of the values pushed, instructions to emit, next instruction).

    The emitted instructions are copies of the original ones (line numbers
    kept, so a traceback points at the user's line).
    """
    inst = instructions[index]
    if index + 1 == len(instructions):  # `raise` at the very end: nothing to resume after
        raise CannotCut("unresumable_instruction", f"{inst.opname}, the last instruction")
    after = instructions[index + 1]
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


def callable_slots(null: bool) -> tuple[Slot, ...]:
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
    cg.add(Instr("BUILD_TUPLE", len(live) + arguments(kinds)))
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
