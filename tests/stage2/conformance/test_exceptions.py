"""Exceptions in the VM follow CPython's (Python/ceval.c, Lib/test/test_exceptions.py,
test_raise.py, test_contextlib.py): re-raising, causes and contexts, matching, `with`."""

import contextlib
import sys

import pytest
import torch

import stage4_fx
from tests.oracle import assert_same_as_eager
from tests.stage2.conformance import check, outcome

pytestmark = pytest.mark.stage2


class AppError(Exception):
    pass


class Loud:
    def __eq__(self, other):
        raise AppError("compared")


def reraise():
    raise


def reraise_unless(done):
    """A bare `raise` that is not the last instruction of its code (stage 4 cannot yet break
    the graph at a frame's last instruction)."""
    if not done:
        raise
    return "done"


def convert():
    try:
        raise KeyError("inner")
    except KeyError:
        raise ValueError("outer")  # noqa: B904 (the implicit context is the point)


# --- re-raising --------------------------------------------------------------------------------


def test_a_bare_raise_in_a_helper_reraises_the_handled_exception():
    def case(x):
        try:
            raise AppError("first")
        except AppError:
            try:
                reraise()
            except AppError as error:
                return x + 1, error.args

    check(case, torch.ones(2))


def test_a_bare_raise_after_a_nested_handler_reraises_the_outer_exception():
    def case(x):
        try:
            try:
                raise KeyError("outer")
            except KeyError:
                try:
                    raise ValueError("inner")
                except ValueError:
                    pass
                raise
        except LookupError as error:
            return x + 1, type(error).__name__, error.args

    check(case, torch.ones(2))


def test_a_bare_raise_outside_the_traced_handlers_reraises_the_callers_exception():
    def fn(x):
        try:
            reraise_unless(False)
        except Exception as error:
            return x + 1, type(error).__name__

    compiled = stage4_fx.compile(fn, backend="eager")
    assert_same_as_eager(compiled, fn, torch.ones(2))  # RuntimeError: nothing is handled
    try:
        raise AppError("the caller's")
    except AppError:
        assert_same_as_eager(compiled, fn, torch.ones(2))  # the caller's AppError


# --- causes and contexts ----------------------------------------------------------------------


def test_a_cause_must_be_an_exception():
    def case(x):
        def bad_cause():
            raise ValueError("v") from 5

        return x + 1, outcome(bad_cause)

    check(case, torch.ones(2))


def test_only_exceptions_can_be_raised():
    def case(x):
        def bad():
            raise 5  # noqa: B016 (the TypeError is the point)

        return x + 1, outcome(bad)

    check(case, torch.ones(2))


def test_raise_from_sets_the_cause():
    def case(x):
        try:
            raise ValueError("v") from KeyError("k")
        except ValueError as error:
            cause = error.__cause__
            return x + 1, type(cause).__name__, cause.args, error.__suppress_context__

    check(case, torch.ones(2))


def test_raise_from_a_class_makes_the_cause():
    def case(x):
        try:
            raise ValueError from KeyError
        except ValueError as error:
            return x + 1, type(error.__cause__).__name__

    check(case, torch.ones(2))


def test_raise_from_none_suppresses_the_context():
    def case(x):
        try:
            try:
                raise KeyError("k")
            except KeyError:
                raise ValueError("v") from None
        except ValueError as error:
            return (
                x + 1,
                error.__cause__ is None,
                error.__suppress_context__,
                type(error.__context__).__name__,
            )

    check(case, torch.ones(2))


def test_raising_while_handling_sets_the_context():
    def case(x):
        try:
            convert()
        except ValueError as error:
            return (
                x + 1,
                type(error.__context__).__name__,
                error.__context__.args,
                error.__cause__ is None,
            )

    check(case, torch.ones(2))


def test_an_error_of_an_operation_while_handling_gets_the_context():
    def case(x):
        d = {}
        try:
            try:
                d["a"]
            except KeyError:
                d["b"]
        except KeyError as error:
            return x + 1, error.args, error.__context__.args

    check(case, torch.ones(2))


# --- matching ---------------------------------------------------------------------------------


def test_handlers_match_in_order_by_class():
    def case(x):
        def which(error):
            try:
                raise error
            except (KeyError, IndexError):
                return "lookup"
            except AppError:
                return "app"
            except Exception:
                return "other"

        return x + 1, which(KeyError()), which(IndexError()), which(AppError()), which(ValueError())

    check(case, torch.ones(2))


def test_catching_a_class_that_is_not_an_exception_raises():
    def case(x):
        def bad():
            try:
                raise KeyError("k")
            except int:
                return "caught"

        return x + 1, outcome(bad)

    check(case, torch.ones(2))


def test_an_error_of_eq_propagates_out_of_in():
    def case(x):
        return x + 1, outcome(lambda: Loud() in [1, 2]), outcome(lambda: [Loud()] == [1])

    check(case, torch.ones(2))


def test_stop_iteration_carries_the_return_value():
    def case(x):
        def gen():
            yield 1
            return "done"

        g = gen()
        next(g)
        try:
            next(g)
        except StopIteration as stop:
            return x + 1, stop.value, stop.args

    check(case, torch.ones(2))


def test_finally_runs_and_can_replace_the_result():
    def case(x):
        log = []

        def body():
            try:
                log.append("try")
                raise KeyError("k")
            finally:
                log.append("finally")

        def replaced():
            try:
                return "try"
            finally:
                return "finally"  # noqa: B012, SIM107 (replacing the result is the point)

        return x + 1, outcome(body), log, replaced()

    check(case, torch.ones(2))


