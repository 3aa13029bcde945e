"""Type annotations as values: `Optional[int]`, `ClassVar[list]`, `typing.List[int]`,
`int | None`.

A class body evaluates its annotations when it runs (CPython 3.11 to 3.13 evaluate them
eagerly), and code builds such types for `isinstance` checks and casts. The typing
module's objects cannot change and cache what subscripting them makes, so an expression of
them, of classes and of constants is computed now, and its answer is a value the new code
may hold as a constant. Subscripting one in the VM instead ran typing.py's own code, which
formats its arguments into messages and asks `sys._getframe` for the caller's module.
torch's Dynamo folds them the same way (its TypingVariable).
"""

import inspect
import operator
import types

from ..errors import Unsupported
from ..variables import UNKNOWN, ConstantVariable
from .outside_objects import ObjectVariable
from .sequences import ListVariable, TupleVariable


def is_annotation(value) -> bool:
    """An object of the typing module (`Optional`, `List[int]`, a TypeVar), or a builtin
    generic or union (`list[int]`, `int | None`)."""
    kind = type(value)
    return kind.__module__ == "typing" or issubclass(kind, (types.GenericAlias, types.UnionType))


def wrap_annotation(tx, value, source):
    return AnnotationVariable(value, source, tx.trace if source is not None else None)


class AnnotationVariable(ObjectVariable):
    """A typing object: an outside object compared by identity (ObjectVariable), which is
    also subscripted, and combined with `|`, now."""

    def getitem(self, tx, key):
        return fold(tx, operator.getitem, self, key)

    def __repr__(self):
        return f"AnnotationVariable({self.value!r})"


def is_type_like(var) -> bool:
    """What `|` makes a union of: a class, None, or an annotation (asked without relying on
    which object it is: the operands of any `|` are asked)."""
    if isinstance(var, ConstantVariable):
        return var.value is None
    if isinstance(var, AnnotationVariable):
        return True
    try:
        return issubclass(var.python_type(), type)
    except Unsupported:
        return False


def fold(tx, fn, *operands):
    """`fn` of annotations, classes and constants, computed now: an annotation."""
    return AnnotationVariable(tx.run_python(fn, *[real(v) for v in operands]))


def real(var):
    """The Python value an operand stands for: a constant, a class, an annotation, or a
    tuple or list of them (`Dict[str, int]` subscripts by a tuple)."""
    if isinstance(var, (TupleVariable, ListVariable)):  # `Callable[[int], str]` takes a list
        return var.python_type()(real(item) for item in var.items)
    if var.is_python_constant():
        return var.as_python_constant()
    value = var.identity()
    if value is UNKNOWN:
        raise Unsupported("unsupported_value", f"an annotation of {var}, made in the trace")
    return value


# Where a class's `__class_getitem__` makes an annotation and nothing else: `Callable[[int],
# int]`, `Iterable[str]`, a generic's `Box[int]` (typing.Generic's), `list[int]`.
ANNOTATION_MODULES = {"_collections_abc", "collections.abc", "typing", "types", "builtins"}


def makes_annotation(cls) -> bool:
    """Whether `cls[...]` is a class's `__class_getitem__` that only makes an annotation."""
    found = inspect.getattr_static(cls, "__class_getitem__", None)
    function = getattr(found, "__func__", found)
    return getattr(function, "__module__", None) in ANNOTATION_MODULES
