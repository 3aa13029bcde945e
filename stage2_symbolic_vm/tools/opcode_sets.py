"""The opcodes of this Python, and those the VM has a handler for (`handled_opnames`).

Kept apart from coverage.py, which the package imports nothing from, so that
`python -m stage2_symbolic_vm.tools.coverage` runs a module not imported yet.
"""

import dis

from ..vm import ALIASES, InstructionTranslator


def real_opnames() -> set[str]:
    """The opcodes bytecode can hold on this Python, as `dis` shows them.

    3.12's opmap also lists pseudo-instructions (>= 256) that the compiler
    replaces before emitting bytecode, and INSTRUMENTED_* variants that
    sys.monitoring swaps in at run time and `dis` shows under their base names.
    """
    return {
        name
        for name, opcode in dis.opmap.items()
        if opcode < 256 and not name.startswith("INSTRUMENTED_")
    }


def handled_opnames() -> set[str]:
    """Every opname the VM has a handler for, on this Python version."""
    return {
        name for name in real_opnames() if hasattr(InstructionTranslator, ALIASES.get(name, name))
    }
