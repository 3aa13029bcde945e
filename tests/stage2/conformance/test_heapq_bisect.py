"""heapq and bisect: C functions (`_heapq`, `_bisect`) the VM runs as their Python twins
(python/pure_python.py), held to CPython's answers, as Lib/test/test_heapq.py holds the two
implementations to the same ones: the results, the caller's list afterwards, and the
exceptions where the C functions are stricter than the Python ones."""

import bisect
import heapq
from heapq import heappush

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import stage4_fx
from tests.stage2.conformance import Value, check, outcome

pytestmark = pytest.mark.stage2


def test_a_heap_from_outside_is_changed_as_eager_changes_it():
    def case(x, h):
        heapq.heapify(h)
        heappush(h, 0)  # imported by name: the same C function
        first = heapq.heappop(h)
        pushed_popped = heapq.heappushpop(h, 7)
        replaced = heapq.heapreplace(h, -1)
        return x + first, pushed_popped, replaced, heapq.nsmallest(2, h), heapq.nlargest(2, h)

    check(case, torch.ones(2), [5, 1, 3, 9, 2])


def test_a_heap_of_objects_asks_them_to_compare():
    def case(x, h):
        for v in (Value(4), Value(1), Value(3)):
            heapq.heappush(h, v)
        return x * 2, [heapq.heappop(h).v for _ in range(len(h))]

    check(case, torch.ones(2), [])


def test_the_heap_functions_are_as_strict_as_the_c_ones():
    """`_heapq` wants a list and no keywords; the Python twin would take either."""

    def case(x):
        wrong_type = outcome(heapq.heappush, (1,), 2)  # the twin: AttributeError
        keyword = outcome(lambda: heapq.heappush([1], item=2))
        empty = outcome(heapq.heappop, [])
        return x + 1, wrong_type, keyword, empty

    assert check(case, torch.ones(2))[1:] == ("TypeError", "TypeError", "IndexError")


def test_bisect_finds_and_inserts_as_eager():
    def case(x, xs):
        bisect.insort(xs, 4)
        bisect.insort_left(xs, 4, key=lambda v: v)
        at = bisect.bisect_left(xs, 3), bisect.bisect(xs, 4), bisect.bisect_right(xs, 4, 1, 3)
        return x * at[0], at, outcome(bisect.bisect_left, xs, 1, -1)

    check(case, torch.ones(2), [1, 2, 5, 7])


OPERATIONS = ("push", "pop", "pushpop", "replace", "insort", "bisect")


@settings(max_examples=40, deadline=None)
@given(
    start=st.lists(st.integers(-5, 5), max_size=6),
    steps=st.lists(st.tuples(st.sampled_from(OPERATIONS), st.integers(-5, 5)), max_size=8),
)
def test_random_heap_and_bisect_programs(start, steps):
    """Random sequences of the twins' operations on a list from outside, errors included
    (a pop of an empty heap)."""

    def case(x, h, s):
        heapq.heapify(h)
        seen = []
        for op, v in steps:
            if op == "push":
                heapq.heappush(h, v)
            elif op == "pop":
                seen.append(outcome(heapq.heappop, h))
            elif op == "pushpop":
                seen.append(heapq.heappushpop(h, v))
            elif op == "replace":
                seen.append(outcome(heapq.heapreplace, h, v))
            elif op == "insort":
                bisect.insort(s, v)
            else:
                seen.append(bisect.bisect_left(s, v))
        return x + len(seen), seen

    stage4_fx.reset()  # each example's `case` is the same code with other `steps`
    check(case, torch.ones(2), list(start), sorted(start))
