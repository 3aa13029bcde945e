"""Exceptions in the VM: the code's own `raise`, and its `try`/`except`/`finally`.

These handlers are methods of the InstructionTranslator (vm.py), kept in a file of
their own because a small model raises nothing: an exception the traced code raises
(an ObservedException) follows the frame's exception table into its own `except` or
`finally`, as CPython does, and an exception raised while another is handled gets
it as its `__context__`. One the code does not catch stops the VM, and the frame
runs eagerly and raises it for real.
"""

from ..errors import ObservedException, Unsupported
from ..python.builtins_table import class_of
from ..python.containers import is_none
from ..python.exceptions import ExceptionVariable, as_exception
from ..variables import UNKNOWN, ConstantVariable


class Exceptions:
    """The exception handlers of InstructionTranslator (one method per opcode)."""

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
