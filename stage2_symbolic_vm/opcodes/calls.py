"""Calls and functions in the VM: CALL's kin, and MAKE_FUNCTION for a `def` inside a function.

These handlers are methods of the InstructionTranslator (vm.py), kept in a file of their
own because a small model needs none of them: 3.13's CALL_KW (keyword names on the stack
rather than from KW_NAMES), `f(*args, **kwargs)` (CALL_FUNCTION_EX), and the functions the
code makes itself, a lambda or a nested `def` (3.13's MAKE_FUNCTION makes a bare function
that SET_FUNCTION_ATTRIBUTE completes). CALL itself, and where its NULL sits, is in vm.py.
"""

import sys

from ..functions import UserFunctionVariable
from ..python.dicts import DictVariable
from ..variables import Variable

PY313 = sys.version_info >= (3, 13)


class Calls:
    """The call- and function-making handlers of InstructionTranslator."""

    def CALL_KW(self, inst):  # 3.13: the keywords' names are a tuple on top of the arguments
        self.kw_names = self.pop().as_python_constant()
        self.CALL(inst)

    def CALL_FUNCTION_EX(self, inst):
        kwargs = self.pop() if inst.arg & 1 else None
        kwargs = {k: kwargs.value(self, k) for k in list(kwargs.items)} if kwargs else {}
        args = self.pop().unpack(self)
        fn, before = self.pop_callable()
        self.push(self.call(fn, [*before, *args], dict(kwargs)))

    def MAKE_FUNCTION(self, inst):
        # 3.11 and 3.12 pop the parts the flags of the argument name; 3.13 makes a bare
        # function, and SET_FUNCTION_ATTRIBUTE adds each part after
        fn = UserFunctionVariable(self.pop().as_python_constant(), self.globals)
        fn.globals_source = self.globals_source
        for flag in (0x08, 0x04, 0x02, 0x01):  # the order they are popped in
            if not PY313 and inst.arg & flag:
                self.set_function_attribute(fn, flag, self.pop())
        self.push(fn)

    def SET_FUNCTION_ATTRIBUTE(self, inst):  # 3.13
        fn = self.pop()
        self.set_function_attribute(fn, inst.arg, self.pop())
        self.push(fn)

    def set_function_attribute(self, fn: UserFunctionVariable, flag: int, value: Variable):
        if flag == 0x08:
            fn.closure = tuple(value.items)
        elif flag == 0x02:
            fn.kwdefaults = dict(value.items)
        elif flag == 0x01:
            fn.defaults = tuple(value.unpack(self))
        elif flag == 0x04:  # annotations, (name, value, name, value ...): the function's dict
            pairs = value.unpack(self)
            names = [name.as_python_constant() for name in pairs[::2]]
            fn.slots["__annotations__"] = DictVariable(dict(zip(names, pairs[1::2], strict=True)))
