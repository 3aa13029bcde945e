"""Calls and functions in the VM: CALL and its kin, MAKE_FUNCTION, and where the NULL sits.

These handlers are methods of the InstructionTranslator (vm.py), kept in a file of their
own because the three Python versions differ most here: the NULL that CALL expects sits
below the callable on 3.11 and 3.12 and above it on 3.13 (`push_callable`,
`pop_callable`), keyword names come from KW_NAMES (3.11, 3.12) or from CALL_KW (3.13),
and 3.13's MAKE_FUNCTION makes a bare function that SET_FUNCTION_ATTRIBUTE completes.
What a call then does is `InstructionTranslator.call`.
"""

from ..functions import UserFunctionVariable
from ..variables import NULL, Variable
from .control_flow import PY313


class Calls:
    """The call- and function-making handlers of InstructionTranslator."""

    def push_callable(self, fn, null: bool):
        """Push a callable for CALL, with a NULL beside it if `null`: below it on 3.11 and 3.12,
        above it on 3.13, whose CALL reads [callable, self or NULL, *args]."""
        if null and not PY313:
            self.push(NULL)
        self.push(fn)
        if null and PY313:
            self.push(NULL)

    def pop_callable(self) -> tuple[Variable, list]:
        """Pop the two slots below a call's arguments: the function, and the arguments they add.
        [NULL, fn] (3.11, 3.12) and [fn, NULL] (3.13) add none; [method, self] adds self."""
        below = [value for value in self.popn(2) if value is not NULL]
        return below[0], below[1:]

    def KW_NAMES(self, inst):
        # dis does not resolve this constant on 3.11, so read it from co_consts
        self.kw_names = self.code.co_consts[inst.arg]

    def CALL(self, inst):
        # the callable and a NULL or `self` (see pop_callable), then the arguments; the last
        # len(kw_names) of them are keywords (KW_NAMES before the CALL, or CALL_KW)
        args = self.popn(inst.arg)
        fn, before = self.pop_callable()
        args = [*before, *args]
        names, self.kw_names = self.kw_names, ()
        split = len(args) - len(names)
        self.push(self.call(fn, args[:split], dict(zip(names, args[split:], strict=True))))

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
        # 0x04, annotations: they do not change what the function computes
