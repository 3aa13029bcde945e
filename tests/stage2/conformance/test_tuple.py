"""Tuples in the VM follow CPython's Objects/tupleobject.c: hashing, comparison, operators."""

import collections

import pytest
import torch

from tests.stage2.conformance import Value, check, outcome

pytestmark = pytest.mark.stage2

Point = collections.namedtuple("Point", "x y")


def test_a_tuple_key_is_found_by_an_equal_tuple():
    def case(x):
        table = {(1, x): "first"}
        table[(1, x)] = "second"
        return x + 1, len(table), table[(1, x)], (1, x) in table, (2, x) in table

    check(case, torch.ones(2))


def test_a_tuple_holding_a_list_is_unhashable():
    def case(x):
        return (
            x + 1,
            outcome(lambda: {(1, [2]): 3}),
            outcome(hash, (1, [2])),
            hash((1, 2)) == hash((1, 2)),
        )

    check(case, torch.ones(2))


def test_equality_is_item_by_item():
    def case(x):
        return x + 1, (x, 1) == (x, 1), (x, 1) != (x, 1), (Value(1), 2) == (Value(1), 2)

    check(case, torch.ones(2))


def test_a_namedtuple_equals_a_tuple():
    def case(x):
        p = Point(1, x)
        return x + 1, p == (1, x), (1, x) == p, p[:1] == (1,), Point(1, 2) < (1, 3)

    check(case, torch.ones(2))


def test_order_is_lexicographic():
    def case(x):
        return (
            x + 1,
            (1, 2) < (1, 2, 3),
            (1, x) < (2, x),
            (x, 1) <= (x, 1),
            outcome(lambda: (1, "a") < (1, 2)),
        )

    check(case, torch.ones(2))


def test_items_cannot_be_assigned():
    def case(x):
        t = (1, 2)

        def assign():
            t[0] = 5

        def assign_made():
            u = (x, 1)
            u[1] = 2

        return x + 1, outcome(assign), outcome(assign_made), t

    check(case, torch.ones(2))


def test_concatenation_and_repetition():
    def case(x):
        t = (1, x)
        alias = t
        t += (3,)
        return (
            x + 1,
            len(alias),
            len(t),
            t[:2] * 2 == (1, x, 1, x),
            2 * (0,),
            outcome(lambda: (1,) + [2]),
            outcome(lambda: (1,) * "a"),
        )

    check(case, torch.ones(2))


def test_index_and_count_use_eq():
    def case(x):
        t = (Value(0), Value(1), x, Value(1))
        return (
            x + 1,
            t.index(Value(1)),
            t.count(Value(1)),
            t.index(x),
            Value(1) in t,
            outcome(t[:2].index, 5),
        )

    check(case, torch.ones(2))


def test_slices():
    def case(x):
        t = (0, 1, 2, 3, 4)
        return x + 1, t[::-1], t[1:-1], t[::2], t[4:0:-2], t[-100:100]

    check(case, torch.ones(2))


def test_unpacking_the_wrong_number_of_items():
    def case(x):
        def unpack(t):
            a, _b = t
            return a

        def star(t):
            _a, *rest, _b = t
            return rest

        return (
            x + 1,
            outcome(unpack, (1, 2, 3)),
            outcome(unpack, (1,)),
            star((1, 2, 3, 4)),
            outcome(star, (1,)),
        )

    check(case, torch.ones(2))
