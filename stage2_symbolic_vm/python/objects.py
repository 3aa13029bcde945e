"""Classes written in Python, and their instances (torch/_dynamo/variables/user_defined.py).

Real code is full of small objects: a config, a dataclass of outputs, an
enum, a registry. The VM treats them as CPython does, by running the Python
that defines them:

* reading `obj.name` is `type(obj).__getattribute__`: a custom one (written in
  Python) is inlined; the generic one looks for a data descriptor (a
  property) in the class, then the instance's `__dict__`, then anything else
  in the class (a method becomes bound to `obj`), then `__getattr__`;
* `obj.name = value` runs a custom `__setattr__`, or assigns into the
  instance: an object made in the trace simply holds the new value, an
  object from outside gets it once the graph has run (side_effects.py);
* calling a class makes a new instance in the trace and inlines `__init__`
  (a dataclass's generated `__init__` included).

What is read is read through sources that do not run any Python again:
`L['cfg'].__dict__['hidden']` for an instance attribute,
`L['cfg'].__class__.__mro__[1].__dict__['forward']` for a class attribute, so a
guard checks exactly the storage the trace relied on.

An object of a class written in C that the VM does not model (a NumPy array, a C
library's handle) is an ObjectVariable (outside_objects.py).
"""

import copyreg
import functools
import inspect
import logging
import operator
import random
import types

from ..errors import CannotReconstruct, ObservedAttributeError, ObservedException, Unsupported
from ..like_eager.aliasing import is_slot
from ..side_effects import DELETED
from ..sources import attr_of, item_of
from ..variables import (
    UNKNOWN,
    BoundMethodVariable,
    ConstantVariable,
    TensorVariable,
    Variable,
    constant_args,
)
from . import annotations, container_subclasses, random_generators
from .dicts import DictVariable
from .exceptions import ExceptionVariable
from .outside_objects import ObjectVariable
from .sequences import SequenceVariable, TupleVariable


def class_lookup(cls, name):
    """(index in the MRO, the raw class attribute) of `name`, or None: the class half of
    CPython's attribute lookup (`_PyType_Lookup`), without running descriptors."""
    for index, klass in enumerate(cls.__mro__):
        if name in klass.__dict__:
            return index, klass.__dict__[name]
    return None


def is_data_descriptor(attr) -> bool:
    kind = type(attr)
    return hasattr(kind, "__set__") or hasattr(kind, "__delete__")


HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made at run time, by a `class` statement
IMMUTABLETYPE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: a C class made at run time from a spec


def is_python_class(value) -> bool:
    """A class made by a `class` statement. Builtin and C classes are not, nor the heap types
    a C extension makes at import (Cython's function type, which NumPy's `np.random.rand`
    is made of): those are immutable, which a `class` statement never makes."""
    if not isinstance(value, type):
        return False
    return bool(value.__flags__ & HEAPTYPE) and not value.__flags__ & IMMUTABLETYPE


def metaclass_lookup(cls, name):
    """(index in the metaclass's MRO, the raw attribute) of `name` in a metaclass written in
    Python, or None: torch.distributed's `GroupMember.WORLD` is a property of its metaclass.
    `type`'s own attributes (`__name__`, `__mro__` ...) are answered by UserClassVariable."""
    for index, klass in enumerate(type(cls).__mro__):
        if klass is type:
            return None
        if name in klass.__dict__:
            return index, klass.__dict__[name]
    return None


def mro_source(class_source, index: int, name: str):
    """`C.__mro__[i].__dict__['name']`: the class attribute itself, however it was found."""
    if class_source is None:
        return None
    owner = class_source if index == 0 else item_of(attr_of(class_source, "__mro__"), index)
    return item_of(attr_of(owner, "__dict__"), name)


SLOT_TYPES = (types.MethodDescriptorType, types.WrapperDescriptorType)


def is_cached_function(value) -> bool:
    """A Python function under `functools.lru_cache` (or `functools.cache`)."""
    return isinstance(value, functools._lru_cache_wrapper) and isinstance(
        value.__wrapped__, types.FunctionType
    )


