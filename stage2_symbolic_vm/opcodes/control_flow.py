"""Control flow in the VM: jumps, loops, returns, generators, exceptions and `with` blocks.

These handlers are methods of the InstructionTranslator (vm.py), kept in a
file of their own because they move the instruction pointer or leave the
frame instead of computing a value: a jump sets `ip`, a `for` steps an
iterator Variable (loops unroll), `return` and `yield` end `run()`, and an
exception the traced code raises follows the frame's exception table into its
own `except`/`finally`, as CPython does.
"""

import sys

from ..errors import ObservedException, Unsupported
from ..python import operators
from ..python.builtins_table import class_of
from ..python.containers import ListVariable, is_none
from ..sources import BuiltinSource
from ..variables import UNKNOWN, ConstantVariable, ExceptionVariable, as_exception

PY312 = sys.version_info >= (3, 12)
PY313 = sys.version_info >= (3, 13)


class ControlFlow:
    """The control-flow handlers of InstructionTranslator (one method per opcode)."""

    # --- jumps ----------------------------------------------------------------------------

    def JUMP_FORWARD(self, inst):
        self.jump(inst.argval)

    def POP_JUMP_IF_FALSE(self, inst):
        if not self.truth(self.pop()):
            self.jump(inst.argval)

    def POP_JUMP_IF_TRUE(self, inst):
        if self.truth(self.pop()):
            self.jump(inst.argval)

    def POP_JUMP_IF_NONE(self, inst):
        if operators.is_same(self.pop(), ConstantVariable(None)):
            self.jump(inst.argval)

    def POP_JUMP_IF_NOT_NONE(self, inst):
        if not operators.is_same(self.pop(), ConstantVariable(None)):
            self.jump(inst.argval)

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

    # --- loops: iterators are lists of Variables, so loops unroll -----------------------------

    def GET_ITER(self, inst):
        self.push(self.pop().iterate(self))

    def FOR_ITER(self, inst):
        item = self.stack[-1].next_item(self)
        if item is not None:
            self.push(item)
            return
        self.pop()
        self.jump(inst.argval)
        # as ceval does, exhaustion skips the loop's END_FOR (3.12), or END_FOR and POP_TOP (3.13)
        if self.instructions[self.ip].opname == "END_FOR":
            self.ip += 2 if PY313 else 1

    def END_FOR(self, inst):  # reached only by a jump (3.12: [iterator, item]; 3.13: [item])
        self.popn(1 if PY313 else 2)

    def UNPACK_SEQUENCE(self, inst):
        items = self.pop().unpack(self)
        if len(items) != inst.arg:
            raise ObservedException(
                ValueError(f"cannot unpack {len(items)} values into {inst.arg}")
            )
        self.stack.extend(reversed(items))

    def UNPACK_EX(self, inst):
        before, after = inst.arg & 0xFF, inst.arg >> 8
        items = self.pop().unpack(self)
        if len(items) < before + after:
            raise ObservedException(ValueError(f"not enough values to unpack ({len(items)})"))
        rest = len(items) - after
        self.stack.extend(reversed(items[rest:]))
        self.push(ListVariable(items[before:rest]))
        self.stack.extend(reversed(items[:before]))

    # --- returning, generators ---------------------------------------------------------

    def RETURN_VALUE(self, inst):
        self.return_value = self.pop()
        self.done = True

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

    def RETURN_CONST(self, inst):  # 3.12: LOAD_CONST + RETURN_VALUE
        self.LOAD_CONST(inst)
        self.RETURN_VALUE(inst)

    def LOAD_ASSERTION_ERROR(self, inst):
        # reached only when an `assert` fails: the jump above skips it otherwise
        self.push(self.wrap(AssertionError, BuiltinSource("AssertionError")))

    # --- exceptions: the code's own `raise`, and its `try`/`except` -------------------------

    def RAISE_VARARGS(self, inst):
        if inst.arg == 0:  # a bare `raise`: the exception being handled, here or in a caller
            handled = self.exception_being_handled()
            if handled is None:  # RuntimeError, unless a caller of the traced function handles one
                raise Unsupported(
                    "unsupported_value",
                    "a bare `raise` outside any `except` block of the traced code: it raises "
                    "the exception the caller handles (RuntimeError if none), unknown here",
                )
            raise Reraised(handled.exception)
        cause = self.pop() if inst.arg == 2 else None
        exception = exception_to_raise(self.pop(), "exceptions must derive from BaseException")
        if cause is not None:  # `raise e from c`: c an exception, a class of one, or None
            message = "exception causes must derive from BaseException"
            exception.__cause__ = None if is_none(cause) else exception_to_raise(cause, message)
            exception.__suppress_context__ = True
        raise ObservedException(exception, "the function (`raise`)")

    def exception_being_handled(self):
        """What `sys.exception()` says: the exception of the innermost `except` block entered
        and not left, in this frame or in a caller's (CPython keeps one stack per thread)."""
        frame = self
        while frame is not None:
            if frame.handled:
                return frame.handled[-1]
            frame = frame.parent
        return None

    def handle_exception(self, inst, error: ObservedException) -> bool:
        """Jump to the `except` that covers `inst`, as CPython's exception table says: the
        stack is cut to the handler's depth, and the exception pushed. False if none does."""
        if not error.frames and not isinstance(error, Reraised):  # raised here, just now
            self.set_context(error.exception)
        entry = next((e for e in self.exception_entries if e.start <= inst.offset < e.end), None)
        if entry is None:
            return False
        del self.stack[entry.depth :]
        if entry.lasti:
            self.push(ConstantVariable(inst.offset))
        self.push(ExceptionVariable(error.exception))
        self.jump(entry.target)
        return True

    def set_context(self, exception: BaseException):
        """An exception raised while another is handled gets it as its `__context__`, as
        CPython's _PyErr_SetObject does where it is raised (a re-raise keeps its own); a link
        back to the new exception is cut, so that the chain has no cycle."""
        handled = self.exception_being_handled()
        if handled is None or handled.exception is exception:
            return
        link, seen = handled.exception, set()
        while link.__context__ is not None and id(link) not in seen:
            seen.add(id(link))
            if link.__context__ is exception:
                link.__context__ = None
                break
            link = link.__context__
        exception.__context__ = handled.exception

    def PUSH_EXC_INFO(self, inst):
        exception = self.pop()
        self.push(self.handled[-1] if self.handled else ConstantVariable(None))
        self.handled.append(exception)
        self.push(exception)

    def POP_EXCEPT(self, inst):
        self.pop()
        self.handled.pop()

    def CHECK_EXC_MATCH(self, inst):
        classes = class_of(self.pop())
        for cls in classes if isinstance(classes, tuple) else (classes,):
            if not (isinstance(cls, type) and issubclass(cls, BaseException)):
                message = "catching classes that do not inherit from BaseException is not allowed"
                raise ObservedException(TypeError(message))
        self.push(ConstantVariable(isinstance(self.stack[-1].exception, classes)))

    def RERAISE(self, inst):
        raise Reraised(self.pop().exception)

    # --- `with` blocks: the manager's own __enter__ and __exit__ run in the VM ---------------

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


class Reraised(ObservedException):
    """An exception raised again as it is (a bare `raise`, the end of a `finally`): CPython
    restores it without chaining, so its `__context__` stays what it was."""


def exception_to_raise(value, message: str) -> BaseException:
    """The exception `raise value` raises: an exception object, or a new one of an exception
    class; anything else is the TypeError CPython raises (with `message`)."""
    if isinstance(value, ExceptionVariable):
        return value.exception
    if issubclass(value.python_type(), type):  # a class: CPython calls it
        cls = value.identity()
        if cls is not UNKNOWN and not issubclass(cls, BaseException):
            raise ObservedException(TypeError(message))
    elif not issubclass(value.python_type(), BaseException):
        raise ObservedException(TypeError(message))
    return as_exception(value)  # an exception object from outside: not modeled (Unsupported)
