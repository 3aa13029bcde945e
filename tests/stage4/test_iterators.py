"""Iterators a function receives keep their position outside the trace: never consumed twice."""

import contextlib
import io

import torch

import stage4_fx
from tests.oracle import assert_same_as_eager


def sum_items(x, items):
    for v in items:
        x = x + v
    return x


def take_one(x, items):
    return x + next(items)


def test_an_iterator_argument_is_consumed_exactly_as_eager():
    stage4_fx.reset()
    opt = stage4_fx.compile(sum_items)
    for make in (lambda: iter([1, 2, 3]), lambda: (i for i in range(3))):
        ours, theirs = make(), make()
        torch.testing.assert_close(opt(torch.zeros(1), ours), sum_items(torch.zeros(1), theirs))
        assert list(ours) == list(theirs) == []


def test_a_list_iterator_argument_is_traced_over_its_list():
    """A list iterator from outside is read through what CPython pickles it as: its list and
    its position. The trace unrolls the rest of the list and moves the real iterator."""
    stage4_fx.reset()
    opt = stage4_fx.compile(sum_items)
    for _ in range(3):
        ours, theirs = iter([1, 2, 3]), iter([1, 2, 3])
        next(ours), next(theirs)
        torch.testing.assert_close(opt(torch.zeros(1), ours), sum_items(torch.zeros(1), theirs))
        assert list(ours) == list(theirs) == []
    assert stage4_fx.explain(sum_items)(torch.zeros(1), iter([1, 2])).graph_count == 1


def grow_while_looping(x, xs):
    for v in xs:
        print("a graph break inside the loop")
        if len(xs) < 5:
            xs.append(v + 1)
        x = x + v
    return x


def test_a_loop_cut_by_a_break_reaches_what_the_rest_appends():
    """At a break inside `for v in xs`, the resume function gets the list's own iterator,
    not the items left then: the items the loop body appends after the break are reached."""
    stage4_fx.reset()
    opt = stage4_fx.compile(grow_while_looping)
    with contextlib.redirect_stdout(io.StringIO()):
        for _ in range(2):
            ours, theirs = [torch.ones(2)], [torch.ones(2)]
            torch.testing.assert_close(
                opt(torch.zeros(2), ours), grow_while_looping(torch.zeros(2), theirs)
            )
            assert len(ours) == len(theirs) == 5


def shrink_while_looping(x, d):
    for k in d:
        print("a graph break inside the loop")
        if k == "a":
            d["c"] = x  # eager: RuntimeError, the dict changed size during iteration
        x = x + d[k]
    return x


def test_a_dict_changed_in_a_loop_cut_by_a_break_raises_as_eager():
    stage4_fx.reset()
    opt = stage4_fx.compile(shrink_while_looping)
    with contextlib.redirect_stdout(io.StringIO()):
        d = {"a": torch.ones(2), "b": torch.ones(2)}
        assert_same_as_eager(opt, shrink_while_looping, torch.zeros(2), d)


def test_next_on_an_iterator_argument():
    stage4_fx.reset()
    opt = stage4_fx.compile(take_one)
    ours, theirs = iter([5, 6]), iter([5, 6])
    assert_same_as_eager(lambda x: opt(x, ours), lambda x: take_one(x, theirs), torch.zeros(1))
    assert list(ours) == list(theirs) == [6]
