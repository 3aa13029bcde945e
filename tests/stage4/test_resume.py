"""Resume functions and the liveness analysis, on real functions, without the VM."""

import dis
import os
import types

import pytest
import torch

import stage4_fx
from stage2_symbolic_vm import sources
from stage4_fx.bytecode_writer import SOURCE_LOADERS
from stage4_fx.cut import callable_slots
from stage4_fx.resume import ITERATOR, VALUE, live_locals, resume_function
from tests.oracle import assert_same_as_eager


def loop_with_print(x, n):
    total = 0
    for i in range(n):
        total = total + x * i
        if total > 10:
            print("big")
    y = [total, x]
    return y


def offset_of(fn, opname, nth=0):
    return [i.offset for i in dis.get_instructions(fn) if i.opname == opname][nth]


def test_liveness():
    code = loop_with_print.__code__
    assert live_locals(code, 0) == {"x", "n"}
    assert live_locals(code, offset_of(loop_with_print, "FOR_ITER")) == {"total", "x"}
    assert live_locals(code, offset_of(loop_with_print, "RETURN_VALUE")) == set()


def test_resume_function_continues_a_loop(capsys):
    after_print = offset_of(loop_with_print, "POP_TOP")  # the result of print(...)
    resume = resume_function(loop_with_print.__code__, after_print, (VALUE, VALUE), ("total", "x"))
    assert resume.code.co_varnames[:4] == ("total", "x", "___stack0", "___stack1")
    fn = types.FunctionType(resume.code, loop_with_print.__globals__)
    # the loop's iterator (items 3 and 4 left) and print's result are the stack
    assert fn(12, 2, iter([3, 4]), None) == [26, 2]
    assert capsys.readouterr().out == "big\nbig\n"
    again = resume_function(loop_with_print.__code__, after_print, (VALUE, VALUE), ("total", "x"))
    assert again is resume  # made once per place


def test_resume_function_pushes_nulls_back():
    def call_after(x):
        return print(len(x), x.sum().item())

    # resume at the outer CALL: the stack is [NULL, print, len(x), <item>] ([print, NULL, ...]
    # on 3.13)
    after_item = offset_of(call_after, "CALL", -1)
    stack = (*callable_slots(null=True), VALUE, VALUE)
    resume = resume_function(call_after.__code__, after_item, stack, ())
    fn = types.FunctionType(resume.code, {})
    assert fn(lambda *args: args, 3, 4.0) == (3, 4.0)  # the callable is a stack item too


def test_an_iterator_slot_is_passed_as_a_list():
    after_print = offset_of(loop_with_print, "POP_TOP")
    stack = (ITERATOR, VALUE)
    resume = resume_function(loop_with_print.__code__, after_print, stack, ("total", "x"))
    fn = types.FunctionType(resume.code, loop_with_print.__globals__)
    assert fn(12, 2, [3, 4], None) == [26, 2]  # the prologue's GET_ITER makes it a loop again


def test_the_new_code_can_read_every_kind_of_source():
    unreadable = {sources.FunctionSource}  # the function object itself: not in its own frame
    kinds = set(sources.Source.__subclasses__()) - unreadable
    assert kinds == set(SOURCE_LOADERS), "a new Source needs a loader in bytecode_writer.py"


def test_break_keeps_aliases_and_mutations():
    def fn(a):
        xs = [a]
        ys = xs
        sink = []
        sink.append(len(xs))
        print("break", end="")
        ys.append(a * 2)
        return xs, sink

    x = torch.ones(2)
    result, sink = stage4_fx.compile(fn)(x)
    assert len(result) == 2 and sink == [1]


def test_globals_read_before_a_break_keep_their_old_value():
    def fn(a):
        before = COUNTER[0]
        bump()
        return a * before, COUNTER[0]

    COUNTER[0] = 1
    expected = fn(torch.ones(1))
    COUNTER[0] = 1
    actual = stage4_fx.compile(fn)(torch.ones(1))
    assert torch.equal(actual[0], expected[0]) and actual[1] == expected[1]


COUNTER = [1]


def bump():
    COUNTER[0] += 1
    print("bumped", end="")


def test_resume_functions_of_a_library_function_are_compiled():
    # A function whose file lies in a library (here: torch's folder) is compiled when it is
    # the one passed to compile(); the resume functions of its breaks must be compiled too.
    source = "def f(x):\n    x = x + 1\n    if x.sum() > 0:\n        x = x * 2\n    return x - 1\n"
    filename = os.path.join(os.path.dirname(torch.__file__), "minidynamo_library_example.py")
    namespace = {}
    exec(compile(source, filename, "exec"), namespace)
    f = namespace["f"]
    compiled = stage4_fx.compile(f)
    x = torch.ones(3)
    torch.testing.assert_close(compiled(x), f(x))
    graphs = [frame.graph for frame in compiled.options.frames if frame.graph is not None]
    assert len(graphs) == 2  # x + 1 before the break, x * 2 and x - 1 in the resume function


def reraise(x):
    x = x + 1
    raise  # the exception the caller is handling: the VM cannot know it, a break


def test_a_break_at_the_last_instruction_runs_the_frame_eagerly():
    """Nothing follows a bare `raise` at the end of a function: no resume function, the frame
    runs eagerly (it was an IndexError of the compiler)."""
    compiled = stage4_fx.compile(reraise)
    try:
        raise ValueError("handled")
    except ValueError:
        with pytest.raises(ValueError, match="handled"):
            compiled(torch.ones(2))
    (record,) = compiled.options.breaks
    assert record.kind == "unresumable_instruction" and record.eager_frame


def test_a_resume_function_run_as_it_is_keeps_an_arguments_cell():
    """`n`, an argument that a closure captures, is a cell. CPython 3.13 loads a cell for a
    closure with LOAD_FAST of its slot, for an argument the argument's own slot: a resume
    function must read it as its free variable, not as a local (it crashed CPython 3.13 when
    the loop's resume function ran as it is, from its third step on)."""

    def program(x, n):
        for i in range(3):
            x = x + i
            if x.mean() > -1.5:
                x = x - 1.5

        def scaled(t):
            return t * n

        return scaled(x)

    compiled = stage4_fx.compile(program, backend="eager")
    for _ in range(2):
        assert_same_as_eager(compiled, program, torch.randn(4, 3), 2)
