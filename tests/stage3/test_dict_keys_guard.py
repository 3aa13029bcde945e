"""The dict_keys guard on keys that `repr` cannot write: classes, functions, enum members and
tuples of them, checked as the same objects in the same order (CPython finds such a key by
identity), and of constants that `==` calls equal (1, 1.0, True) by their types too; the
same check of a set's items."""

import enum

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from stage2_symbolic_vm.python.dicts import KeyAt
from stage2_symbolic_vm.sources import Assumption, GlobalSource, ItemSource, LocalSource
from stage3_guards import GuardError, build_guards

X = LocalSource("x")


class Color(enum.Enum):
    RED = 1
    BLUE = 2


class Number(enum.IntEnum):
    ONE = 1


def helper():
    return 0


class Key:  # compared by identity: object's __eq__ and __hash__
    pass


class OwnEq:
    def __eq__(self, other):
        return True

    def __hash__(self):
        return 0


def guard_for(value):
    (guard,) = build_guards([Assumption("dict_keys", X)], {"x": value}, {})
    return guard


def passes(guard, value):
    return guard.failure({"x": value}, {}, None) is None


KEYS = [int, str, torch.Tensor, helper, len, torch.add, Color.RED, Color.BLUE, Number.ONE, 1]
KEYS += [1.0, -0.0, 0.0, None, (int, str), (1, int), (True, int), frozenset({int, str}), Key]


def shape(key):
    if type(key) in (tuple, frozenset):
        return type(key), type(key)(shape(k) for k in key)
    return type(key), (str(key) if type(key) is float else key)  # 0.0 is not -0.0


@given(st.lists(st.sampled_from(KEYS), max_size=3), st.lists(st.sampled_from(KEYS), max_size=3))
def test_passes_exactly_on_the_same_keys_in_order(seen, new):
    seen, new = dict.fromkeys(seen), dict.fromkeys(new)  # as a dict has them: 1 and 1.0 are one
    assert passes(guard_for(seen), new) == ([shape(k) for k in seen] == [shape(k) for k in new])


@given(st.lists(st.sampled_from([*KEYS, b"a", (0, "zero")]), max_size=3), st.data())
def test_a_set_from_outside_is_guarded_on_its_items_types_and_order(items, data):
    """A set read as a constant (CPython's test_set holds sets of tuples and bytes): `==`
    alone would take {True} for {1}, and a set equal to it whose iteration order differs,
    where the trace saw which."""
    seen = set(items)
    new = set(data.draw(st.permutations(items)) + data.draw(st.lists(st.sampled_from(KEYS))))
    (guard,) = build_guards([Assumption("constant", X)], {"x": seen}, {})
    assert passes(guard, new) == ([shape(k) for k in seen] == [shape(k) for k in new])


def test_a_class_replaced_by_another_fails_and_says_which():
    guard = guard_for({int: "assertIntEqual", Key: "k"})
    assert (
        str(guard) == "local 'x' DICT_KEYS: [<class 'int'>, <class '" + Key.__module__ + ".Key'>]"
    )
    assert passes(guard, {int: None, Key: None})
    other = type("Key", (), {})
    reason = guard.failure({"x": {int: None, other: None}}, {}, None)
    assert reason.startswith("keys of local 'x' changed: expected [<class 'int'>, ")
    assert not passes(guard, {Key: None, int: None})  # the order is part of it


def test_plain_keys_keep_their_readable_guard():
    guard = guard_for({"a": 1, 2: 3})
    assert guard.code == [
        "list(L['x'].keys()) == ['a', 2]",
        "[type(k) for k in L['x']] == [str, int]",
    ]


@pytest.mark.parametrize("key", [OwnEq(), torch.ones(1)])
def test_keys_with_their_own_eq_cannot_be_guarded(key):
    with pytest.raises(GuardError, match="own =="):
        guard_for({key: 1})


def test_a_value_under_such_a_key_has_a_source_a_guard_can_read():
    table = {Color.RED: 1.5, int: torch.ones(2)}
    source = ItemSource(GlobalSource("table"), KeyAt(int, GlobalSource("table"), 1))
    assert source.name() == "G['table'][B.list(G['table'])[1]]"
    assert source.get({}, {"table": table}) is table[int]
    assert table[source.index] is table[int]  # what stage 4's new code does with the index
