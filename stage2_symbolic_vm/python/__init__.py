"""The breadth of Python: the values a real program uses besides tensors and constants.

containers.py       lists, tuples, dicts and sets, with CPython's semantics
iterators.py        lazy iterators and generators, stepped one item at a time
operators.py        Python's operators on every kind of value (BINARY_OP's tables)
builtins_table.py   the builtins and the standard library the VM models, one table
objects.py          classes written in Python and their instances; objects not modeled
callables.py        method objects, functools.partial, super(), a function's attributes
exceptions.py       exception objects the traced code makes, raises and catches
constants.py        a constant's attributes and methods, run now
"""