# logging.Logger's methods that log: the handlers write to streams, and the record reads its
# caller's frame (`sys._getframe`), outside the trace. A call breaks the graph and runs at the
# break, as torch.compile does ("logging.Logger method not supported"); its
# `ignore_logger_methods` can drop them instead, which would lose the message: not here.
LOG_METHODS = {logging.Logger.debug, logging.Logger.info, logging.Logger.warning}
LOG_METHODS |= {logging.Logger.warn, logging.Logger.error, logging.Logger.exception}
LOG_METHODS |= {logging.Logger.critical, logging.Logger.log}


def class_attribute(tx, instance, cls_var, name, index, attr):
    """A class attribute as `instance.name` sees it (CPython's descriptor protocol):
    a function becomes bound to `instance`, a property runs its getter, a classmethod is
    bound to the class. `instance` None: seen through the class itself (`Cls.name`). A
    class made by a class statement in the trace answers with its namespace's Variables
    (class_statements.py), bound by the same protocol."""
    if isinstance(cls_var, UserClassVariable):
        made_here = cls_var.own_attribute(index, name)
        source = cls_var.attribute_source(index, name)
    else:
        made_here, source = None, mro_source(cls_var.source, index, name)

    def variable(value, part=None):
        """The Variable of the attribute, or of one of its parts (`fget`, `__func__`)."""
        if made_here is not None:
            return made_here if part is None else made_here.part(part)
        return tx.wrap(value, source if part is None else attr_of(source, part))

    owner = instance
    if isinstance(attr, property) and owner is not None:
        if attr.fget is None:
            raise ObservedAttributeError(f"property {name!r} has no getter")
        return variable(attr.fget, "fget").bound_to(owner).call(tx, [], {})
    if isinstance(attr, staticmethod):
        return variable(attr.__func__, "__func__")
    if isinstance(attr, classmethod):
        return variable(attr.__func__, "__func__").bound_to(cls_var)
    if is_cpp_method(attr) or (isinstance(attr, types.FunctionType) and attr in LOG_METHODS):
        return left_to_python(tx, owner, cls_var, name, index, attr, source)
    if isinstance(attr, types.FunctionType) or is_cached_function(attr):
        # (lru_cache's wrapper binds to an instance as a function does: `logger.warning_once`)
        function = variable(attr)
        return function.bound_to(owner) if owner is not None else function
    if isinstance(attr, SLOT_TYPES) and isinstance(owner, UserObjectVariable):
        return BuiltinSlotVariable(attr, owner)
    if isinstance(attr, types.ClassMethodDescriptorType):  # `MyDict.fromkeys`: dict's, given
        return BoundMethodVariable(cls_var, name)  # the class (UserClassVariable.call_method)
    getter = class_lookup(type(attr), "__get__")
    if getter is not None and isinstance(getter[1], types.FunctionType):
        # a descriptor written in Python (`functools.cached_property`): its __get__ runs
        descriptor = variable(attr)
        seen_from = owner if owner is not None else ConstantVariable(None)
        return descriptor.get_attr(tx, "__get__").call(tx, [seen_from, cls_var], {})
    # With no source, the class itself was made or found in the trace (`type(obj)` of an object
    # made here): what it holds is known from how it was made, nothing to guard.
    return variable(attr)


def is_cpp_method(attr) -> bool:
    """A method of a C++ class: pybind11 wraps each C function in an `instancemethod`, which
    binds to an instance as a Python function does."""
    return type(attr).__name__ == "instancemethod" and type(attr).__module__ == "builtins"


