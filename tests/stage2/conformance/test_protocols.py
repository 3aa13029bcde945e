"""The builtins that ask a user's object through its class's special methods, with
CPython's errors (Python/bltinmodule.c, Objects/abstract.c; Lib/test/test_builtin.py,
test_bisect.py's `GetOnly`)."""

import collections

import pytest
import torch

from tests.stage2.conformance import check, outcome

pytestmark = pytest.mark.stage2


class GetOnly:
    """A sequence by `__getitem__` alone: no length."""

    def __getitem__(self, index):
        return 10


class Sized:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


def length(x, obj):
    return x + 1, outcome(len, obj)


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (GetOnly(), "TypeError"),  # not AttributeError: len() asks the class, not the object
        (Sized(3), 3),
        (Sized(True), 1),  # a bool is an int
        (Sized(-1), "ValueError"),
        (Sized(1.5), "TypeError"),
    ],
    ids=["no-len", "three", "true", "negative", "float"],
)
def test_len_asks_the_class_and_checks_the_answer(obj, expected):
    assert check(length, torch.ones(2), obj)[1] == expected


def method_names(x, items):
    method = items.pop
    return x + 1, method.__name__, method.__qualname__, method.__self__ is items, x.add.__name__


def test_a_method_of_a_builtin_value_has_its_name_and_its_self():
    """unittest's `assertRaises(IndexError, items.pop)` reads the callable's `__name__`."""
    assert check(method_names, torch.ones(2), [1, 2])[1:] == ("pop", "list.pop", True, "add")


class Listing(list):
    pass


def bound_names(x, items, listing, d):
    methods = (x.add, x.__add__, x.__repr__, x.sin, items.pop, items.__len__, d.keys)
    methods += (listing.pop, listing.__len__, listing.__init__)
    return x + 1, [m.__qualname__ for m in methods], [m.__name__ for m in methods]


def test_a_bound_methods_qualname_is_cpythons():
    """CPython names a C method bound to an object after the object's class
    (meth_get__qualname__: `x.add` is "Tensor.add" where `torch.Tensor.add` is
    "TensorBase.add"), a slot wrapper after the class that defines it (wrapper_qualname:
    `listing.__len__` is "list.__len__"), a Python function by its own name."""
    p = torch.nn.Parameter(torch.ones(2))
    check(bound_names, torch.ones(2), [1, 2], Listing([1]), {"a": 1})
    check(lambda p: (p * 2, p.add.__qualname__), p)


def pop_from_empty(x):
    import unittest

    case = unittest.TestCase()
    case.assertRaises(IndexError, [].pop)
    return x + 1


def test_assert_raises_of_a_lists_method():
    check(pop_from_empty, torch.ones(2))


def iterate_a_builtin(x):
    import operator

    return x + 1, outcome({1, 2}.intersection, operator.add), outcome(list, len)


def test_a_builtin_function_is_not_iterable():
    """CPython's TypeError, which test_set's TestOnlySetsOperator expects of
    `{1, 2}.intersection(operator.add)`."""
    assert check(iterate_a_builtin, torch.ones(2))[1:] == ("TypeError", "TypeError")


def bad_calls_and_slices(x):
    import collections

    cases = (
        lambda: [1, 2][::0],  # ValueError: slice step cannot be zero
        lambda start="a": (1, 2)[start:],  # TypeError: slice indices must be integers
        lambda: collections.deque([1], 2, 3),  # TypeError: too many arguments
        lambda: frozenset(1, 2),
    )
    return x + 1, [outcome(case) for case in cases]


def test_a_bad_slice_or_a_call_with_bad_arguments_raises_cpythons_error():
    """test_list's `a[::0]` and test_deque's `deque('abc', 2, 3)` expect CPython's errors;
    the VM failed on them (its own slicing, its handler's own signature)."""
    expected = ["ValueError", "TypeError", "TypeError", "TypeError"]
    assert check(bad_calls_and_slices, torch.ones(2))[1] == expected


class Countdown:
    """Its own iterator (test_list's IterFunc): `__iter__` returns self."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return self

    def __next__(self):
        if self.n == 0:
            raise StopIteration
        self.n -= 1
        return self.n


class NotAnIterator:
    def __iter__(self):
        return self  # no __next__


def iterate_objects(x, outside):
    made_here = list(Countdown(3))
    total = 0
    for value in outside:  # from outside: its `n` is written back after the graph
        total += value
    return x + total, made_here, outside.n, outside_of(NotAnIterator())


def outside_of(obj):
    return outcome(list, obj)


def test_an_object_that_is_its_own_iterator():
    """The VM asked `__iter__` of what `__iter__` returned, forever (a RecursionError inside
    the VM); CPython calls `__next__` until StopIteration, and refuses an `__iter__` that
    returns a non-iterator."""
    found = check(iterate_objects, torch.ones(2), Countdown(4))
    assert found[1:] == ([2, 1, 0], 0, "TypeError")


class Shown:
    def __init__(self, v):
        self.v = v

    def __repr__(self):
        return f"Shown({self.v})"


class Told(Shown):
    def __str__(self):
        return "told"


class Tags(set):
    pass


def test_str_and_repr_known_while_tracing():
    """`repr` and `str` of constants and their containers (a set in CPython's order), of an
    object whose class writes `__repr__` or `__str__` (object's `__str__` asks `__repr__`),
    and of a container subclass's instance, whose builtin repr names its class."""

    def case(x, d):
        od = collections.OrderedDict(a=1)
        od["b"] = [2, (3,)]
        texts = repr(od), str([1, "a"]), repr({3, 1, 2}), repr(d), str(frozenset({2}))
        objects = repr(Shown(2)), str(Shown(3)), str(Told(1)), repr(Told(1)), repr(Tags("a"))
        return x + 1, texts, objects

    check(case, torch.ones(2), {"k": (1, 2.5)})
