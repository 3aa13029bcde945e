"""unittest's assert methods inside a compiled function, as PyTorch runs CPython's own test
modules under its compiler: each traced with CPython's semantics, one graph, no break.

`assertEqual` finds its comparison in a dict keyed by types, `assertRaises` is a context
manager that keeps the exception `with_traceback(None)`, `assertRaisesRegex` compiles and
searches a pattern (python/builtins_table.py's `regex_function`, objects.py's PURE_METHODS).
"""

import unittest

import pytest
import torch

from tests.stage2.conformance import check, outcome

pytestmark = pytest.mark.stage2

X = torch.ones(2)


class Case(unittest.TestCase):
    __test__ = False  # a holder of the assert methods, not a test of its own

    def runTest(self):
        pass


T = Case()


def test_equality_asserts_of_every_container():
    def case(x):
        T.assertEqual([1, 2], [1, 2])
        T.assertEqual({"a": 1}, {"a": 1})
        T.assertEqual((1, "b"), (1, "b"))
        T.assertEqual({3, 4}, {4, 3})
        T.assertEqual("text", "text")
        T.assertNotEqual(1, 2)
        T.assertListEqual([1], [1])
        T.assertDictEqual({}, {})
        T.assertSequenceEqual((1, 2), [1, 2])
        return x + 1

    check(case, X)


def test_truth_identity_membership_and_order_asserts():
    def case(x):
        T.assertTrue([0])
        T.assertFalse("")
        T.assertIs(None, None)
        T.assertIsNone(None)
        T.assertIsNotNone(0)
        T.assertIn(2, (1, 2))
        T.assertNotIn("z", "abc")
        T.assertIsInstance(3, int)
        T.assertGreater(3, 2)
        T.assertLessEqual(2, 2)
        T.assertAlmostEqual(1.0, 1.0 + 1e-9)
        return x * 2

    check(case, X)


def test_assert_raises_keeps_the_exception():
    def case(x):
        with T.assertRaises(ValueError):
            int("x")
        with T.assertRaises(KeyError) as caught:
            {}.pop("k")
        with T.assertRaisesRegex(ZeroDivisionError, "divi.ion"):
            divmod(1, 0)
        return x - 1, caught.exception.args, type(caught.exception)

    check(case, X)


def test_a_failing_assert_raises_assertion_error():
    def case(x):
        return x + 1, outcome(T.assertTrue, 0), outcome(T.assertIn, 5, [1, 2])

    check(case, X)
