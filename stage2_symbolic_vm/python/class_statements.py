"""Classes made by a `class` statement in the traced code.

CPython's `__build_class__(body, name, *bases)` (Python/bltinmodule.c) picks the metaclass,
runs the body function with a new namespace dict as its locals, calls
`metaclass(name, bases, namespace)`, and the new class fills the `__class__` cell that
`super()` reads.

Here the body runs in the VM (opcodes/classes.py), so what it computes is traced. The
class is then made for real, now, because the VM's objects look attributes up in a real
class's MRO (objects.py): from the namespace's constants and outside objects, and for each
function made in the trace a stand-in with the same code. An attribute found in the
class's own namespace is the traced Variable (`own_attribute`), so a method runs with the
closure the trace gave it, and an assignment to the class changes the namespace.

Eager code makes a new class at each call; the compiled code makes none. So the class
belongs to the trace: where it would leave the frame (returned, stored where the caller
sees it, or held by an object that does) the graph breaks (`reconstruct`). What would run
code at the class's creation that the trace cannot see is refused with a reason: a
metaclass other than `type` and `abc.ABCMeta`, keywords, a base with its own
`__init_subclass__`. torch's Dynamo makes the class for real from a body it does not trace,
behind a configuration flag of its CPython tests (`enable_trace_load_build_class`).
"""

import abc
import types

from ..errors import CannotReconstruct, Unsupported
from ..functions import UserFunctionVariable
from ..variables import UNKNOWN, BoundMethodVariable, CellVariable, ConstantVariable, Variable
from .containers import is_none
from .objects import UserClassVariable

METACLASSES = (type, abc.ABCMeta)  # their class creation runs no code of the user's
CONTAINERS = (list, dict, set, tuple)


class ClassMadeHereVariable(UserClassVariable):
    """A class made by a class statement in this trace. `made` maps each class made here in
    its MRO (itself, and bases made here too) to its namespace: name -> Variable."""

    def __init__(self, cls, made: dict, bases: tuple):
        super().__init__(cls)
        self.made, self.bases = made, bases

    def own_attribute(self, index, name):
        namespace = self.made.get(self.cls.__mro__[index])
        return None if namespace is None else namespace.get(name)

    def attribute_source(self, index, name):
        """An attribute inherited from a class from outside is read again through the base
        that leads to it (`G['Base'].__dict__['scale']`), so that its guard sees it change;
        one of the class's own namespace has none (no one outside can change it)."""
        owner = self.cls.__mro__[index]
        for base in self.bases:
            if isinstance(base, UserClassVariable) and owner in base.cls.__mro__:
                return base.attribute_source(base.cls.__mro__.index(owner), name)
        return None

    def set_attr(self, tx, name, value):
        """`Cls.count = 1`: the namespace holds it (no one outside the trace sees the class)."""
        self.made[self.cls][name] = value
        setattr(self.cls, name, stand_in(value))

    def reconstruct(self, cg):
        raise CannotReconstruct(
            f"class {self.cls.__qualname__}, made by a class statement in the traced code, "
            "would leave the frame: each call of the code makes a new one"
        )

    def __repr__(self):
        return f"ClassMadeHereVariable({self.cls.__qualname__})"


class DescriptorMadeHereVariable(Variable):
    """`property(fget)`, `staticmethod(f)` or `classmethod(f)` made in the trace, as a class
    body's decorators make them: `functions` holds fget, fset and fdel, or the one function."""

    def __init__(self, kind, functions):
        self.kind, self.functions = kind, list(functions)

    def python_type(self):
        return self.kind

    def part(self, name):
        """`fget`, `fset`, `fdel` of a property, `__func__` of the others (None: not given),
        as objects.py's `class_attribute` binds them."""
        return self.functions[PARTS[name]]

    def get_attr(self, tx, name):
        if self.kind is property and name in PROPERTY_PARTS:  # `@size.setter`
            return BoundMethodVariable(self, name)
        if (name == "__func__") == (self.kind is not property) and name in PARTS:
            return self.part(name) or ConstantVariable(None)
        raise Unsupported("unsupported_value", f"attribute {name!r} of a {self.kind.__name__}")

    def call_method(self, tx, name, args, kwargs):
        """`size.setter(fn)`: a copy of the property with that function in its place."""
        if self.kind is not property or name not in PROPERTY_PARTS or len(args) != 1:
            raise Unsupported("unsupported_value", f"{self.kind.__name__}.{name}(...)")
        functions = list(self.functions)
        functions[PROPERTY_PARTS.index(name)] = args[0]
        return DescriptorMadeHereVariable(property, functions)

    def reconstruct(self, cg):
        raise CannotReconstruct(f"a {self.kind.__name__} made in the trace")


