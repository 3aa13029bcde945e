"""Exception objects: the ones the traced code makes, raises and catches.

An exception the code raises is made for real (its arguments are constants), so
that its message, `args` and chaining are CPython's own; the handlers of `raise`
and `try` are in opcodes/exceptions.py.
"""

import sys

from ..errors import Unsupported
from ..variables import BoundMethodVariable, ConstantVariable, Variable, is_constant_value
from .sequences import TupleVariable


class ExceptionVariable(Variable):
    """An exception object the code made, raised or caught (its arguments are constants)."""

    def __init__(self, exception: BaseException):
        self.exception = exception

    def identity(self):
        return self.exception

    def get_attr(self, tx, name):
        if name == "args":
            return tx.wrap_constant_result(self.exception.args, "args")
        if name == "__class__":
            return tx.wrap(type(self.exception), None)
        if name in ("__cause__", "__context__"):  # set on the real object by RAISE_VARARGS
            linked = getattr(self.exception, name)  # and opcodes/exceptions.py's set_context
            if linked is None and name == "__context__":
                raise Unsupported(
                    "unsupported_value",
                    "the `__context__` of an exception raised outside any `except` block of the "
                    "traced code: it is the exception the caller handles, if any",
                )
            return ConstantVariable(None) if linked is None else ExceptionVariable(linked)
        if name == "with_traceback":
            return BoundMethodVariable(self, name)
        value = getattr(self.exception, name, None)  # `stop.value`, `__suppress_context__`
        if name != "__traceback__" and hasattr(self.exception, name) and is_constant_value(value):
            return ConstantVariable(value)
        return super().get_attr(tx, name)

    def set_attr(self, tx, name, value):
        """`exc.__traceback__ = traceback` (contextlib's `__exit__`): none, or the traceback
        `sys.exc_info()` gave, which the VM does not have either."""
        if name != "__traceback__" or not cleared(value):
            super().set_attr(tx, name, value)
        self.exception.__traceback__ = None

    def call_method(self, tx, name, args, kwargs):
        """`error.with_traceback(None)`, as unittest's `assertRaises` keeps the exception it
        caught: the traceback set to none, the same object back. (The VM's exceptions have no
        traceback of their own to give.)"""
        if name == "with_traceback" and len(args) == 1 and not kwargs and cleared(args[0]):
            self.exception.__traceback__ = None
            return self
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, cg):
        cg.load_const(self.exception)

    def __repr__(self):
        return f"ExceptionVariable({self.exception!r})"


def as_exception(value: Variable) -> BaseException:
    """What `raise value` raises: an exception object, or a new one of an exception class."""
    if isinstance(value, ExceptionVariable):
        return value.exception
    cls = value.identity()
    if isinstance(cls, type) and issubclass(cls, BaseException):
        return cls()
    raise Unsupported("unsupported_value", f"`raise` of {value}")


def cleared(traceback: Variable) -> bool:
    """None, or the traceback `sys.exc_info()` gave: an exception left with no traceback."""
    return traceback.identity() is None or isinstance(traceback, TracebackVariable)


class TracebackVariable(Variable):
    """The traceback `sys.exc_info()` gives with an exception the traced code caught: CPython
    made it as the exception passed up its frames, the VM has none to give. Passing it on is
    fine (`exc_info()[:2]`, a tuple unpacked); reading it is a break with this reason."""

    def __repr__(self):
        return "the traceback of an exception caught in the trace (the VM has none)"


def handled_exception(tx) -> Variable:
    """The exception of the innermost `except` block of the traced code; outside any, the one
    the caller of the traced function handles. The trace runs in the caller's context, so
    that one is `sys.exc_info()` now: where it is None, the answer is None, assumed and
    guarded (the guards run there too, before each call); another is not modelled."""
    handled = tx.exception_being_handled()
    if handled is not None:
        return handled
    if sys.exc_info()[1] is not None:
        raise Unsupported(
            "unsupported_value",
            "sys.exc_info() outside any `except` block of the traced code, called while its "
            "caller handles an exception: that exception is not modelled",
        )
    tx.trace.assume("caller_exception")
    return ConstantVariable(None)


def exc_info(tx):
    """`sys.exc_info()`: (type, exception, traceback) of the exception being handled."""
    handled = handled_exception(tx)
    if not isinstance(handled, ExceptionVariable):  # none handled: (None, None, None)
        return TupleVariable([handled, handled, handled])
    kind = tx.wrap(type(handled.exception), None)
    return TupleVariable([kind, handled, TracebackVariable()])
