"""Deques in the VM follow CPython's Modules/_collectionsmodule.c: both ends, `maxlen`,
indexing, rotation, iteration over a deque that changes, and a deque from outside."""

import collections
import copy

import pytest
import torch

from tests.stage2.conformance import check, outcome

pytestmark = pytest.mark.stage2

deque = collections.deque
X = torch.ones(2)


def test_maxlen_keeps_the_last_items_and_drops_at_the_other_end():
    def case(x):
        d = deque(range(5), maxlen=3)
        d.append(5)  # drops 2, on the left
        d.appendleft(-1)  # drops 5, on the right
        return x * len(d), d, d.maxlen

    check(case, X)


def test_extend_and_extendleft_add_one_item_at_a_time():
    def case(x):
        d = deque([0], maxlen=4)
        d.extend([1, 2])
        d.extendleft([3, 4, 5])  # 5 ends first; each one drops an item on the right
        e = deque()
        e.extend(e)  # itself, read first
        return x + d[0], d, e

    check(case, X)


def test_pop_popleft_and_the_errors_of_an_empty_deque():
    def case(x):
        d = deque([1, 2, 3])
        a, b = d.pop(), d.popleft()
        empty = deque()
        return x * a + b, d, outcome(empty.pop), outcome(empty.popleft)

    check(case, X)


@pytest.mark.parametrize("n", [1, -1, 0, 7, -7])
def test_rotate(n):
    def case(x):
        d, empty = deque([1, 2, 3, 4]), deque()
        d.rotate(n)
        empty.rotate(n)
        one = deque([1, 2, 3])
        one.rotate()
        return x + d[0], d, empty, one

    check(case, X)


def test_indexing_by_int_only():
    def case(x):
        d = deque([1, 2, 3])
        d[-1] = 9
        del d[0]
        errors = outcome(lambda: d[5]), outcome(lambda: d[1:2]), outcome(lambda: d["a"])
        return x * d[-1], d, errors

    check(case, X)


def test_insert_remove_count_index_and_their_errors():
    def case(x):
        d = deque([1, 2, 2, 3], maxlen=5)
        d.insert(1, 7)
        full = outcome(d.insert, 0, 8)
        d.remove(2)
        missing = outcome(d.remove, 42)
        return x + d.count(2), d, full, missing, d.index(3), 7 in d, len(d), bool(deque())

    check(case, X)


def test_maxlen_must_be_a_non_negative_int():
    def case(x):
        negative = outcome(deque, [1], -1)
        not_int = outcome(deque, [1], 1.5)
        zero = deque([1, 2], maxlen=0)
        zero.append(3)
        return x + len(zero), negative, not_int, zero

    check(case, X)


def test_iterating_a_deque_that_changes():
    def case(x):
        d = deque([1, 2, 3])
        it = iter(d)
        next(it)
        d[0] = 5  # a replaced item: the iterator goes on
        d.reverse()  # so does a reversal
        went_on = next(it)
        d.append(4)  # an added item: CPython's RuntimeError
        return x + went_on, outcome(next, it), type(it).__name__

    check(case, X)


def test_copies_and_equality():
    def case(x):
        d = deque([1, 2], maxlen=3)
        c, cc = d.copy(), copy.copy(d)
        c.append(3)
        return x + len(c), d, c, cc, d == cc, d == deque([1, 2]), d == [1, 2]

    check(case, X)


def test_a_deque_from_outside_is_changed_as_eager_changes_it():
    def case(x, d):
        d.append(x.shape[0])
        d.appendleft(0)
        d.rotate(1)
        return x * d[1], d  # the caller's deque, with its maxlen

    check(case, X, deque([1, 2, 3], maxlen=4))
    check(case, X, deque([1]))
