"""Lists in the VM follow CPython's Objects/listobject.c: iteration, comparison, methods."""

import pytest
import torch

import stage4_fx
from tests.oracle import assert_same_as_eager
from tests.stage2.conformance import Value, check, outcome

pytestmark = pytest.mark.stage2


class Never:
    """Equal to nothing, not even itself: only identity finds it."""

    def __eq__(self, other):
        return False


# --- iteration ------------------------------------------------------------------------------


def test_iteration_sees_items_appended_during_the_loop():
    def case(x):
        xs, seen = [1], []
        for v in xs:
            seen.append(v)
            if v < 4:
                xs.append(v + 1)
        return x + len(seen), seen

    check(case, torch.ones(2))


def test_removing_the_current_item_skips_the_next():
    def case(x):
        xs, seen = [1, 2, 3, 4], []
        for v in xs:
            seen.append(v)
            if v == 2:
                xs.remove(v)
        return x * 2, seen, xs

    check(case, torch.ones(2))


def test_an_iterator_reads_the_list_when_stepped():
    def case(x):
        xs = [1]
        it = iter(xs)
        first = next(it)
        xs.append(2)
        return x + first, next(it, "end")

    check(case, torch.ones(2))


def test_an_exhausted_iterator_stays_exhausted():
    def case(x):
        xs = [1]
        it = iter(xs)
        items = [next(it), next(it, "end")]
        xs.append(2)
        items.append(next(it, "end"))
        return x + 1, items

    check(case, torch.ones(2))


def test_reversed_reads_the_list_when_stepped():
    def case(x):
        xs = [1, 2, 3]
        backwards = reversed(xs)
        first = next(backwards)
        xs.clear()
        return x + first, next(backwards, "end")

    check(case, torch.ones(2))


# --- equality and order ---------------------------------------------------------------------


def test_in_index_count_remove_use_the_items_eq():
    def case(x):
        xs = [Value(0), Value(1), Value(1)]
        found = Value(1) in xs
        index, count = xs.index(Value(1)), xs.count(Value(1))
        xs.remove(Value(1))
        return x + index, found, count, len(xs), Value(5) not in xs

    check(case, torch.ones(2))


def test_equality_of_lists_uses_the_items_eq():
    def case(x):
        return x + 1, [Value(1), 2] == [Value(1), 2], [Value(1)] != [Value(2)]

    check(case, torch.ones(2))


def test_identity_is_tried_before_eq():
    def case(x):
        never = Never()
        xs = [never]
        return x + 1, xs == [never], never in xs, xs.count(never), [Never()] == [Never()]

    check(case, torch.ones(2))


def test_functions_are_found_by_identity():
    def case(x):
        fns = [len, torch.relu, case]
        found = (torch.relu in fns, len == fns[0], fns.count(abs), case in fns)
        return x + fns.index(torch.relu), found

    check(case, torch.ones(2))


def test_equal_lists_of_one_tensor():
    def case(x):
        return x + 1, [x, 1] == [x, 1], [x] != [x], [x, [x]] == [x, [x]]

    check(case, torch.ones(2))


def test_lists_and_tuples_are_never_equal():
    def case(x):
        xs = [x, 1]
        return x + 1, xs == (x, 1), xs != (x, 1), [1] == (1,)

    check(case, torch.ones(2))


def test_order_is_lexicographic():
    def case(x):
        a, b = [1, Value(2)], [1, Value(3)]
        return x + 1, a < b, b < a, [1, 2] < [1, 2, 0], [2] > [1, 5], [] < [0], a <= a

    check(case, torch.ones(2))


def test_order_between_list_and_tuple_raises():
    def case(x):
        xs = [x]
        return x + 1, outcome(lambda: xs < (1,)), outcome(lambda: [1, "a"] < [1, 2])

    check(case, torch.ones(2))


def test_order_decided_before_items_of_other_types():
    def case(x):
        return x + 1, [1, "a"] < [2, 0], [Value(1), "a"] < [Value(2), 0]

    check(case, torch.ones(2))


def test_order_of_objects_without_lt_raises():
    def case(x):
        return x + 1, outcome(lambda: [Never()] < [Never()])

    check(case, torch.ones(2))


# --- concatenation and repetition -------------------------------------------------------------


def test_list_plus_tuple_raises_but_plus_equals_extends():
    def case(x):
        xs = [1]
        alias = xs
        failed = outcome(lambda: xs + (2,))  # noqa: RUF005 (the TypeError is the point)
        xs += (2, 3)
        return x + 1, failed, alias, outcome(lambda: (1,) + [2])

    check(case, torch.ones(2))


def test_plus_equals_needs_an_iterable():
    def case(x):
        def add():
            xs = [1]
            xs += 5
            return xs

        return x + 1, outcome(add)

    check(case, torch.ones(2))


def test_repetition():
    def case(x):
        xs = [1, 2]
        alias = xs
        xs *= 2
        return x + 1, alias, 2 * [x, 1] == [x, 1, x, 1], [1] * 0, [1] * -1, 3 * [0]

    check(case, torch.ones(2))