def left_to_python(tx, owner, cls_var, name, index, attr, source):
    """A method the VM does not trace (a C++ class's, a log call), bound to `owner`: a call
    of it breaks, and names it as its class has it (`torch.ScriptObject._has_method`, not
    after pybind11's record of the function; `logging.Logger.warning`)."""
    from .callables import MethodVariable  # callables.py builds on this file

    seen_from = (owner.python_type() if owner is not None else cls_var.cls).__mro__[index]
    named = f"{seen_from.__qualname__}.{name}"
    if not named.startswith(f"{seen_from.__module__}."):  # (torch.jit.ScriptFunction's has it)
        named = f"{seen_from.__module__}.{named}"
    trace = tx.trace if source is not None else None
    if is_cpp_method(attr):
        function = ObjectVariable(attr.__func__, attr_of(source, "__func__"), trace, named)
    else:
        function = ObjectVariable(attr, source, trace, named)
    return MethodVariable(function, owner) if owner is not None else function


class UserClassVariable(Variable):
    """A class written in Python: its attributes, `isinstance` against it, and calls to it."""

    def __init__(self, cls, source=None):
        self.cls, self.source = cls, source

    def identity(self):
        return self.cls

    def own_attribute(self, index, name):
        """The Variable of an attribute its class statement made in the trace (None here: see
        class_statements.py)."""
        return None

    def attribute_source(self, index, name):
        """Where the attribute found in `__mro__[index]` is read again, for its guard."""
        return mro_source(self.source, index, name)

    def get_attr(self, tx, name):
        stored = tx.side_effects.load_attr(self, name)
        if stored is not None:
            return stored
        if name in ("__name__", "__qualname__", "__module__"):
            return ConstantVariable(getattr(self.cls, name))
        if name == "__mro__":
            return TupleVariable([tx.wrap(c, None) for c in self.cls.__mro__])
        # CPython's type_getattro: a data descriptor of the metaclass (a property) first, then
        # the class and its bases, then anything else the metaclass has (a method, bound to
        # the class).
        meta = metaclass_lookup(self.cls, name)
        if meta is not None and is_data_descriptor(meta[1]):
            return class_attribute(tx, self, self.metaclass(tx), name, *meta)
        found = class_lookup(self.cls, name)
        if found is not None:
            return class_attribute(tx, None, self, name, *found)
        if meta is not None:
            return class_attribute(tx, self, self.metaclass(tx), name, *meta)
        raise ObservedAttributeError(f"type object {self.cls.__name__!r} has no {name!r}")

    def metaclass(self, tx):
        return tx.wrap(type(self.cls), attr_of(self.source, "__class__"))

    def call_method(self, tx, name, args, kwargs):
        """`MyDict.fromkeys(keys)`: a class method of a builtin base class, which makes an
        instance of this class (builtins_table.CLASS_METHODS); else a special method of the
        class itself, which CPython looks up on its metaclass: `len(Color)` runs EnumType's
        `__len__`."""
        from .builtins_table import class_method  # the table builds on this file

        handler = class_method(self.cls, name)
        if handler is not None:
            return handler(tx, self, *args, **kwargs)
        found = metaclass_lookup(self.cls, name)
        if found is None:
            raise ObservedException(TypeError(f"type object {self.cls.__name__!r} has no {name}"))
        return class_attribute(tx, self, self.metaclass(tx), name, *found).call(tx, args, kwargs)

    def getitem(self, tx, key):
        """`Color["RED"]` (the metaclass's `__getitem__`), or `Box[int]` (`__class_getitem__`)."""
        if metaclass_lookup(self.cls, "__getitem__") is None and class_lookup(
            self.cls, "__class_getitem__"
        ):
            if annotations.makes_annotation(self.cls):  # `Callable[[int], int]`: made now
                return annotations.fold(tx, operator.getitem, self, key)
            return self.get_attr(tx, "__class_getitem__").call(tx, [key], {})
        return self.call_method(tx, "__getitem__", [key], {})

    def iterate(self, tx):
        return self.call_method(tx, "__iter__", [], {}).iterate(tx)

    def unpack(self, tx):
        return self.iterate(tx).unpack(tx)

    def truth(self, tx):
        for name in ("__bool__", "__len__"):
            if metaclass_lookup(self.cls, name) is not None:
                return bool(self.call_method(tx, name, [], {}).as_python_constant())
        return True

    def call(self, tx, args, kwargs):
        found = metaclass_lookup(self.cls, "__call__")
        if found is not None:  # `Color(1)`: EnumType.__call__ finds the member
            call = class_attribute(tx, self, self.metaclass(tx), "__call__", *found)
            return call.call(tx, args, kwargs)
        return new_instance(tx, self, args, kwargs)

    def set_attr(self, tx, name, value):
        """`Cls.counter = v`: changes the class, written back after the graph (side_effects.py)."""
        tx.side_effects.store_attr(self, name, value)

    def __repr__(self):
        return f"UserClassVariable({self.cls.__qualname__})"


