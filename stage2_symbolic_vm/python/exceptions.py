"""Exception objects: the ones the traced code makes, raises and catches.

An exception the code raises is made for real (its arguments are constants), so
that its message, `args` and chaining are CPython's own; the handlers of `raise`
and `try` are in opcodes/exceptions.py.
"""

from ..errors import Unsupported
from ..variables import ConstantVariable, Variable, is_constant_value


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
        value = getattr(self.exception, name, None)  # `stop.value`, `__suppress_context__`
        if name != "__traceback__" and hasattr(self.exception, name) and is_constant_value(value):
            return ConstantVariable(value)
        return super().get_attr(tx, name)

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
