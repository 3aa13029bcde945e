"""Chapter 2 in miniature: run real bytecode on names instead of values, and record each op."""

import dis


class TinyVM:
    """A stack machine, one method per opcode as in stage 2's VM. An input is a name (a str)."""

    def __init__(self, fn, *args):
        self.code, self.stack, self.trace = fn.__code__, [], []
        self.locals = dict(zip(self.code.co_varnames, args, strict=False))
        self.instructions = list(dis.get_instructions(self.code))
        self.ip = 0  # the instruction pointer: the index of the next instruction

    def run(self):
        while True:
            inst = self.instructions[self.ip]
            self.ip += 1
            print(f"  {inst.opname:<13} {inst.argrepr:<4} stack {self.stack}")
            if inst.opname == "RETURN_VALUE":
                return self.stack.pop()
            if inst.opname != "RESUME":  # CPython's marker at the start of a frame
                getattr(self, inst.opname)(inst)  # the step: one method per opcode

    def LOAD_FAST(self, inst):
        self.stack.append(self.locals[inst.argval])

    def LOAD_CONST(self, inst):
        self.stack.append(inst.argval)

    def BINARY_OP(self, inst):  # the operation is not done but recorded; a new name stands for it
        right, left = self.stack.pop(), self.stack.pop()
        self.trace.append(f"t{len(self.trace)} = {left} {inst.argrepr} {right}")
        self.stack.append(f"t{len(self.trace) - 1}")


if __name__ == "__main__":
    result = (vm := TinyVM(lambda x: x * 2 + 1, "x")).run()
    print("trace:", *vm.trace, f"return {result}", sep="\n  ")