def new_instance(tx, cls_var: UserClassVariable, args, kwargs):
    """`Cls(*args)`: a namedtuple, or an object made in the trace whose `__init__` is inlined."""
    cls = cls_var.cls
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):  # a namedtuple
        return make_namedtuple(tx, cls, args, kwargs)
    if issubclass(cls, BaseException):  # an exception about to be raised: made for real
        args, kwargs = constant_args(args, kwargs)
        return ExceptionVariable(tx.run_python(cls, *args, **kwargs))
    if cls is random.Random:  # made from a constant seed: run while tracing
        return random_generators.new_generator(tx, args, kwargs)
    new = inspect.getattr_static(cls, "__new__")
    if isinstance(new, staticmethod):
        new = new.__func__
    if type(cls).__call__ is not type.__call__:
        raise Unsupported("unsupported_value", f"{cls.__qualname__}'s metaclass has a __call__")
    if isinstance(new, types.FunctionType):  # its own, in Python: CPython's type_call runs it,
        obj = cls_var.get_attr(tx, "__new__").call(tx, [cls_var, *args], kwargs)
        if isinstance(obj, UserObjectVariable) and issubclass(obj.cls, cls):  # then __init__
            initialise_instance(tx, obj, args, kwargs)  # on an instance of the class
        return obj
    if new not in container_subclasses.PLAIN_NEW:
        raise Unsupported("unsupported_value", f"{cls.__qualname__} has its own __new__")
    if getattr(cls, "__abstractmethods__", None):  # object.__new__ refuses, in its own words
        tx.run_python(object.__new__, cls)
    obj = builtin_new(tx, cls_var, args, kwargs)
    initialise_instance(tx, obj, args, kwargs)
    return obj


def builtin_new(tx, cls_var, args, kwargs):
    """`object.__new__(cls)`, `set.__new__(cls)`, `tuple.__new__(cls, items)` ... of a class
    written in Python: an instance made in the trace, empty but for an immutable builtin's
    contents, which its `__new__` fixes."""
    obj = UserObjectVariable(None, cls_var)
    base = container_subclasses.container_base(cls_var.cls)
    if base in container_subclasses.IMMUTABLE:  # made by frozenset.__new__, tuple.__new__
        obj.contents = container_subclasses.new_immutable(tx, base, args, kwargs)
    return obj


def initialise_instance(tx, obj, args, kwargs):
    """`type(obj).__init__(obj, *args, **kwargs)`, as type_call runs it after `__new__`."""
    cls = obj.cls
    init = class_lookup(cls, "__init__")
    if isinstance(init[1], types.FunctionType):
        obj.get_attr(tx, "__init__").call(tx, args, kwargs)
    elif obj.contents is not None:  # the builtin's own __init__
        BuiltinSlotVariable(init[1], obj).call(tx, args, kwargs)
    elif (args or kwargs) and class_lookup(cls, "__new__")[1] is object.__new__:
        raise ObservedException(TypeError(f"{cls.__qualname__}() takes no arguments"))


# What a class defines to shape its own copy or pickle, past object's defaults.
COPY_HOOKS = ("__reduce__", "__getstate__", "__getnewargs__", "__getnewargs_ex__", "__slots__")


def plain_class(cls) -> bool:
    """A Python class over `object` alone, that leaves its copies to object's defaults."""
    if not all(k is object or is_python_class(k) for k in cls.__mro__):
        return False
    objects_own = len(cls.__mro__) - 1  # where class_lookup finds what object defines
    return all(
        class_lookup(cls, n) in (None, (objects_own, vars(object).get(n))) for n in COPY_HOOKS
    )


