"""Dicts keyed by classes, functions, enum members and tuples of them (CPython's
Objects/dictobject.c: a key is found by its hash, then by `is`, then by `==`; for a class or
a function `==` is `is`). unittest's `assertEqual` reads such a dict: `_type_equality_funcs`,
from a type to the name of the method that compares two values of it."""

import enum
import types
import unittest

import pytest
import torch

import stage4_fx
from tests.oracle import assert_same_as_eager
from tests.stage2.conformance import check, outcome

pytestmark = pytest.mark.stage2


class Color(enum.Enum):
    RED = 1
    BLUE = 2


class Point:
    pass


def double(v):
    return 2 * v


SCALES = {int: 1.0, float: 2.0, torch.Tensor: 3.0, Point: 4.0}  # from a type
BY_COLOR = {Color.RED: 0.5, Color.BLUE: -1.0}
BY_TYPES = {(int, int): "ints", (int, float): "mixed", (float, float): "floats"}
BY_FUNCTION = {double: "double", len: "len", torch.relu: "relu"}


# --- dicts from outside ---------------------------------------------------------------------


@pytest.mark.parametrize("value", [3, 2.5, torch.ones(1), Point(), "text"])
def test_a_global_dict_keyed_by_types_read_by_the_type_of_a_value(value):
    def case(x, v):
        scale = SCALES[type(v)] if type(v) in SCALES else -1.0  # noqa: SIM401
        return x * scale, SCALES.get(type(v)), outcome(lambda: SCALES[type(v)])

    check(case, torch.ones(2), value)


def test_iterating_over_the_keys_and_items_of_a_dict_keyed_by_types():
    def case(x, v):
        found = [cls for cls in SCALES if isinstance(v, cls)]
        total = sum(scale for cls, scale in SCALES.items() if cls is not Point)
        return x * total, found, list(SCALES), list(SCALES.values()), str in SCALES

    check(case, torch.ones(2), 1.5)


def test_keys_that_are_enum_members_and_tuples_of_types():
    def case(x, a, b):
        kind = BY_TYPES.get((type(a), type(b)), "other")
        return x * BY_COLOR[Color.BLUE], kind, Color.RED in BY_COLOR, list(BY_TYPES)[1]

    check(case, torch.ones(2), 1, 2.0)
    check(case, torch.ones(2), 1.0, 2.0)
    check(case, torch.ones(2), "a", 2.0)


def test_keys_that_are_functions_and_builtins():
    def case(x, fn):
        return x + len(BY_FUNCTION), BY_FUNCTION.get(fn), fn in BY_FUNCTION, len(BY_FUNCTION)

    check(case, torch.ones(2), double)
    check(case, torch.ones(2), lambda v: v)  # not a key


def test_a_builtin_looked_up():  # its hash and == are C code that runs no Python: the object
    def case(x, fn):
        return x + 1, BY_FUNCTION.get(fn)

    check(case, torch.ones(2), torch.relu)


def test_the_function_keys_themselves_are_the_same_objects():
    """A function from outside with no source of its own (a key, an item of a set) is loaded,
    the very object, not made again from its code (FunctionObject.reconstruct)."""

    def case(x):
        return x + 1, [*BY_FUNCTION]

    check(case, torch.ones(2))


def test_a_dict_argument_keyed_by_types_and_its_kinds():
    def case(x, table):
        return x + table[int], table.get(str, 0), list(table.items())

    check(case, torch.ones(2), {int: 1, str: 2})
    proxy = types.MappingProxyType({int: 1, Point: 3})  # read-only, and deepcopy cannot copy it
    compiled = stage4_fx.compile(case, backend="eager", fullgraph=True)
    assert compiled(torch.ones(2), proxy)[1:] == case(torch.ones(2), proxy)[1:]


def test_a_change_of_an_outside_dict_keyed_by_types_is_made_in_python_too():
    def case(x, table):
        table[float] = table.pop(int) + 1
        table.setdefault(Point, 0)
        return x + len(table)

    check(case, torch.ones(2), {int: 1, str: 2})


# --- unittest's dispatch on the type of the values -----------------------------------------


class Comparer:
    """Like TestCase: `assertEqual` looks up a method by the type of the values, in a dict of
    its instance, and falls back to `==`."""

    def __init__(self):
        self._type_equality_funcs = {list: "same_list", dict: "same_dict", tuple: "same_list"}

    def same_list(self, a, b):
        return len(a) == len(b) and all(x == y for x, y in zip(a, b, strict=False))

    def same_dict(self, a, b):
        return a.keys() == b.keys() and all(a[k] == b[k] for k in a)

    def equal(self, first, second):
        if type(first) is type(second):
            name = self._type_equality_funcs.get(type(first))
            if name is not None:
                return getattr(self, name)(first, second)
        return first == second


