"""Iterators a function receives keep their position outside the trace: never consumed twice."""

import logging

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


def test_a_resume_function_over_an_iterator_says_why_it_runs_eagerly(caplog):
    stage4_fx.reset()
    opt = stage4_fx.compile(sum_items)
    with caplog.at_level(logging.INFO, logger="minidynamo.frames"):
        for _ in range(3):
            opt(torch.zeros(1), iter([1, 2]))
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "as an iterator" in messages  # a named Unsupported, not a crash of the compiler
    assert "AttributeError" not in messages


def test_next_on_an_iterator_argument():
    stage4_fx.reset()
    opt = stage4_fx.compile(take_one)
    ours, theirs = iter([5, 6]), iter([5, 6])
    assert_same_as_eager(lambda x: opt(x, ours), lambda x: take_one(x, theirs), torch.zeros(1))
    assert list(ours) == list(theirs) == [6]
