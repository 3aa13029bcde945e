"""Control flow beyond jumps and loops: 3.11's `and`/`or`, generators, `with`, `*rest = ...`.

These handlers are methods of the InstructionTranslator (vm.py), kept in a file of
their own because a small model needs none of them (vm.py has the jumps, the `for`
loop and `return`): a generator's frame pauses at `yield` and resumes when its
consumer asks for the next item, `yield from` forwards items with SEND, a `with`
block runs its manager's own `__enter__` and `__exit__` in the VM, and 3.13 checks
every condition with TO_BOOL first.
"""

import inspect
import operator
import sys

from ..errors import ObservedException, Unsupported
from ..python import operators
from ..python.exceptions import ExceptionVariable
from ..python.iterators import GeneratorVariable
from ..python.sequences import ListVariable
from ..sources import BuiltinSource
from ..variables import ConstantVariable
from .exceptions import Reraised

PY312 = sys.version_info >= (3, 12)


class ControlFlow:
    """The control-flow handlers of InstructionTranslator (one method per opcode)."""

    # --- conditions ---------------------------------------------------------------------------

    def JUMP_IF_FALSE_OR_POP(self, inst):  # 3.11 only: `a and b`
        if not self.truth(self.stack[-1]):
            self.jump(inst.argval)
        else:
            self.pop()

    def JUMP_IF_TRUE_OR_POP(self, inst):  # 3.11 only: `a or b`
        if self.truth(self.stack[-1]):
            self.jump(inst.argval)
        else:
            self.pop()

    def TO_BOOL(self, inst):
        # 3.13 turns a value into a bool before each conditional jump and `not` (compile.c
        # emits it nowhere else). Those handlers ask the value's truth themselves, so this one
        # leaves the value as it is, and a branch on a tensor stops the VM at the jump, as on
        # 3.11 and 3.12 (torch/_dynamo's TO_BOOL does the same). Stage 4 writes TO_BOOL again
        # before a jump or `not` it emits.
        following = next(
            i.opname for i in self.instructions[self.ip :] if i.opname != "EXTENDED_ARG"
        )
        if following not in ("POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE", "UNARY_NOT"):
            raise Unsupported("unsupported_opcode", f"TO_BOOL before {following}")

    # --- unpacking with a starred target: `first, *rest = xs` ---------------------------------

    def UNPACK_EX(self, inst):
        before, after = inst.arg & 0xFF, inst.arg >> 8
        items = self.pop().unpack(self)
        if len(items) < before + after:
            raise ObservedException(ValueError(f"not enough values to unpack ({len(items)})"))
        rest = len(items) - after
        self.stack.extend(reversed(items[rest:]))
        self.push(ListVariable(items[before:rest]))
        self.stack.extend(reversed(items[:before]))

    # --- generators ---------------------------------------------------------------------------

    def start_generator(self, fn, child):
        """A call of a generator function: a generator whose frame, `child`, runs up to each
        `yield` when the consumer asks for an item (a coroutine is not traced)."""
        if not fn.code.co_flags & inspect.CO_GENERATOR:
            raise Unsupported("unsupported_value", f"{fn.name} is a coroutine")
        return GeneratorVariable(child)

    def RETURN_GENERATOR(self, inst):
        # The frame of a generator starts here when first resumed; the POP_TOP after this
        # pops the value that resuming sent (None), so push it.
        self.push(ConstantVariable(None))

    def YIELD_VALUE(self, inst):
        self.yielded = self.pop()  # GeneratorVariable.next_item takes it, and resumes us later
        self.done = True

    def GET_YIELD_FROM_ITER(self, inst):  # `yield from it`
        self.push(self.pop().iterate(self))

    def SEND(self, inst):
        # `yield from`: the next item of the iterator below is yielded (YIELD_VALUE follows);
        # when it is exhausted, its return value takes its place and the loop is left.
        sent = self.pop()
        if not (sent.is_python_constant() and sent.as_python_constant() is None):
            raise Unsupported("unsupported_value", "`.send()` of a value into a generator")
        item = self.stack[-1].next_item(self)
        if item is not None:
            self.push(item)
            return
        returned = getattr(self.stack[-1], "returned", None) or ConstantVariable(None)
        if PY312:  # 3.12: [iterator, value]; END_SEND pops the iterator
            self.push(returned)
        else:  # 3.11: the value replaces the iterator
            self.stack[-1] = returned
        self.jump(inst.argval)

    def CLEANUP_THROW(self, inst):  # 3.12: an exception out of a `yield from` (never a throw())
        exception = self.pop().exception
        if not isinstance(exception, StopIteration):
            raise Reraised(exception)
        self.popn(2)
        self.push(self.wrap_constant_result(exception.value, "StopIteration.value"))

    def END_SEND(self, inst):
        value = self.pop()
        self.pop()
        self.push(value)

    def LOAD_ASSERTION_ERROR(self, inst):
        # reached only when an `assert` fails: the jump above skips it otherwise
        self.push(self.wrap(AssertionError, BuiltinSource("AssertionError")))

    # --- `with` blocks: the manager's own __enter__ and __exit__ run in the VM ----------------

    def BEFORE_WITH(self, inst):
        manager = self.pop()
        exit_ = manager.get_attr(self, "__exit__")
        self.push(exit_)
        self.push(manager.get_attr(self, "__enter__").call(self, [], {}))

    def WITH_EXCEPT_START(self, inst):
        # an exception leaves the block: __exit__(type, value, traceback) says whether to
        # swallow it; the stack is [__exit__, lasti, previous exception, exception]
        exception = self.stack[-1]
        kind = self.wrap(type(exception.exception), None)
        args = [kind, exception, ConstantVariable(None)]
        self.push(self.stack[-4].call(self, args, {}))

    # --- 3.12's "intrinsic" functions: a few rare instructions in one opcode ------------------

    def CALL_INTRINSIC_1(self, inst):
        if inst.argrepr == "INTRINSIC_LIST_TO_TUPLE":
            self.LIST_TO_TUPLE(inst)
        elif inst.argrepr == "INTRINSIC_UNARY_POSITIVE":
            self.push(operators.unary_op(self, operator.pos, self.pop()))
        elif inst.argrepr == "INTRINSIC_STOPITERATION_ERROR":
            # a StopIteration escaping a generator's body becomes a RuntimeError (PEP 479)
            error = self.pop().exception
            if isinstance(error, StopIteration):
                error = RuntimeError("generator raised StopIteration")
            self.push(ExceptionVariable(error))
        else:
            raise Unsupported("unsupported_opcode", f"no handler for {inst.argrepr}")