@pytest.mark.parametrize(
    ("a", "b"), [([1, 2], [1, 2]), ({"a": 1}, {"a": 2}), ((1,), (1, 2)), (3, 3), ([1], (1,))]
)
def test_dispatch_on_the_type_as_unittest_does(a, b):
    def case(x, comparer, a, b):
        return x + 1, comparer.equal(a, b)

    check(case, torch.ones(2), Comparer(), a, b)


TEST_CASE = unittest.TestCase()


@pytest.mark.parametrize("value", [[1, 2], {"a": 1, "b": [2]}, (1, "a"), 3, {1, 2}, "text"])
def test_unittest_s_own_assert_equal_of_equal_values(value):
    def case(x, a, b):
        TEST_CASE.assertEqual(a, b)
        return x + 1

    check(case, torch.ones(2), value, value)


# --- dicts the code makes --------------------------------------------------------------------


def test_dicts_made_in_the_trace_keyed_by_types():
    def case(x, v):
        table = {int: "int", str: "str", (int, str): "pair"}
        table[type(v)] = "mine"
        table[double] = double(3)
        return x + 1, table, table.get(float, "none"), (int, str) in table, list(table)

    check(case, torch.ones(2), 1.5)
    check(case, torch.ones(2), 2)


# --- guards and graph breaks -----------------------------------------------------------------


def test_a_key_replaced_between_calls_recompiles():
    table = {Point: 1.0, int: 2.0}

    def fn(x):
        return x * table.get(Point, -1.0), list(table)

    compiled = stage4_fx.compile(fn, backend="eager", fullgraph=True)
    explaining = stage4_fx.explain(fn)
    assert_same_as_eager(compiled, fn, torch.ones(2))
    assert explaining(torch.ones(2)).graph_count == 1
    table[type("Point", (), {})] = table.pop(Point)  # a class of the same name is another key
    assert_same_as_eager(compiled, fn, torch.ones(2))
    second = explaining(torch.ones(2))
    assert second.graph_count == 2 and second.recompile_reasons[0].startswith("keys of ")


def test_a_tensor_under_a_type_key_is_an_input_across_a_graph_break():
    weights = {int: torch.full((2,), 2.0), torch.Tensor: torch.full((2,), 3.0)}

    def fn(x, v):
        y = x * weights[type(v)]
        print(end="")  # a graph break: the new code reads the weight again, by its key
        return y + weights[torch.Tensor]

    explained = stage4_fx.explain(fn)(torch.ones(2), 1)
    assert (explained.graph_count, explained.graph_break_count) == (2, 1)
    compiled = stage4_fx.compile(fn, backend="eager")
    assert_same_as_eager(compiled, fn, torch.ones(2), 1)
    assert_same_as_eager(compiled, fn, torch.ones(2), torch.ones(1))


class OwnHash:
    def __hash__(self):
        return 1

    def __eq__(self, other):
        return isinstance(other, OwnHash)


@pytest.mark.parametrize("key", [OwnHash(), torch.ones(1)], ids=["own_hash", "tensor"])
def test_keys_with_their_own_hash_are_a_graph_break_that_says_why(key):
    table = {key: 2.0, int: 1.0}

    def fn(x):
        return x * table[int]

    explained = stage4_fx.explain(fn)(torch.ones(2))
    assert explained.graph_break_count == 1
    assert "CPython would call its __hash__" in str(explained.break_reasons[0])
    assert_same_as_eager(stage4_fx.compile(fn, backend="eager"), fn, torch.ones(2))


def scale_by_type(x, v):
    return x * SCALES[type(v)] + (type(v) in SCALES)


def scale_by_enum_and_types(x):
    return x * BY_COLOR[Color.RED] * len(BY_TYPES[(int, float)])


def scale_by_function(x):
    return x * len(BY_FUNCTION[double])


def assert_equal_lists(x, a):
    TEST_CASE.assertEqual(a, [1, 2])
    return x + 1


@pytest.mark.parametrize(
    ("fn", "args"),
    [
        (scale_by_type, (torch.ones(2), 3)),
        (scale_by_enum_and_types, (torch.ones(2),)),
        (scale_by_function, (torch.ones(2),)),
        (assert_equal_lists, (torch.ones(2), [1, 2])),
    ],
)
def test_as_many_graphs_as_torch_compile(fn, args):
    torch._dynamo.reset()
    theirs = torch._dynamo.explain(fn)(*args)
    ours = stage4_fx.explain(fn)(*args)
    assert (ours.graph_count, ours.graph_break_count) == (
        theirs.graph_count,
        theirs.graph_break_count,
    )
