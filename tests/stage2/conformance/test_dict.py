"""Dicts in the VM follow CPython's Objects/dictobject.c: equality, views, iteration, methods."""

import pytest
import torch

import stage4_fx
from tests.oracle import assert_same_as_eager
from tests.stage2.conformance import Value, check, outcome

pytestmark = pytest.mark.stage2


# --- equality ------------------------------------------------------------------------------


def test_an_argument_dict_equals_a_literal():
    def case(x, cfg):
        same = cfg == {"act": "relu"}
        return (x + 1 if same else x - 1), same, cfg != {"act": "relu"}, cfg == {"act": "gelu"}

    check(case, torch.ones(2), {"act": "relu"})


def test_the_branch_of_the_review():
    def fn(x, cfg):
        return x + 1 if cfg == {"act": "relu"} else x - 1

    result = stage4_fx.compile(fn, backend="eager")(torch.ones(2), {"act": "relu"})
    torch.testing.assert_close(result, torch.ones(2) + 1)


def test_equality_ignores_the_order():
    def case(x):
        a, b = {1: "a", 2: "b"}, {2: "b", 1: "a"}
        return x + 1, a == b, a != b, {1: "a"} == {1: "a", 2: "b"}, {1: "a"} == {1: "b"}

    check(case, torch.ones(2))


def test_equality_compares_values_with_their_eq():
    def case(x):
        return (
            x + 1,
            {"w": x, "v": Value(1)} == {"v": Value(1), "w": x},
            {"v": Value(1)} == {"v": Value(2)},
            {"a": 1} == [("a", 1)],
        )

    check(case, torch.ones(2))


def test_dicts_have_no_order():
    def case(x):
        return x + 1, outcome(lambda: {1: 2} < {1: 3}), outcome(lambda: {1: x} >= {})

    check(case, torch.ones(2))


def test_keys_that_are_equal_are_one_key():
    def case(x):
        d = {1: "int", 1.0: "float", True: "bool"}  # noqa: F601 (one key is the point)
        return x + 1, d, list(d.keys())

    check(case, torch.ones(2))


# --- changes during iteration ---------------------------------------------------------------


def test_adding_a_key_while_iterating_raises():
    def case(x):
        d = {"a": 1, "b": 2}

        def add(view):
            for key in view:
                d[str(key) + "!"] = 0

        return x + 1, outcome(add, d), outcome(add, d.keys()), outcome(add, d.items()), len(d)

    check(case, torch.ones(2))


def test_deleting_a_key_while_iterating_raises():
    def case(x):
        d = {"a": x, "b": x * 2}

        def delete():
            for _value in d.values():
                d.pop("b", None)

        return x + 1, outcome(delete), list(d)

    check(case, torch.ones(2))


def test_replacing_a_key_while_iterating_raises():
    def case(x):
        d = {"a": 1, "b": 2}

        def replace():
            seen = []
            for key in d:
                seen.append(key)
                if key == "a":
                    del d["a"]
                    d["c"] = 3
            return seen

        return x + 1, outcome(replace), d

    check(case, torch.ones(2))


def test_assigning_existing_keys_while_iterating_is_allowed():
    def case(x):
        d = {"a": 1, "b": 2}
        for key in d:
            d[key] = x * d[key]
        return d

    check(case, torch.ones(2))


def test_clearing_while_iterating_raises():
    def case(x):
        d = {"a": 1, "b": 2}

        def clear():
            for _key in d:
                d.clear()

        return x + 1, outcome(clear), d

    check(case, torch.ones(2))


# --- views ----------------------------------------------------------------------------------


def test_keys_views_are_sets():
    def case(x):
        d = {"a": x, "b": 2}
        keys = d.keys()
        return (
            x + 1,
            sorted(keys & {"a", "z"}),
            sorted(keys | ["z"]),
            sorted(keys - {"a"}),
            sorted(keys ^ ("a", "q")),
            keys == {"a", "b"},
            {"a"} <= keys,
            keys < {"a", "b", "c"},
            keys.isdisjoint(["q"]),
        )

    check(case, torch.ones(2))


def test_items_views_are_sets_of_pairs():
    def case(x):
        d = {"a": 1, "b": x}
        items = d.items()
        return (
            x + 1,
            ("a", 1) in items,
            ("a", 2) in items,
            ("b", x) in items,
            items == {("a", 1), ("b", x)},
            d.items() == {"a": 1, "b": x}.items(),
        )

    check(case, torch.ones(2))


def test_values_views_are_equal_only_to_themselves():
    def case(x):
        d = {"a": 1}
        values = d.values()
        return x + 1, values == values, d.values() == d.values(), 1 in values, list(values)

    check(case, torch.ones(2))


def test_views_see_later_changes():
    def case(x):
        d = {"a": 1}
        keys, items = d.keys(), d.items()
        d["b"] = 2
        return x + 1, list(keys), list(items), len(keys), "b" in keys

    check(case, torch.ones(2))