def test_repetition_by_a_float_raises():
    def case(x):
        return x + 1, outcome(lambda: [1] * 2.0), outcome(lambda: [1] * [2])

    check(case, torch.ones(2))


# --- items and slices --------------------------------------------------------------------------


def test_slices_with_negative_steps():
    def case(x):
        xs = [0, 1, 2, 3, 4, 5]
        return x + 1, xs[::-1], xs[-2:], xs[1:5:2], xs[5:1:-2], xs[10:], xs[:-10], xs[::-3]

    check(case, torch.ones(2))


def test_slice_assignment_of_another_length():
    def case(x):
        xs = [0, 1, 2, 3]
        xs[1:3] = [7, 8, 9, 10]
        xs[:0] = (x,)
        xs[len(xs) :] = (v for v in range(2))
        return x + 1, xs

    check(case, torch.ones(2))


def test_extended_slice_assignment_needs_the_same_length():
    def case(x):
        xs = [0, 1, 2, 3]

        def assign(items):
            xs[::2] = items

        return x + 1, outcome(assign, [5]), xs, outcome(assign, [5, 6]), xs

    check(case, torch.ones(2))


def test_deleting_slices_and_items():
    def case(x):
        xs = list(range(8))
        del xs[1:3]
        del xs[::2]
        del xs[-1]

        def delete(i):
            del xs[i]

        return x + 1, xs, outcome(delete, 10)

    check(case, torch.ones(2))


def test_item_errors():
    def case(x):
        xs = [1, 2]

        def store():
            xs[5] = 0

        return x + 1, outcome(store), outcome(lambda: xs["a"]), outcome(lambda: xs[2])

    check(case, torch.ones(2))


# --- methods ----------------------------------------------------------------------------------


def test_sort_is_stable_with_key_and_reverse():
    def case(x):
        pairs = [(1, "a"), (2, "b"), (1, "c"), (2, "d"), (0, "e")]
        pairs.sort(key=lambda p: p[0], reverse=True)
        return x + 1, pairs, sorted(pairs, key=lambda p: p[0])

    check(case, torch.ones(2))


def test_sort_uses_the_items_lt():
    def case(x):
        xs = [Value(3), Value(1), Value(2)]
        xs.sort()
        return x + 1, [v.v for v in xs], [v.v for v in sorted(xs, reverse=True)]

    check(case, torch.ones(2))


def test_sort_arguments_are_keywords():
    def case(x):
        xs = [2, 1]
        return x + 1, outcome(lambda: xs.sort(len)), outcome(lambda: sorted(xs, len))

    check(case, torch.ones(2))


def test_pop_and_insert():
    def case(x):
        xs = [1, 2, 3]
        xs.insert(100, 4)
        xs.insert(-100, 0)
        last, first = xs.pop(), xs.pop(0)
        return x + 1, xs, last, first, outcome(lambda: [].pop()), outcome(xs.pop, 10)

    check(case, torch.ones(2))


def test_index_with_bounds():
    def case(x):
        xs = [1, 2, 1, 2]
        return x + 1, xs.index(2, 2), xs.index(1, -2), outcome(xs.index, 1, 3), xs.index(2, 0, 2)

    check(case, torch.ones(2))


def test_remove_of_a_missing_item_raises():
    def case(x):
        xs = [1]
        return x + 1, outcome(xs.remove, 2), outcome(lambda: xs.append()), xs

    check(case, torch.ones(2))


def test_a_list_is_unhashable():
    def case(x):
        d = {1: 2}
        return (
            x + 1,
            outcome(lambda: {[1]: 2}),
            outcome(lambda: {[1]}),
            outcome(lambda: [1] in d),
            outcome(hash, [1]),
        )

    check(case, torch.ones(2))


def test_an_argument_list_is_changed_in_place():
    def case(x, xs):
        xs.extend([x * 2, 7])
        xs.reverse()
        del xs[1]
        xs[0:0] = [1]
        return x + 1

    check(case, torch.ones(2), [torch.zeros(2), 3, 4])


# --- errors that leave the function (no fullgraph: the same exception as CPython) ---------------


def test_list_plus_tuple_raises_out_of_the_function():
    def fn(x):
        return [x] + (x,)

    compiled = stage4_fx.compile(fn, backend="eager")
    assert_same_as_eager(compiled, fn, torch.ones(2))


def test_list_and_tuple_refuse_keywords_and_extra_arguments_as_cpython():
    def case(x):
        return (
            x + 1,
            outcome(lambda: list(sequence=[1])),
            outcome(lambda: tuple(sequence=[1])),
            outcome(lambda: list([1], [2])),
        )

    check(case, torch.ones(2))


def test_operator_slots_called_by_name():
    """`xs.__iadd__(ys)` is `xs += ys` (xs itself), `d.__or__(e)` is `d | e`, and so on: the
    operator, through the same rules."""

    def case(x, xs, d):
        mine = [1]
        same = mine.__iadd__([2]) is mine
        d.__ior__({"k": 1})
        return x + 1, same, mine, {1: 2}.__or__({3: 4}), xs.__add__([9]), xs.__eq__([1]), d

    check(case, torch.ones(2), [1], {"a": 0})
