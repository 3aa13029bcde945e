"""Iterators in the VM follow CPython's (Objects/iterobject.c, Python/bltinmodule.c): the
sequence protocol, iter(callable, sentinel), zip(strict=True), exhaustion, laziness."""

import pytest
import torch

import stage4_fx
from tests.oracle import assert_same_as_eager
from tests.stage2.conformance import check, outcome

pytestmark = pytest.mark.stage2


class Squares:
    """Iterable only through __getitem__: CPython's old sequence protocol, ended by IndexError."""

    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        if i >= self.n:
            raise IndexError(i)
        return i * i


class Countdown:
    """__len__ and __getitem__ are enough for reversed()."""

    def __len__(self):
        return 3

    def __getitem__(self, i):
        if i >= 3:
            raise IndexError(i)
        return i


class NotIterable:
    __iter__ = None


# --- the sequence protocol ------------------------------------------------------------------


def test_getitem_makes_a_class_iterable():
    def case(x):
        total = x
        for v in Squares(3):
            total = total + v
        return (
            total,
            list(Squares(4)),
            4 in Squares(3),
            9 in Squares(4),
            sorted(Squares(3), reverse=True),
        )

    check(case, torch.ones(2))


def test_iter_over_getitem_stays_exhausted():
    def case(x):
        it = iter(Squares(1))
        return x + 1, next(it), next(it, "end"), next(it, "end")

    check(case, torch.ones(2))


def test_iter_set_to_none_is_not_iterable():
    def case(x):
        return (
            x + 1,
            outcome(list, NotIterable()),
            outcome(iter, 5),
            outcome(lambda: 1 in NotIterable()),
        )

    check(case, torch.ones(2))


# --- iter(callable, sentinel) ----------------------------------------------------------------


def test_iter_of_a_callable_stops_at_the_sentinel():
    def case(x):
        counter = [0]

        def step():
            counter[0] += 1
            return counter[0]

        it = iter(step, 3)
        items = list(it)
        return x + 1, items, next(it, "end"), counter

    check(case, torch.ones(2))


def test_iter_of_a_callable_ends_on_stop_iteration():
    def case(x):
        source = iter([1, 2])
        return x + 1, list(iter(lambda: next(source), "never"))

    check(case, torch.ones(2))


# --- builtins that make iterators ------------------------------------------------------------


def test_enumerate_with_a_start():
    def case(x):
        return (
            x + 1,
            list(enumerate("ab", 5)),
            list(enumerate("ab", start=-1)),
            outcome(enumerate, "ab", "1"),
        )

    check(case, torch.ones(2))


def test_zip_strict_raises_value_error():
    def case(x):
        return (
            x + 1,
            outcome(list, zip([1, 2], [1], strict=True)),
            outcome(list, zip([1], [1, 2], strict=True)),
            list(zip([1, 2], [3, 4], strict=True)),
            list(zip([1, 2], [3], strict=False)),
        )

    check(case, torch.ones(2))


def test_zip_takes_no_more_than_it_needs():
    def case(x):
        it = iter([1, 2, 3])
        pairs = list(zip([0], it, strict=False))
        empty = iter([7, 8])
        none = list(zip([], empty, strict=False))
        return x + 1, pairs, next(it), none, next(empty)

    check(case, torch.ones(2))


def test_map_stops_at_the_first_exhausted_iterable():
    def case(x):
        it = iter([1, 2])
        mapped = list(map(lambda a, b: a + b, [], it))
        return x + 1, mapped, next(it)

    check(case, torch.ones(2))


def test_in_consumes_an_iterator_up_to_the_match():
    def case(x):
        it = iter([1, 2, 3, 4])
        return x + 1, 2 in it, next(it), 9 in it, next(it, "end")

    check(case, torch.ones(2))


def test_all_and_any_stop_early():
    def case(x):
        it = iter([1, 0, 2, 3])
        return x + 1, all(it), next(it), any(it), next(it, "end")

    check(case, torch.ones(2))


def test_next_with_a_default_and_of_non_iterators():
    def case(x):
        it = iter([])
        return x + 1, next(it, "default"), outcome(next, it), outcome(next, [1])

    check(case, torch.ones(2))


def test_an_iterator_is_its_own_iterator():
    def case(x):
        it = iter([1, 2, 3])
        next(it)
        return x + 1, iter(it) is it, list(it), list(it)

    check(case, torch.ones(2))


def test_an_exhausted_generator_stays_exhausted():
    def case(x):
        def gen():
            yield 1

        g = gen()
        return x + 1, list(g), next(g, "end"), list(g)

    check(case, torch.ones(2))


def test_reversed_needs_a_sequence():
    def case(x):
        return (
            x + 1,
            outcome(reversed, {1, 2}),
            outcome(reversed, iter([1])),
            list(reversed(Countdown())),
            list(reversed((1, 2, 3))),
            list(reversed(range(3))),
        )

    check(case, torch.ones(2))


def test_sorted_is_stable_and_takes_generators():
    def case(x):
        words = ["bb", "a", "cc", "d"]
        return x + 1, sorted((w for w in words), key=len), sorted(words, key=len, reverse=True)

    check(case, torch.ones(2))


def test_zip_strict_raises_out_of_the_function():
    def fn(x):
        return [a * b for a, b in zip([x, x], [1], strict=True)]

    assert_same_as_eager(stage4_fx.compile(fn, backend="eager"), fn, torch.ones(2))


def test_the_iterator_protocol_called_by_name():
    """`it.__next__()`, `it.__iter__()` and, where CPython's iterator has one,
    `it.__length_hint__()` (a set's, a list's, a dict's: what is left)."""

    def case(x, s, xs, d):
        it = iter(s)
        before = it.__length_hint__()
        first = it.__next__()
        items = iter(xs)
        items.__next__()
        keys = iter(d)
        gen = (v for v in xs)
        hints = before, it.__length_hint__(), items.__length_hint__(), keys.__length_hint__()
        return (
            x + 1,
            first in s,
            hints,
            items.__iter__() is items,
            gen.__next__(),
            outcome(lambda: iter([]).__next__()),
        )

    check(case, torch.ones(2), {1, 2, 3}, [4, 5, 6], {"a": 1})


def test_an_iterator_has_no_len():
    def case(x):
        return x + 1, outcome(len, reversed([1, 2])), outcome(len, iter({1: 2}))

    check(case, torch.ones(2))


def lazy_types(x):
    mapped, kept = map(abs, [-1, 2]), filter(None, [0, 1])
    tests = [isinstance(mapped, (list, tuple)), type(mapped) is map, type(kept) is filter]
    return x + 1, tests, list(mapped), list(kept)


def test_map_and_filter_have_their_types():
    """torch's pytree asks `isinstance(leaves, (list, tuple))` of a map (Mamba's scan)."""
    check(lazy_types, torch.ones(2))
