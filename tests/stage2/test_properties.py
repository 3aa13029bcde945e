"""The law of stage 2: a trace replayed on the same inputs computes what eager computes.

Random programs (tests/stage2/programs.py) are traced; whenever `trace`
completes, `replay` must equal eager. Programs that branch on a tensor's
value must stop, with that reason, at that line.
"""

from hypothesis import given
from hypothesis import strategies as st

from stage2_symbolic_vm import Unsupported, replay, trace
from tests.oracle import assert_same_as_eager

from .programs import Program, programs


@given(programs(), st.integers(0, 2**16), st.integers(0, 3))
def test_replayed_trace_equals_eager(program, seed, n):
    fn = program.function()
    args = Program.arguments(seed, n)
    recorded = trace(fn, *args)
    assert_same_as_eager(
        lambda *a: replay(recorded, fn, *a), fn, *args, captured=lambda: len(recorded.inputs) > 0
    )


@given(programs(data_dependent_branch=True), st.integers(0, 2**16), st.integers(0, 3))
def test_branch_on_tensor_value_stops_at_that_line(program, seed, n):
    fn = program.function()
    try:
        trace(fn, *Program.arguments(seed, n))
    except Unsupported as stop:
        assert stop.kind == "data_dependent_branch", stop
        assert stop.lineno == program.branch_line, (stop.lineno, program.source)
        assert stop.state.lineno == program.branch_line
        assert stop.trace.nodes, "the trace so far is kept"
    else:
        raise AssertionError("the trace went through a branch on a tensor's value")