def reduce_ex(tx, obj: "UserObjectVariable", protocol):
    """`object.__reduce_ex__(obj, protocol)` for protocol 2 and up, as typeobject.c's
    reduce_newobj makes it: `(copyreg.__newobj__, (cls,), its __dict__ or None, None, None)`.
    copy.deepcopy rebuilds from that: `cls.__new__(cls)`, then the state copied into the new
    object's `__dict__`."""
    level = protocol.as_python_constant() if protocol.is_python_constant() else None
    if not isinstance(level, int) or level < 2 or not plain_class(obj.cls):
        why = f"object.__reduce_ex__({level}) of {obj.cls.__qualname__}"
        raise Unsupported("unsupported_value", f"{why}: a protocol below 2 or a copy hook")
    state = obj.instance_dict(tx)
    if holds_tensor(tx, state):  # Tensor.__deepcopy__ shares storages through deepcopy's memo
        raise Unsupported(
            "unsupported_value", f"a copy of {obj.cls.__qualname__}, which holds tensors"
        )
    state = state if state.items else ConstantVariable(None)
    newobj = tx.wrap(copyreg.__newobj__, None)
    none = ConstantVariable(None)
    return TupleVariable([newobj, TupleVariable([obj.cls_var]), state, none, none])


def holds_tensor(tx, var) -> bool:
    """A tensor among the values of `var`, in its lists, tuples and dicts too."""
    var = tx.read(var)  # a value read from outside only now
    if isinstance(var, TensorVariable):
        return True
    if isinstance(var, DictVariable):
        return any(holds_tensor(tx, v) for v in var.items.values())
    return isinstance(var, SequenceVariable) and any(holds_tensor(tx, v) for v in var.items)


def bare_instance(tx, _through, cls, *args, **kwargs):
    """`object.__new__(cls)`: an instance whose `__init__` has not run (copy.deepcopy and
    pickle make one so, then fill its `__dict__`)."""
    if not isinstance(cls, UserClassVariable) or args or kwargs or not plain_class(cls.cls):
        raise Unsupported("unsupported_value", f"object.__new__({cls}, ...)")
    return UserObjectVariable(None, cls)


def make_namedtuple(tx, cls, args, kwargs):
    fields, defaults = cls._fields, cls._field_defaults
    values = dict(zip(fields, args, strict=False)) | kwargs
    missing = [f for f in fields if f not in values and f not in defaults]
    if missing or len(args) > len(fields):
        raise ObservedException(TypeError(f"{cls.__name__}() arguments do not match"))
    items = [values[f] if f in values else tx.wrap_constant_result(defaults[f], f) for f in fields]
    return TupleVariable(items, tuple_type=cls)


