"""A `class` statement inside the traced code: LOAD_BUILD_CLASS and the class body's names.

`class A(Base): ...` compiles to a call of `builtins.__build_class__` with a function that
runs the class body (python/class_statements.py). The body is code without fast locals: it
stores its names in a namespace dict (STORE_NAME), reads them there before the globals
(LOAD_NAME), and reads the enclosing function's variables through LOAD_CLASSDEREF (3.11)
or LOAD_FROM_DICT_OR_DEREF (3.12). Here the body runs in a frame of its own whose
`locals` is that namespace. LOAD_FROM_DICT_OR_GLOBALS (3.12) is left unhandled: CPython
emits it only in the annotation scopes of PEP 695's `type` statements and generic
definitions inside a class body, which the VM does not trace. CPython:
Python/bltinmodule.c's builtin___build_class__ and the opcodes' cases in
Python/bytecodes.c.
"""

import builtins

from ..errors import ObservedException
from ..python.builtins_table import BuiltinVariable
from ..python.dicts import DictVariable
from ..variables import Variable


class Classes:
    """The handlers of InstructionTranslator for class statements and class bodies."""

    def LOAD_BUILD_CLASS(self, inst):
        self.push(BuiltinVariable(builtins.__build_class__))

    def LOAD_NAME(self, inst):
        """The namespace first, then the globals and builtins (LOAD_GLOBAL's own lookup)."""
        if inst.argval in self.locals:
            self.push(self.read_local(inst.argval))
        else:
            self.push(self.global_or_builtin(inst.argval))

    def STORE_NAME(self, inst):
        self.store_local(inst.argval, self.pop())

    def SETUP_ANNOTATIONS(self, inst):  # a body with `name: type`: its `__annotations__` dict
        if "__annotations__" not in self.locals:
            self.locals["__annotations__"] = DictVariable({})

    def DELETE_NAME(self, inst):
        if self.locals.pop(inst.argval, None) is None:
            raise ObservedException(NameError(f"name {inst.argval!r} is not defined"))

    def LOAD_CLASSDEREF(self, inst):  # 3.11: a free variable, unless the namespace has the name
        if inst.argval in self.locals:
            self.push(self.read_local(inst.argval))
        else:
            self.LOAD_DEREF(inst)

    def LOAD_LOCALS(self, inst):  # 3.12: the namespace, for the LOAD_FROM_DICT_OR_* that follow
        self.push(NAMESPACE)

    def LOAD_FROM_DICT_OR_DEREF(self, inst):  # 3.12: the namespace, then the cell
        self.pop()  # LOAD_LOCALS's marker: the namespace is this frame's locals
        self.LOAD_CLASSDEREF(inst)


class _Namespace(Variable):
    """What LOAD_LOCALS pushes: a marker, since the namespace is the frame's own `locals`."""

    def __repr__(self):
        return "NAMESPACE"


NAMESPACE = _Namespace()
