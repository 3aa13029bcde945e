"""OrderedDict and defaultdict in the VM follow CPython's (Objects/odictobject.c, Modules/
_collectionsmodule.c): order-sensitive equality, move_to_end, popitem, __missing__."""

import collections

import pytest
import torch

import stage4_fx
from tests.oracle import assert_same_as_eager
from tests.stage2.conformance import check, outcome

pytestmark = pytest.mark.stage2

OrderedDict, defaultdict = collections.OrderedDict, collections.defaultdict


# --- OrderedDict ------------------------------------------------------------------------------


def test_at_most_one_positional_argument():
    def case(x):
        return (
            x + 1,
            outcome(OrderedDict, [("a", 1)], None),
            OrderedDict([("a", 1)], b=x),
            OrderedDict(b=2, a=1),
        )

    check(case, torch.ones(2))


def test_move_to_end_both_ways():
    def case(x):
        d = OrderedDict(a=1, b=2, c=x)
        d.move_to_end("a")
        d.move_to_end("c", last=False)
        return x + 1, list(d), outcome(d.move_to_end, "z"), d

    check(case, torch.ones(2))


def test_popitem_from_either_end():
    def case(x):
        d = OrderedDict(a=1, b=2, c=3)
        return x + 1, d.popitem(), d.popitem(last=False), d, outcome(OrderedDict().popitem)

    check(case, torch.ones(2))


def test_equality_is_ordered_only_between_two_ordered_dicts():
    def case(x):
        ab, ba = OrderedDict(a=1, b=x), OrderedDict(b=x, a=1)
        plain = {"b": x, "a": 1}
        return x + 1, ab == ba, ab != ba, ab == plain, plain == ba, ab == OrderedDict(a=1, b=x)

    check(case, torch.ones(2))


def test_changes_during_iteration_raise():
    def case(x):
        d = OrderedDict(a=1, b=2)

        def move():
            for key in d:
                d.move_to_end(key)

        def add():
            for key in d:
                d[key + "!"] = 0

        return x + 1, outcome(move), outcome(add), list(d)

    check(case, torch.ones(2))


def test_operations_keep_the_type():
    def case(x):
        d = OrderedDict(a=1)
        return x + 1, d.copy(), d | {"b": x}, OrderedDict.fromkeys("ab")

    check(case, torch.ones(2))


def test_reversed_ordered_dict():
    def case(x):
        d = OrderedDict(a=1, b=2)
        d.move_to_end("a")
        return x + 1, list(reversed(d)), list(reversed(d.items()))

    check(case, torch.ones(2))


def test_an_argument_ordered_dict_is_changed_in_place():
    def case(x, d):
        d.move_to_end("a")
        d["c"] = x * 2
        return x + 1

    check(case, torch.ones(2), OrderedDict(a=1, b=2))


def test_two_positional_arguments_raise_out_of_the_function():
    def fn(x):
        return x, OrderedDict([("a", 1)], None)

    assert_same_as_eager(stage4_fx.compile(fn, backend="eager"), fn, torch.ones(2))


# --- defaultdict ----------------------------------------------------------------------------


def test_missing_keys_are_made_by_the_factory():
    def case(x):
        d = defaultdict(list)
        d["a"].append(x)
        d["b"]
        return x + 1, d, d.default_factory is list

    check(case, torch.ones(2))


def test_get_and_in_do_not_call_the_factory():
    def case(x):
        d = defaultdict(int)
        return x + 1, d.get("a"), "a" in d, d.setdefault("b", 5), d.pop("c", 0), d

    check(case, torch.ones(2))


def test_no_factory_raises_key_error():
    def case(x):
        d = defaultdict()
        e = defaultdict(None, a=1)
        return x + 1, outcome(lambda: d["a"]), e["a"], d.default_factory

    check(case, torch.ones(2))


def test_the_factory_must_be_callable():
    def case(x):
        return x + 1, outcome(defaultdict, 1), outcome(defaultdict, "a")

    check(case, torch.ones(2))


def test_a_copy_keeps_the_factory():
    def case(x):
        d = defaultdict(list, a=[1])
        e = d.copy()
        e["b"].append(x)
        return x + 1, d, e, d == {"a": [1]}

    check(case, torch.ones(2))


def test_an_argument_defaultdict_is_changed_in_place():
    def case(x, d):
        d["new"] += 2
        d["old"] += 1
        return x + 1

    check(case, torch.ones(2), defaultdict(int, old=1))
