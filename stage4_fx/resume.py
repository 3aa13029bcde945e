"""Resume functions: the rest of a function, after a graph break, as a function of its own.

At a break the new code runs the graph so far, runs the one instruction the
VM could not trace, and then calls a resume function with what the original
frame would hold at the next instruction: its stack and its live locals.

    def __resume_at_30_1(x, y, ___stack0):     # live locals first, then the stack items
        <push ___stack0 back on the stack>
        JUMP_FORWARD to the instruction at offset 30
        <the original bytecode, unchanged>

It keeps the *whole* original bytecode and jumps into it, so loops that
jump back, and later breaks, need nothing special (torch/_dynamo/
resume_execution.py does the same: `ContinueExecutionCache.generate`). It is
an ordinary function: the frame hook catches it and compiles it in turn.
Each stack slot is one of three kinds, each a small class below that knows
both sides of the call: how the new code passes the value (`push`) and how
the prologue puts it back (`restore`):

    NULL      the NULL beside a callable: not a value, so the prologue pushes it again
    VALUE     any value: passed as an argument, pushed back with LOAD_FAST
    ITERATOR  a loop's iterator: passed as the *list* of its remaining items and
              turned back into an iterator by GET_ITER, so the VM, tracing the
              resume function, sees a list and unrolls the rest of the loop

Which locals are live (may be read before written) is a small backward
dataflow analysis over the bytecode; dead locals are not passed, so a value
that cannot be rebuilt in Python (a helper made inside the trace) only
blocks the break while it is still needed.
"""

import dis
import inspect
import itertools
from dataclasses import dataclass

from bytecode import Bytecode, CellVar, FreeVar, Instr, Label, TryBegin, TryEnd

_PROLOGUE_OPS = {"COPY_FREE_VARS", "MAKE_CELL", "RESUME"}
# How an instruction uses the locals its argument names, in the order it does (3.13's
# superinstructions name two: LOAD_FAST_LOAD_FAST's argument is ("x", "y")).
_LOCAL_ACCESS = {
    "LOAD_FAST": "r", "LOAD_FAST_CHECK": "r", "LOAD_FAST_AND_CLEAR": "r",
    "STORE_FAST": "w", "DELETE_FAST": "w",
    "LOAD_FAST_LOAD_FAST": "rr", "STORE_FAST_LOAD_FAST": "wr", "STORE_FAST_STORE_FAST": "ww",
}  # fmt: skip
_serial = itertools.count(1)


class Slot:
    """A kind of stack slot that a resume function rebuilds (one object per kind)."""

    argument = True  # whether the resume function takes it as a parameter

    def push(self, cg, var):
        """Emit, in the new code, the argument that carries `var` (a stage-2 Variable)."""
        raise NotImplementedError

    def restore(self, name: str) -> list[Instr]:
        """The prologue's instructions that put the slot back, from the parameter `name`."""
        raise NotImplementedError


class ValueSlot(Slot):
    """Any other value, passed as it is."""

    def push(self, cg, var):
        cg.reconstruct(var)

    def restore(self, name):
        return [Instr("LOAD_FAST", name)]

    def __repr__(self):
        return "VALUE"


class NullSlot(Slot):
    """Not a value: nothing is passed, and the prologue pushes a new NULL."""

    argument = False

    def push(self, cg, var):
        pass

    def restore(self, name):
        return [Instr("PUSH_NULL")]

    def __repr__(self):
        return "NULL"


class IteratorSlot(Slot):
    """A loop's iterator held nowhere else, passed as the list of its remaining items."""

    def push(self, cg, var):
        cg.build_sequence(var.remaining(), "BUILD_LIST")

    def restore(self, name):
        return [Instr("LOAD_FAST", name), Instr("GET_ITER")]

    def __repr__(self):
        return "ITERATOR"


NULL, VALUE, ITERATOR = NullSlot(), ValueSlot(), IteratorSlot()


