"""`str(v)` and `repr(v)` while tracing: the text, where it is known now.

A text is a constant of the trace when what it is made of is: a class or an object from
outside (its own text, run now), constants and the lists, tuples, dicts and sets of them
(`str(config)`), an object whose class writes `__repr__` or `__str__` in Python (run in
the VM), or an instance of a container's subclass whose repr is the builtin's. Anything
else (a tensor's text needs its data; an object made in the trace has no address) is a
break that says so. CPython: Objects/object.c's PyObject_Str and PyObject_Repr.
"""

import types

from ..errors import Unsupported
from ..variables import UNKNOWN, ConstantVariable
from . import container_subclasses, dicts
from .dicts import DictVariable
from .objects import UserObjectVariable, class_lookup
from .sets import SetVariable


def text_of(tx, fn, value):
    """`str(v)` or `repr(v)` where its text is known now: a class or an object from outside
    (its own text), constants and the lists, tuples, dicts and sets of them (`str(config)`),
    an object whose class writes `__repr__` or `__str__` in Python (run in the VM), and an
    instance of a container's subclass whose repr is the builtin's (`Words({'a'})`)."""
    if value.identity() is not UNKNOWN:  # `str(cls)` of a class
        return ConstantVariable(fn(value.identity()))
    constant = known_value(tx, value)
    if constant is dicts.NOT_CONSTANT and isinstance(value, UserObjectVariable):
        own = own_text(tx, fn, value)
        if own is not None:
            return own
        contents, base = value.items_var(tx), container_subclasses.container_base(value.cls)
        if contents is not None and class_lookup(value.cls, "__repr__")[1] is base.__repr__:
            items = known_value(tx, contents)  # the builtin's repr, with the class's name
            if items is not dicts.NOT_CONSTANT:
                constant = container_subclasses.rebuild(value.cls, {}, items)
    if constant is dicts.NOT_CONSTANT:
        why = f"`{fn.__name__}()` of {value}, whose text is not known while tracing"
        raise Unsupported("untraceable_call", why)
    return ConstantVariable(fn(constant))


def known_value(tx, value):
    """The Python value whose text `value` has, or NOT_CONSTANT. A set of constants is its
    real set of keys, which iterates in CPython's order (a copy may not)."""
    if isinstance(value, SetVariable) and not value.key_vars:
        return value.items
    if isinstance(value, DictVariable):
        for key in list(value.items):
            value.value(tx, key)  # the values of a dict from outside are read now
    return dicts.constant_value(value)


def own_text(tx, fn, obj):
    """The class's own `__str__` (else `__repr__`: object's `__str__` asks it) written in
    Python, run in the VM; None where the text is a builtin's."""
    for name in ("__str__", "__repr__") if fn is str else ("__repr__",):
        found = class_lookup(obj.cls, name)
        if isinstance(found[1], types.FunctionType):
            return obj.special(tx, name, [])
        if found[1] is not object.__str__:
            return None
    return None
