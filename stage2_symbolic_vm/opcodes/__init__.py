"""The handlers of the rarer opcodes, as mixins of the InstructionTranslator (vm.py).

names.py          closure cells, globals assigned, `del`, imports, `super()`
calls.py          `f(*args, **kwargs)`, 3.13's CALL_KW, functions made in the trace
classes.py        `class` statements: LOAD_BUILD_CLASS and the class body's names
building.py       dicts, sets, strings, slices, and what comprehensions fill
control_flow.py   3.11's `and`/`or`, 3.13's TO_BOOL, generators, `with`
exceptions.py     `raise`, `try`/`except`/`finally`, the exception being handled
"""
