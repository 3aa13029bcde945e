"""Conformance of the VM's Python with CPython's: containers, iterators and exceptions.

One module per type, in the manner of CPython's own Lib/test (test_list.py,
test_dict.py, test_set.py ...): many small cases, each about one rule of the
language. A case is a function of a tensor that uses it in a tensor op (so a
graph is captured) and returns what it observed. An error it expects is
caught inside the case, as `assertRaises` would, and returned as the name of
its type (`outcome`): under `fullgraph=True` an exception may not leave the
compiled function.

`check(case, *args)` runs the case plainly and compiled with
`fullgraph=True`, on copies of the arguments, and asserts that both return the
same (types, the order of dicts and sets, tensors' values included), that the
arguments end up the same, and that the compiled run was one graph with no
break: a case that fell back to Python would compare CPython with itself.
"""

import collections
import copy

import torch

import stage4_fx


class Value:
    """Equal by value (its own __eq__, so unhashable), ordered by `<` alone: the items whose
    comparisons the VM must ask the objects themselves about."""

    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, Value) and other.v == self.v

    def __lt__(self, other):
        return self.v < other.v


def outcome(fn, *args):
    """`fn(*args)`, or the name of the exception type it raised (called inside the cases)."""
    try:
        return fn(*args)
    except Exception as error:
        return type(error).__name__


def described(value):
    """What a caller can see of a value, as plain data that `==` compares strictly: the type of
    every container, the order of dicts and sets, a tensor's dtype and values, an exception's
    type and arguments, an object's attributes."""
    if isinstance(value, torch.Tensor):
        return ("tensor", value.dtype, value.tolist())
    if isinstance(value, BaseException):
        return (type(value), described(value.args))
    if isinstance(value, dict):
        items = [(described(k), described(v)) for k, v in value.items()]
        return (type(value), getattr(value, "default_factory", None), items)
    if isinstance(value, collections.deque):
        return (collections.deque, value.maxlen, [described(item) for item in value])
    if isinstance(value, (list, tuple, set, frozenset)):
        return (type(value), [described(item) for item in value])
    if hasattr(value, "__dict__") and not isinstance(value, type) and not callable(value):
        return (type(value), described(vars(value)))
    return (type(value), value)


def check(case, *args):
    """`case(*args)` compiled with fullgraph=True behaves as it does in CPython; returns what
    CPython's run returned."""
    plain_args, compiled_args = copy.deepcopy(args), copy.deepcopy(args)
    expected = case(*plain_args)
    compiled = stage4_fx.compile(case, backend="eager", fullgraph=True)
    actual = compiled(*compiled_args)
    options = compiled.options
    assert not options.breaks, "\n".join(str(b) for b in options.breaks)
    assert any(frame.graph is not None for frame in options.frames), "no graph was captured"
    assert described(actual) == described(expected), f"compiled {actual!r}, CPython {expected!r}"
    assert described(compiled_args) == described(plain_args), (
        f"arguments left as {compiled_args!r}, CPython left {plain_args!r}"
    )
    return expected