@dataclass(frozen=True)
class ResumeFunction:
    """The code of a resume function and the layout of its arguments."""

    code: object
    offset: int  # where in the original bytecode it continues
    stack: tuple[Slot, ...]  # the kind of each stack slot it rebuilds: NULL, VALUE or ITERATOR
    live: tuple[str, ...]  # the live locals it takes after the stack items

    @property
    def name(self) -> str:
        return self.code.co_name


def abstract_instructions(code) -> tuple[Bytecode, dict[int, int]]:
    """The `bytecode` library's view of `code`, and offset -> position of each instruction in it.

    The library drops offsets (it works with labels), so we pair its
    instructions with `dis`'s, which keep them, one for one.
    """
    abstract = Bytecode.from_code(code)
    for item in abstract:  # 3.13: an argument that is also a cell, loaded for a closure
        if isinstance(item, Instr) and item.name == "LOAD_FAST" and item.arg in code.co_cellvars:
            # CPython 3.13 writes LOAD_CLOSURE as LOAD_FAST of the cell's slot, which for an
            # argument is the argument's own: the library reads the local's name. It is the
            # cell (a cell variable's plain reads are LOAD_DEREF), as in 3.11 and 3.12.
            item.arg = CellVar(item.arg)
    offsets = [i.offset for i in dis.get_instructions(code) if i.opname != "EXTENDED_ARG"]
    positions = [p for p, item in enumerate(abstract) if isinstance(item, Instr)]
    assert len(offsets) == len(positions), (code.co_name, len(offsets), len(positions))
    return abstract, dict(zip(offsets, positions, strict=True))


def live_locals(code, offset: int) -> set[str]:
    """The locals that may be read, before being assigned, from `offset` on."""
    abstract, position_of = abstract_instructions(code)
    live_in = _liveness(list(abstract))
    return live_in[position_of[offset]] | {first_argument(code)} - {None}


def first_argument(code) -> str | None:
    """The local that `super()` without arguments reads, if the code may call it: CPython
    takes the frame's first local (`super_init_without_args`), without naming it in the
    bytecode. A resume function must receive it first, and always."""
    if "__class__" in code.co_freevars and code.co_argcount:
        return code.co_varnames[0]
    return None


def argument_order(code):
    """The sort key of a resume function's live locals: `first_argument` first."""
    first = first_argument(code)
    return lambda name: name != first


def _liveness(items: list) -> dict[int, set[str]]:
    """Backward dataflow: live_in[i] = reads[i] | (live_out[i] - writes[i]), to a fixed point."""
    label_at: dict[Label, int] = {}
    for position, item in enumerate(items):
        if isinstance(item, Label):
            label_at[item] = position
    successors: dict[int, list[int]] = {}
    handler = None  # the `except` target covering the instructions we walk over
    for position, item in enumerate(items):
        if isinstance(item, TryBegin):
            handler = label_at[item.target]
        elif isinstance(item, TryEnd):
            handler = None
        elif isinstance(item, Instr):
            successors[position] = _successors(item, position, label_at, handler)
    live_in = {position: set() for position in successors}
    changed = True
    while changed:
        changed = False
        for position in reversed(list(successors)):
            item = items[position]
            live = set()
            for successor in successors[position]:
                live |= _live_at(successor, items, live_in)
            for access, name in reversed(_local_accesses(item)):
                if access == "w":
                    live.discard(name)
                else:
                    live.add(name)
            if live != live_in[position]:
                live_in[position], changed = live, True
    return live_in


def _local_accesses(instr: Instr) -> list[tuple[str, str]]:
    """("r" or "w", name) for each local `instr` reads or writes, in order. 3.13 loads a cell
    with LOAD_FAST (its argument a CellVar or FreeVar, not a name) for a closure: not a local."""
    access = _LOCAL_ACCESS.get(instr.name)
    if access is None:
        return []
    names = instr.arg if len(access) == 2 else (instr.arg,)
    return [(a, name) for a, name in zip(access, names, strict=True) if isinstance(name, str)]