PROPERTY_PARTS = ("getter", "setter", "deleter")  # its methods that replace one part
PARTS = {"fget": 0, "fset": 1, "fdel": 2, "__func__": 0}


def made_property(tx, fget=None, fset=None, fdel=None, doc=None):
    """`property(...)` in the trace (its docstring is not kept)."""
    parts = [None if f is None or is_none(f) else f for f in (fget, fset, fdel)]
    return DescriptorMadeHereVariable(property, parts)


def made_wrapper(kind):
    """`staticmethod(f)` or `classmethod(f)` in the trace."""
    return lambda tx, function: DescriptorMadeHereVariable(kind, [function])


def build_class(tx, body, name, *bases, **keywords):
    """`builtins.__build_class__(body, name, *bases)`, the call a class statement makes."""
    name = name.as_python_constant()
    if keywords:
        raise Unsupported("untraceable_call", f"class {name}(..., {', '.join(keywords)}=...)")
    if not isinstance(body, UserFunctionVariable) or body.value is not None:
        raise Unsupported("untraceable_call", f"__build_class__ of {body}")
    real_bases = tuple(base_class(base, name) for base in bases)
    metaclass = most_derived_metaclass(real_bases)
    if metaclass not in METACLASSES:
        why = f"class {name}, whose metaclass {metaclass.__qualname__} runs code to make it"
        raise Unsupported("untraceable_call", why)
    namespace = run_body(tx, body)
    cls = tx.run_python(metaclass, name, real_bases, {k: stand_in(v) for k, v in namespace.items()})
    made = {c: n for base in bases for c, n in getattr(base, "made", {}).items()}
    made[cls] = namespace
    var = ClassMadeHereVariable(cls, made, bases)
    if isinstance(namespace.get("__classcell__"), CellVariable):  # `super()` in a method
        namespace["__classcell__"].contents = var
    return var


def base_class(base, name):
    """The real class a base Variable stands for: a class from outside, or made here."""
    cls = base.identity()
    if not isinstance(cls, type):
        raise Unsupported("untraceable_call", f"class {name} with the base {base}")
    for klass in cls.__mro__[:-1]:  # `object` has the default
        if "__init_subclass__" in vars(klass):
            why = f"class {name}: its base {klass.__qualname__} has its own __init_subclass__"
            raise Unsupported("untraceable_call", why)
    return cls


def most_derived_metaclass(bases) -> type:
    """CPython's `_PyType_CalculateMetaclass`: the metaclass of the bases that derives from
    all the others (`type` with no bases); conflicting ones raise TypeError when made."""
    winner = type
    for base in bases:
        if issubclass(type(base), winner):
            winner = type(base)
    return winner


def run_body(tx, body) -> dict:
    """Run the class body in a frame of its own, whose locals are the namespace."""
    own = body.globals is tx.root().globals
    frame = type(tx)(body.code, body.globals, tx.trace, tx, None if own else body.globals_source)
    frame.cells = dict(zip(body.code.co_freevars, body.closure, strict=True))
    frame.run()
    return frame.locals


def stand_in(var):
    """What the real class holds for a namespace Variable: its value where it has one, and
    for a function made in the trace a function with the same code and empty cells (never
    called: `own_attribute` answers for it)."""
    if isinstance(var, ConstantVariable):
        return var.as_python_constant()
    if isinstance(var, CellVariable):
        return types.CellType()  # `__classcell__`: type.__new__ fills it with the class
    if isinstance(var, DescriptorMadeHereVariable):
        parts = [None if f is None else stand_in(f) for f in var.functions]
        return property(*parts) if var.kind is property else var.kind(parts[0])
    if isinstance(var, UserFunctionVariable) and var.value is None and var.self_arg is None:
        cells = tuple(types.CellType() for _ in var.code.co_freevars)
        function = types.FunctionType(var.code, var.globals, var.code.co_name, None, cells)
        function.__qualname__ = var.code.co_qualname
        for name, value in var.attrs.items():  # `@abc.abstractmethod` marks it so for ABCMeta
            if isinstance(value, ConstantVariable):
                setattr(function, name, value.as_python_constant())
        return function
    if var.identity() is not UNKNOWN:
        return var.identity()
    if type(var).python_type is not Variable.python_type and var.python_type() in CONTAINERS:
        return var.python_type()()  # an empty one: `items = []` is the trace's ListVariable
    raise Unsupported("unsupported_value", f"a class attribute made in the trace: {var}")
