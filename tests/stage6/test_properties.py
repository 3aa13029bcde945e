"""Stage 5's random programs (tests/stage5/programs.py), compiled to Triton: equal to eager.

Few examples: on the CPU every kernel runs under Triton's interpreter, which is slow.
"""

from unittest import mock

import pytest
from hypothesis import given, note, settings

from stage5_inductor_cpp.performance import split_reductions
from stage5_inductor_cpp.rules import CPU_RULES
from tests.oracle import assert_same_as_eager
from tests.stage5.helpers import assert_program_compiled
from tests.stage5.programs import programs, tolerances
from tests.stage5.test_memory_plan import a, memory_programs
from tests.stage6.helpers import DEVICES, check_traced, compile_traced, on


def check(program, device):
    fn, inputs = program
    note(fn.__qualname__)  # the program's steps, printed with a failing example
    run = compile_traced(fn)
    expected = assert_same_as_eager(run, fn, *on(device, inputs), **tolerances(fn, inputs))
    # A program eager rejects fails before compiling; every other one must compile. (On
    # CUDA, stage 5 asks torch's CPU kernels which dtypes an op takes, and some differ:
    # `abs` of a bool tensor runs on CUDA, so the graph runs in torch there.)
    if expected is not None and device == "cpu":
        assert_program_compiled(run, expected)


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=15)
@given(program=programs(ops=("unary", "binary")))
def test_pointwise_programs(program, device):
    check(program, device)


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=15)
@given(program=programs())
def test_programs_with_reductions(program, device):
    check(program, device)


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=10)
@given(program=programs())
def test_programs_with_reductions_split_in_two(program, device):
    """The same programs with every reduction of a few elements and more split in two
    (`split_reduction`, the GPU's rule, here with small thresholds and on the CPU too)."""
    with (
        mock.patch.object(CPU_RULES, "split_reductions", True),
        mock.patch.object(split_reductions, "SPLIT_MIN_CHUNK", 2),
        mock.patch.object(split_reductions, "SPLIT_INTO", 64),
    ):
        check(program, device)


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=10, deadline=None)
@given(program=memory_programs())
def test_programs_whose_buffers_die_inside_the_graph(program, device):
    """Stage 5's programs for the memory plan: buffers handed on, kernels that write over
    an input that dies in them (tests/stage5/test_memory_plan.py)."""
    fn, steps = program
    note(repr(steps))
    check_traced(fn, a, device=device, atol=1e-4, rtol=1e-4)