def _successors(instr: Instr, position: int, label_at, handler) -> list[int]:
    following = [] if instr.is_final() or instr.is_uncond_jump() else [position + 1]
    jumps = [label_at[instr.arg]] if instr.has_jump() else []
    return following + jumps + ([handler] if handler is not None else [])


def _live_at(position: int, items: list, live_in: dict) -> set[str]:
    """live_in of the first instruction at or after `position` (labels and markers are skipped)."""
    while position < len(items) and position not in live_in:
        position += 1
    return live_in.get(position, set())


_cache: dict[tuple, ResumeFunction] = {}
_made: dict = {}  # resume code -> (original code, {offset in it: offset in the original})


def resume_function(code, offset: int, stack: tuple, live: tuple) -> ResumeFunction:
    """The resume function continuing `code` at `offset` (made once, then cached)."""
    key = (code, offset, stack, live)
    if key not in _cache:
        _cache[key] = _make(code, offset, stack, live)
    return _cache[key]


def clear_cache():
    _cache.clear()
    _made.clear()


def original_position(code, offset: int) -> tuple:
    """(code, offset) in the original function, for a place in a resume function.

    A break inside a resume function continues the *original* bytecode, not a
    copy of the copy: otherwise each iteration of a loop with a break would
    make a new, longer resume function (torch/_dynamo does the same in
    `ContinueExecutionCache.generate_based_on_original_code_object`).
    """
    if code not in _made:
        return code, offset
    original, offsets = _made[code]
    return original, offsets.get(offset)  # None: in the prologue, before the original code


def _make(code, offset, stack, live) -> ResumeFunction:
    abstract, position_of = abstract_instructions(code)
    target = Label()
    abstract.insert(position_of[offset], target)
    names = [f"___stack{i}" for i in range(len(stack))]  # a slot's name keeps its place
    while abstract and isinstance(abstract[0], Instr) and abstract[0].name in _PROLOGUE_OPS:
        del abstract[0]  # the original prologue; ours comes first
    # The frame's cells come in the closure, so that functions made before the break and
    # after it share them: cell variables become free variables of the resume function.
    for item in abstract:
        if isinstance(item, Instr) and isinstance(item.arg, CellVar):
            item.arg = FreeVar(item.arg.name)
    abstract.freevars = [*code.co_cellvars, *code.co_freevars]
    abstract.cellvars = []
    prologue = [Instr("COPY_FREE_VARS", len(abstract.freevars))] if abstract.freevars else []
    prologue.append(Instr("RESUME", 0))
    for slot, slot_name in zip(stack, names, strict=True):
        prologue += slot.restore(slot_name)
    prologue.append(Instr("JUMP_FORWARD", target))
    abstract[:0] = prologue
    name = f"__resume_at_{offset}_{next(_serial)}"
    abstract.argnames = [*live, *(n for n, slot in zip(names, stack, strict=True) if slot.argument)]
    abstract.argcount = len(abstract.argnames)
    abstract.posonlyargcount = abstract.kwonlyargcount = 0
    abstract.flags &= ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    abstract.name = abstract.qualname = name
    abstract.docstring = None
    new_code = abstract.to_code()
    _made[new_code] = (code, _offset_map(new_code, len(prologue), code))
    return ResumeFunction(new_code, offset, tuple(stack), tuple(live))


def _offset_map(new_code, prologue_length: int, original) -> dict[int, int]:
    """After our prologue, the resume function's instructions are the original's, one for one."""
    new = [i for i in dis.get_instructions(new_code) if i.opname != "EXTENDED_ARG"]
    old = [i for i in dis.get_instructions(original) if i.opname != "EXTENDED_ARG"]
    while old and old[0].opname in _PROLOGUE_OPS:
        old.pop(0)
    new = new[prologue_length:]
    assert [i.opname for i in new] == [i.opname for i in old], original.co_name
    return {n.offset: o.offset for n, o in zip(new, old, strict=True)}
