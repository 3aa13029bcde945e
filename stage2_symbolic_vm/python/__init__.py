"""The breadth of Python: the values a real program uses besides tensors and constants.

containers.py       what lists, tuples, dicts and sets share: a key's hash, a method's call
sequences.py        lists and tuples (namedtuples among them), with CPython's semantics
dicts.py            dicts and their live views (keys, values, items)
sets.py             sets and frozensets, combined by CPython on their keys
iterators.py        lazy iterators and generators, stepped one item at a time
itertools_module.py the itertools module's functions, lazy where they may be endless
operators.py        Python's operators on every kind of value (BINARY_OP's tables)
operator_module.py  the operator module: `operator.add` is `+`, itemgetter & co
builtins_table.py   the builtins and the standard library the VM models, one table
objects.py          classes written in Python and their instances
container_subclasses.py  instances of dict, list, set, tuple subclasses: object and contents
class_statements.py classes made by a `class` statement in the trace, and its decorators
annotations.py      type annotations (`Optional[int]`, `int | None`), computed now
outside_objects.py  objects not modeled (a C class's): passed on, or pure calls folded
callables.py        method objects, functools.partial, super(), a function's attributes
exceptions.py       exception objects the traced code makes, raises and catches
constants.py        a constant's attributes and methods, run now
texts.py            `str()` and `repr()` of what is known while tracing
signatures.py       `inspect.signature` safe in threads (CPython 3.11's `ast.parse` race)
pure_python.py      heapq's and bisect's C functions, traced as their Python twins
random_generators.py  `random.Random(seed)` made in the trace, run while tracing
"""
