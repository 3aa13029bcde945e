"""`python -m stage2_symbolic_vm.tools.coverage`: which opcodes the VM handles on this Python.

An opcode counts as *reachable* in a function when control flow can get to it
from the first instruction: by falling through, by a jump, or, from an
instruction inside a `try`, by an exception to its handler (the VM runs the
code's own `except` blocks for the exceptions it raises).
"""

import dis
import sys
import types

from .opcode_sets import handled_opnames, real_opnames

# Instructions after which control never falls through to the next one.
NO_FALLTHROUGH = {"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE", "JUMP_FORWARD"}
NO_FALLTHROUGH |= {"JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT"}


def reachable_opnames(code: types.CodeType) -> set[str]:
    """Opnames ordinary control flow can reach in `code` and in the functions nested in it."""
    instructions = list(dis.get_instructions(code))
    index_of = {inst.offset: i for i, inst in enumerate(instructions)}
    handlers = dis.Bytecode(code).exception_entries
    seen, todo = set(), [0]
    while todo:
        i = todo.pop()
        if i in seen or i >= len(instructions):
            continue
        seen.add(i)
        inst = instructions[i]
        if inst.opcode in dis.hasjrel or inst.opcode in dis.hasjabs:
            todo.append(index_of[inst.argval])
        if inst.opname not in NO_FALLTHROUGH:
            todo.append(i + 1)
        todo += [index_of[e.target] for e in handlers if e.start <= inst.offset < e.end]
    names = {instructions[i].opname for i in seen}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= reachable_opnames(const)
    return names


def report() -> str:
    handled = handled_opnames()
    missing = sorted(real_opnames() - handled)
    return "\n".join(
        [
            f"Python {sys.version.split()[0]}: "
            f"the VM handles {len(handled)} of {len(real_opnames())} opcodes",
            "handled: " + " ".join(sorted(handled)),
            "not handled (each stops the VM with kind 'unsupported_opcode'): " + " ".join(missing),
        ]
    )


if __name__ == "__main__":
    print(report())