class UserObjectVariable(Variable):
    """An instance of a Python class: from outside (`value` and `source`), or made in the
    trace (`value` None: `attrs` holds its attributes, `contents` its items if its class
    derives from a builtin container: container_subclasses.py)."""

    def __init__(self, value, cls_var: UserClassVariable, source=None, trace=None):
        self.value, self.cls_var, self.source, self.trace = value, cls_var, source, trace
        self.cls = cls_var.cls
        self.attrs = {}  # name -> Variable, for an object made in the trace
        base = container_subclasses.container_base(self.cls)
        made_here = base is not None and value is None
        self.contents = container_subclasses.empty_contents(base) if made_here else None

    def python_type(self):
        return self.cls

    def identity(self):
        if self.value is None:
            return UNKNOWN
        if self.trace is not None:  # `is` relies on this very object
            self.trace.assume("id", self.source)
        return self.value

    def builtin_base(self):
        """The builtin container its class derives from, or None."""
        return container_subclasses.container_base(self.cls)

    def items_var(self, tx):
        """The contents of an instance of a builtin container's subclass (None for other
        classes). Those of an object from outside are read past its class's own methods."""
        if self.contents is None and self.value is not None and self.builtin_base():
            self.contents = container_subclasses.outside_contents(tx, self)
        return self.contents

    # --- reading attributes -----------------------------------------------------------------

    def get_attr(self, tx, name):
        stored = tx.side_effects.load_attr(self, name) if self.value is not None else None
        if stored is not None:
            return stored
        found = class_lookup(self.cls, "__getattribute__")
        if isinstance(found[1], types.FunctionType):  # a custom __getattribute__: run it
            return self.class_attr(tx, "__getattribute__").call(tx, [ConstantVariable(name)], {})
        return self.generic_getattr(tx, name)

    def generic_getattr(self, tx, name):
        """`object.__getattribute__(self, name)`, step by step."""
        if self.value is not None and (stored := tx.side_effects.load_attr(self, name)):
            return stored
        if name == "__class__":
            return self.cls_var
        if name == "__dict__":
            return self.instance_dict(tx)
        found = class_lookup(self.cls, name)
        if found is not None and is_data_descriptor(found[1]):
            return self.descriptor_get(tx, name, *found)
        value = self.instance_attr(tx, name)
        if value is not None:
            return value
        if found is not None:
            return self.descriptor_get(tx, name, *found)
        hook = class_lookup(self.cls, "__getattr__")
        if hook is not None and isinstance(hook[1], types.FunctionType):
            return self.class_attr(tx, "__getattr__").call(tx, [ConstantVariable(name)], {})
        raise ObservedAttributeError(f"{self.cls.__name__!r} object has no attribute {name!r}")

    def instance_attr(self, tx, name):
        """`name` in the instance's own `__dict__`, or None. For an object from outside, that
        it is missing is an assumption too: assigned later, it would hide the class's."""
        if self.value is None:
            return self.attrs.get(name)
        view = tx.side_effects.instance_dicts.get(id(self))
        if view is not None:  # the code holds `__dict__`: the attributes are read there
            return view.getitem(tx, ConstantVariable(name)) if name in view.items else None
        source = item_of(attr_of(self.source, "__dict__"), name)
        instance = getattr(self.value, "__dict__", None)
        if instance is None:
            return None
        if name not in instance:
            tx.trace.assume("absent", source)
            return None
        return tx.wrap(instance[name], source)

    def instance_dict(self, tx):
        if self.value is not None:
            view = tx.wrap(vars(self.value), attr_of(self.source, "__dict__"))
            tx.side_effects.hold_attributes_in(self, view)
            return view
        view = DictVariable({})
        view.items = self.attrs  # the same dict: changes through `__dict__` are attribute changes
        return view

    def class_attr(self, tx, name):
        return class_attribute(tx, self, self.cls_var, name, *class_lookup(self.cls, name))

    def descriptor_get(self, tx, name, index, attr):
        if isinstance(attr, types.MemberDescriptorType):  # __slots__
            if self.value is not None:
                return tx.wrap(getattr(self.value, name), attr_of(self.source, name))
            if name not in self.attrs:
                raise ObservedAttributeError(f"slot {name!r} is not set")
            return self.attrs[name]
        return class_attribute(tx, self, self.cls_var, name, index, attr)

    # --- writing attributes -------------------------------------------------------------------

    def set_attr(self, tx, name, value):
        found = class_lookup(self.cls, "__setattr__")
        if isinstance(found[1], types.FunctionType):  # a custom __setattr__: run it
            self.class_attr(tx, "__setattr__").call(tx, [ConstantVariable(name), value], {})
            return
        self.generic_setattr(tx, name, value)

    def generic_setattr(self, tx, name, value, generic=False):
        """`object.__setattr__(self, name, value)` (`value` DELETED for `object.__delattr__`)."""
        found = class_lookup(self.cls, name)
        if found is not None and isinstance(found[1], property):
            part = "fdel" if value is DELETED else "fset"
            if getattr(found[1], part) is None:
                raise ObservedAttributeError(
                    f"property {name!r} of {self.cls.__name__} is read-only"
                )
            made_here = self.cls_var.own_attribute(found[0], name)  # class_statements.py
            if made_here is not None:
                setter = made_here.part(part)
            else:
                source = attr_of(self.cls_var.attribute_source(found[0], name), part)
                setter = tx.wrap(getattr(found[1], part), source)
            setter.bound_to(self).call(tx, [] if value is DELETED else [value], {})
            return
        if self.value is None:
            if value is DELETED:
                if self.attrs.pop(name, None) is None:
                    raise ObservedAttributeError(f"no attribute {name!r} to delete")
            else:
                self.attrs[name] = value
            return
        if value is DELETED and not is_slot(self.cls, name) and not self.has_own(tx, name):
            raise ObservedAttributeError(f"{self.cls.__name__!r} object has no attribute {name!r}")
        tx.side_effects.store_attr(self, name, value, generic=generic)

    def has_own(self, tx, name) -> bool:
        """Is `name` in the instance's own `__dict__` now (as the trace has changed it)?"""
        try:
            if tx.side_effects.load_attr(self, name) is not None:
                return True
        except ObservedAttributeError:  # the trace deleted it already
            return False
        return self.instance_attr(tx, name) is not None

    def del_attr(self, tx, name):
        found = class_lookup(self.cls, "__delattr__")
        if isinstance(found[1], types.FunctionType):
            self.class_attr(tx, "__delattr__").call(tx, [ConstantVariable(name)], {})
            return
        self.generic_setattr(tx, name, DELETED)

    # --- the rest of the object protocol ----------------------------------------------------------

    def call(self, tx, args, kwargs):
        return self.special(tx, "__call__", args, kwargs)

    def special(self, tx, name, args, kwargs=None):
        """Call one of the class's special methods (`__call__`, `__getitem__`, `__len__` ...)."""
        found = class_lookup(self.cls, name)
        if found is None:
            raise ObservedException(TypeError(f"{self.cls.__name__} has no {name}"))
        return self.descriptor_get(tx, name, *found).call(tx, args, kwargs or {})

    def call_method(self, tx, name, args, kwargs):
        return self.get_attr(tx, name).call(tx, args, kwargs)

    def getitem(self, tx, key):
        return self.special(tx, "__getitem__", [key])

    def setitem(self, tx, key, value):
        self.special(tx, "__setitem__", [key, value])

    def unpack(self, tx):
        return self.iterate(tx).unpack(tx)

    def iterate(self, tx):
        found = class_lookup(self.cls, "__iter__")
        if found is None and class_lookup(self.cls, "__getitem__") is not None:
            from .iterators import GetItemIteratorVariable  # iterators.py builds on this file

            return GetItemIteratorVariable(self)  # the old sequence protocol: obj[0], obj[1] ...
        if found is None or found[1] is None:  # `__iter__ = None` says "not iterable"
            raise ObservedException(TypeError(f"'{self.cls.__name__}' object is not iterable"))
        iterator = self.special(tx, "__iter__", [])
        if not isinstance(iterator, UserObjectVariable):
            return iterator.iterate(tx)
        if class_lookup(iterator.cls, "__next__") is None:  # CPython's iter() checks the same
            kind = iterator.cls.__name__
            raise ObservedException(TypeError(f"iter() returned non-iterator of type '{kind}'"))
        from .iterators import UserIteratorVariable  # iterators.py builds on this file

        return UserIteratorVariable(iterator)

    def truth(self, tx):
        for name in ("__bool__", "__len__"):
            if class_lookup(self.cls, name) is not None:
                result = self.special(tx, name, [])
                return bool(result.as_python_constant())
        return True

    def reconstruct(self, cg):
        if self.source is not None:
            cg.load_source(self.source)
            return
        if self.cls_var.source is None:
            raise CannotReconstruct(f"{self}: its class has no source")
        contents = self.contents
        recipe = getattr(contents, "recipe", None) and contents.snapshot()  # a set's (sets.py)
        cg.call_callable(
            container_subclasses.rebuild,
            lambda: cg.reconstruct(self.cls_var),
            lambda: cg.build_map(self.attrs),
            lambda: cg.load_const(None) if contents is None or recipe else cg.reconstruct(contents),
            lambda: cg.load_const(recipe),
        )
        cg.keep(self)

    def __repr__(self):
        where = self.source or "made in the trace"
        return f"UserObjectVariable({self.cls.__qualname__} {where})"