def test_reversed_dict_and_views():
    def case(x):
        d = {"a": 1, "b": 2, "c": x}
        return x + 1, list(reversed(d)), list(reversed(d.keys())), list(reversed(d.values()))

    check(case, torch.ones(2))


# --- methods --------------------------------------------------------------------------------


def test_update_takes_a_mapping_pairs_and_keywords():
    def case(x):
        d = {"a": 0}
        d.update({"b": 1}, c=2)
        d.update([("d", 3), ["e", x]])
        d.update(f=4)
        d.update()
        return x + 1, d

    check(case, torch.ones(2))


def test_update_with_a_bad_sequence_raises():
    def case(x):
        d = {}
        return (
            x + 1,
            outcome(d.update, [("a", 1, 2)]),
            outcome(d.update, [1]),
            outcome(d.update, 1),
            d,
        )

    check(case, torch.ones(2))


def test_pop_get_and_setdefault_with_defaults():
    def case(x):
        d = {"a": x}
        got = (
            d.get("z"),
            d.get("z", 5),
            d.setdefault("b"),
            d.setdefault("c", 3),
            d.setdefault("c", 9),
        )
        popped = (d.pop("a"), d.pop("z", "default"), outcome(d.pop, "z"), outcome(lambda: d.pop()))
        return popped[0] + 1, got, popped[1:], d

    check(case, torch.ones(2))


def test_popitem_takes_the_last_item():
    def case(x):
        d = {"a": 1, "b": 2, "c": x}
        last = d.popitem()
        d["d"] = 4
        return (
            x + 1,
            last[0],
            d.popitem(),
            outcome(lambda: d.popitem(last=False)),
            outcome({}.popitem),
            d,
        )

    check(case, torch.ones(2))


def test_missing_keys_raise_key_error():
    def case(x):
        d = {"a": 1}

        def delete():
            del d["z"]

        return x + 1, outcome(lambda: d["z"]), outcome(delete), outcome(lambda: d[[1]])

    check(case, torch.ones(2))


def test_dict_takes_at_most_one_positional_argument():
    def case(x):
        return (
            x + 1,
            outcome(dict, {}, {}),
            dict([("a", 1)], b=2),
            dict(a=1),
            dict({"a": 1}, a=2),
            dict.fromkeys("ab", 0),
        )

    check(case, torch.ones(2))


def test_merge_operators():
    def case(x):
        d = {"a": 1, "b": 2}
        alias = d
        merged = d | {"b": x, "c": 3}
        failed = outcome(lambda: d | [("z", 0)])
        d |= [("z", 0)]
        return x + 1, merged, failed, alias

    check(case, torch.ones(2))


def test_an_argument_dict_is_changed_in_place():
    def case(x, cfg):
        cfg["scaled"] = x * cfg["scale"]
        del cfg["unused"]
        cfg.setdefault("act", "relu")
        return x + 1

    check(case, torch.ones(2), {"scale": 2.0, "unused": 1})


def test_unpacking_keeps_keys_that_are_not_constants():
    def case(x):
        d = {(1, x): "tuple", x: "tensor"}
        merged = {**d, "more": 1}
        return x + 1, merged, dict(**{"a": x}), [k is x for k in merged]

    check(case, torch.ones(2))


def test_copy_is_independent():
    def case(x):
        d = {"a": [1]}
        e = d.copy()
        e["b"] = 2
        e["a"].append(x)
        return x + 1, d, e

    check(case, torch.ones(2))


# --- errors that leave the function (no fullgraph: the same exception as CPython) ---------------


def test_a_change_during_iteration_raises_out_of_the_function():
    def fn(x):
        d = {"a": x}
        for key in d:
            d[key + "!"] = x
        return x

    assert_same_as_eager(stage4_fx.compile(fn, backend="eager"), fn, torch.ones(2))


def test_merging_a_list_raises_out_of_the_function():
    def fn(x):
        return {"a": x} | [("b", x)]

    assert_same_as_eager(stage4_fx.compile(fn, backend="eager"), fn, torch.ones(2))


# --- str and repr --------------------------------------------------------------------------


def test_str_and_repr_of_dicts_of_constants():
    import collections

    def case(x):
        plain = {"act": "relu", 1: (2.5, None), (3, "b"): [1, {"in": True}]}
        ordered = collections.OrderedDict(b=1, a=2)
        ordered.move_to_end("b")
        grouped = collections.defaultdict(list, {"k": [1]})
        grouped["new"].append(2)
        texts = [str(plain), repr(plain), str(ordered), repr(grouped), str({})]
        return x + len(texts[0]), texts

    check(case, torch.ones(2))


def test_str_of_a_dict_holding_a_tensor_breaks_and_equals_eager():
    def case(x):
        return x + 1, str({"x": x})

    compiled = stage4_fx.compile(case, backend="eager")
    assert_same_as_eager(compiled, case, torch.ones(2))
    assert any("str" in b.reason for b in compiled.options.breaks)
