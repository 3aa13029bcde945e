"""Random programs: compiled equals eager, exceptions included (tests/oracle.py).

Programs mix pointwise ops, reductions, broadcasting, views, non-contiguous and
zero-size inputs, 0-d tensors, four dtypes, NaN and inf. Tolerances are
`assert_close`'s defaults for the least precise float dtype the program computes in
(`programs.tolerances`): the transcendental functions come from glibc's vector
library (within 4 ulp) and the reductions accumulate float32 in double, both well
inside them; the inputs have few significant bits so that an exact sum in double
and torch's float32 sum are the same number.
"""

from unittest import mock

import torch
from hypothesis import given, note, settings

from stage5_inductor_cpp import compile_fx
from stage5_inductor_cpp.performance import split_reductions
from stage5_inductor_cpp.rules import CPU_RULES
from tests.oracle import assert_same_as_eager
from tests.stage5.helpers import assert_program_compiled, compile_traced
from tests.stage5.programs import programs, tolerances


def check(program):
    fn, inputs = program
    note(fn.__qualname__)  # the program's steps, printed with a failing example
    run = compile_traced(fn)
    expected = assert_same_as_eager(run, fn, *inputs, **tolerances(fn, inputs))
    # A program eager rejects fails before compiling; every other one must compile.
    if expected is not None:
        assert_program_compiled(run, expected)


@settings(max_examples=30)
@given(programs(ops=("unary", "binary")))
def test_pointwise_programs(program):
    check(program)


@settings(max_examples=30)
@given(programs())
def test_programs_with_reductions(program):
    check(program)


@settings(max_examples=10)
@given(programs())
def test_programs_through_torch_compile(program):
    fn, inputs = program
    note(fn.__qualname__)
    torch._dynamo.reset()
    calls = []

    def backend(gm, example_inputs):
        calls.append(gm)
        return compile_fx(gm, example_inputs)

    if not _eager_ok(fn, inputs):
        return  # dynamo wraps eager's error in its own type: compile_fx is compared above
    compiled = torch.compile(fn, backend=backend)
    assert_same_as_eager(
        compiled, fn, *inputs, captured=lambda: bool(calls), **tolerances(fn, inputs)
    )


def _eager_ok(fn, inputs):
    try:
        fn(*[t.clone() for t in inputs])
    except Exception:  # the program is invalid in eager (bad broadcast, empty amax...)
        return False
    return True


@settings(max_examples=20)
@given(programs())
def test_programs_with_reductions_split_in_two(program):
    """Reductions split in two (`split_reduction`, the GPU's rule, here with small
    thresholds and on the CPU): the partials are stored in the accumulation dtype, so the
    answers are eager's within the same tolerances."""
    with (
        mock.patch.object(CPU_RULES, "split_reductions", True),
        mock.patch.object(split_reductions, "SPLIT_MIN_CHUNK", 2),
        mock.patch.object(split_reductions, "SPLIT_INTO", 64),
    ):
        check(program)