def bound_qualname(cls, attr) -> str:
    """`obj.name.__qualname__`, where `attr` is what `obj`'s class `cls` has for `name`: a C
    method bound to an object is named after the object's class (CPython's
    meth_get__qualname__: `x.add` is "Tensor.add", `torch.Tensor.add` "TensorBase.add"), a
    slot wrapper after the class that defines it (wrapper_qualname: "list.__len__"), a
    Python function by its own name."""
    if isinstance(attr, types.MethodDescriptorType):
        return f"{cls.__qualname__}.{attr.__name__}"
    return attr.__qualname__


class BuiltinSlotVariable(Variable):
    """A method of a builtin base class reached from a user class (`object.__setattr__`,
    `dict.__setitem__`, `dict.keys` of a dict subclass), bound to `obj`: the VM's version of it."""

    def __init__(self, descriptor, obj: UserObjectVariable):
        self.descriptor, self.obj = descriptor, obj

    def get_attr(self, tx, name):  # `s.add.__name__`, which assertRaises reads
        if name == "__self__":
            return self.obj
        if name in ("__name__", "__doc__"):
            return ConstantVariable(getattr(self.descriptor, name))
        if name == "__qualname__":
            return ConstantVariable(bound_qualname(self.obj.cls, self.descriptor))
        raise Unsupported("unsupported_value", f"attribute {name!r} of the method {self}")

    def call(self, tx, args, kwargs):
        name = self.descriptor.__name__
        obj = self.obj
        if name == "__getattribute__":
            return obj.generic_getattr(tx, args[0].as_python_constant())
        if name == "__setattr__":
            obj.generic_setattr(tx, args[0].as_python_constant(), args[1], generic=True)
            return ConstantVariable(None)
        if name == "__delattr__":
            obj.generic_setattr(tx, args[0].as_python_constant(), DELETED, generic=True)
            return ConstantVariable(None)
        if name == "__init__" and self.descriptor.__objclass__ is object:
            return ConstantVariable(None)
        if name in ("__eq__", "__ne__") and self.descriptor.__objclass__ is object:
            same = args[0] is obj or (obj.value is not None and args[0].identity() is obj.value)
            return ConstantVariable(same == (name == "__eq__"))
        if name == "__reduce_ex__" and self.descriptor.__objclass__ is object:
            return reduce_ex(tx, obj, *args)
        items = obj.items_var(tx)
        if items is not None:  # dict.__setitem__, set.add, list.__init__, set.__and__ ...
            result = container_subclasses.call_builtin(tx, name, items, args, kwargs)
            return obj if result is items else result  # `s |= t` is s itself
        raise Unsupported(
            "unsupported_value", f"{self.descriptor.__qualname__} of {obj.cls.__qualname__}"
        )

    def __repr__(self):
        return f"BuiltinSlotVariable({self.descriptor.__qualname__})"


def is_user_object(value) -> bool:
    """An instance of a class written in Python (builder.py's WRAPPERS)."""
    return not isinstance(value, type) and is_python_class(type(value))


def wrap_user_object(tx, value, source):
    """An instance of a user class from outside: its type, and the attributes the code reads."""
    trace = None
    if source is not None:
        tx.trace.assume("type", source)
        trace = tx.trace
    cls_var = tx.wrap(type(value), attr_of(source, "__class__"))
    if not isinstance(cls_var, UserClassVariable):  # a C++ class that torch exports, known by
        cls_var = UserClassVariable(type(value), cls_var.source)  # identity (torch.ScriptObject)
    return UserObjectVariable(value, cls_var, source, trace)