def test_the_else_block_runs_only_without_an_exception():
    def case(x, fail):
        try:
            if fail:
                raise KeyError("k")
        except KeyError:
            branch = "except"
        else:
            branch = "else"
        return x + 1, branch

    check(case, torch.ones(2), True)
    check(case, torch.ones(2), False)


# --- `with` and contextlib -----------------------------------------------------------------------


def test_suppress_swallows_only_its_exceptions():
    def case(x):
        def lookup(d):
            with contextlib.suppress(KeyError):
                return d["a"]
            return "suppressed"

        return x + 1, lookup({}), lookup({"a": 1}), outcome(lambda: lookup(None))

    check(case, torch.ones(2))


def test_nullcontext_gives_its_value():
    def case(x):
        with contextlib.nullcontext(5) as value:
            return x + value

    check(case, torch.ones(2))


# --- errors that leave the function (no fullgraph: the same exception as CPython) ---------------


def test_a_bad_cause_raises_out_of_the_function():
    def fn(x):
        raise ValueError("v") from 5

    assert_same_as_eager(stage4_fx.compile(fn, backend="eager"), fn, torch.ones(2))


def test_a_bare_raise_in_a_helper_raises_out_of_the_function():
    def fn(x):
        try:
            raise AppError("first")
        except AppError:
            reraise_unless(False)

    assert_same_as_eager(stage4_fx.compile(fn, backend="eager"), fn, torch.ones(2))


def test_exc_info_and_exception_inside_an_except_block():
    def case(x):
        try:
            {}["k"]
        except KeyError:
            kind, value, _ = sys.exc_info()
            now = sys.exception()
            nested = None
            try:
                int("x")
            except ValueError:
                nested = sys.exc_info()[0]
            after = sys.exc_info()[0]  # the outer one again, once the inner block is left
        return x + 1, kind, value.args, now is value, nested, after

    check(case, torch.ones(2))


def test_what_exc_info_cannot_answer_is_a_break_with_its_reason():
    def outside(x):
        return x + 1, sys.exc_info()

    def reads_the_traceback(x):
        try:
            divmod(1, 0)
        except ZeroDivisionError:
            line = sys.exc_info()[2].tb_lineno
        return x + line

    try:  # outside its handlers, while the caller handles an exception: not modelled
        raise KeyError("the caller's")
    except KeyError:
        report = stage4_fx.explain(outside)(torch.ones(2))
        assert "caller handles an exception" in str(report.break_reasons[0])
        stage4_fx.reset()
        assert_same_as_eager(stage4_fx.compile(outside), outside, torch.ones(2))
    report = stage4_fx.explain(reads_the_traceback)(torch.ones(2))
    assert "tb_lineno" in str(report.break_reasons[0]), report.break_reasons
    stage4_fx.reset()
    assert_same_as_eager(stage4_fx.compile(reads_the_traceback), reads_the_traceback, torch.ones(2))


def test_an_exception_in_a_with_block_of_a_contextmanager():
    """contextlib's `__exit__` throws the body's exception into the generator: a handler
    there swallows it, a `finally` runs, none lets it through (`gen.throw`)."""

    @contextlib.contextmanager
    def swallow(kind, seen):
        try:
            yield "entered"
        except kind as error:
            seen.append(type(error).__name__)

    @contextlib.contextmanager
    def closing_log(log):
        try:
            yield
        finally:
            log.append("closed")

    def case(x):
        log = []
        with swallow(KeyError, log) as entered:
            {}.pop("k")
        with closing_log(log):
            raised = outcome(divmod, 1, 0)
        try:
            with closing_log(log):
                int("x")
        except ValueError as error:
            caught = error.args
        return x + 1, entered, raised, caught, log

    check(case, torch.ones(2))


def test_throw_into_a_generator():
    def case(x):
        def numbers():
            try:
                yield 1
            except ValueError:
                yield 2
            yield 3

        it = numbers()
        first = next(it)
        thrown = it.throw(ValueError("v"))
        unhandled = numbers()
        next(unhandled)
        return x + first + thrown + next(it), outcome(unhandled.throw, KeyError("k"))

    check(case, torch.ones(2))


def test_a_resumed_generator_sees_the_exception_its_resumer_handles():
    """CPython links a resumed generator to its resumer (Lib/test/test_exceptions.py's
    test_generator_doesnt_retain_old_exc): inside, `sys.exception()` is the exception the
    resumer handles then, not the one its creator handled."""

    def case(x):
        seen = []

        def gen():
            seen.append(type(sys.exception()).__name__)
            yield
            seen.append(sys.exception())

        it = gen()
        try:
            raise RuntimeError
        except RuntimeError:
            next(it)
        seen.append(outcome(next, it))
        return x + 1, seen, sys.exc_info()

    check(case, torch.ones(2))


def test_outside_its_handlers_the_code_sees_the_callers_exception():
    """Where the caller handles none, `sys.exc_info()` is (None, None, None), assumed and
    guarded: called from an `except` block, the frame is traced again and runs eagerly."""

    def fn(x):
        return x + 1, sys.exc_info()[0], sys.exception()

    compiled = stage4_fx.compile(fn, backend="eager")
    assert compiled(torch.ones(1))[1:] == (None, None)
    try:
        raise KeyError("k")
    except KeyError:
        inside = compiled(torch.ones(1))
    assert inside[1] is KeyError and isinstance(inside[2], KeyError)
    assert compiled(torch.ones(1))[1:] == (None, None)
