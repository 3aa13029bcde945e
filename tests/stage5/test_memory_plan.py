"""The wrapper's memory plan: a dead buffer handed to a later one, a kernel's output written
over an input that dies in it (performance/memory_plan.py), against eager.

A wrong plan gives wrong answers, not errors: a buffer handed on while something still
reads it, or an output written over an element another iteration has yet to read. The
random programs below make exactly those chances (results read again later, read at
another element, returned, viewed) and return only some of their values, so that most
buffers die inside the graph.
"""

import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.stage5.helpers import check_lowered, check_traced

a = torch.randn(6, 6)
w = torch.randn(6, 6)


def in_place_kernels(compiled) -> list[str]:
    """The kernels of the code that write over one of their inputs (`# in place`)."""
    return re.findall(r"(\w+) = .*  # in place", compiled.code)


def test_a_kernel_writes_over_an_input_that_dies_in_it():
    """A product's result is read once, where the pointwise kernel after it writes: the
    kernel stores into the product's memory through one pointer, and allocates nothing
    (the one allocation is the product's, `out=`)."""
    compiled = check_lowered(lambda x: torch.relu(x @ w * 2 + 1), a, externs=("matmul",))
    assert len(in_place_kernels(compiled)) == 1
    wrapper = compiled.last.wrapper_source
    assert wrapper.count("empty_strided") == 1
    (signature,) = re.findall(r'extern "C" void \w+\((.*)\)', compiled.last.source)
    written = [p for p in signature.split(", ") if not p.startswith("const")]
    assert len(written) == 1  # the product's buffer, read and written


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda x: (lambda y: torch.relu(y) @ y)(x @ w), id="read_later"),
        pytest.param(lambda x: (lambda y: torch.relu(y) + y.flip(0))(x @ w), id="other_element"),
        pytest.param(lambda x: (lambda y: (torch.relu(y), y))(x @ w), id="returned"),
        pytest.param(lambda x: (lambda y: (torch.relu(y), y.t()))(x @ w), id="view_returned"),
        pytest.param(lambda x: torch.relu((x @ w).t().contiguous()), id="transposed"),
    ],
)
def test_an_input_still_needed_is_not_written_over(fn):
    compiled = check_lowered(fn, a, externs=("matmul",))
    assert in_place_kernels(compiled) == []


def test_the_memory_torch_made_for_an_extern_is_handed_to_a_later_buffer():
    def fn(x):
        y = x.logcumsumexp(0)  # memory torch made: the wrapper may hand it on once dead
        z = torch.relu(y.flip(0))  # reads y at another element: new memory
        return z @ w  # the product's out= buffer takes y's memory

    compiled = check_lowered(fn, a, externs=("logcumsumexp", "matmul"))
    assert in_place_kernels(compiled) == []
    assert re.search(r"buf\d+ = buf0; del buf0  # reuse", compiled.code)


# Steps of a random program: (name, arity); each takes earlier values by position.
STEPS = {
    "matmul": (torch.matmul, 2),
    "logcumsumexp": (lambda x: x.logcumsumexp(0), 1),
    # bounded: sin of the thousands a chain of products reaches would turn float32's last
    # bits into 1e-4 (eager's own error against float64 there), which no tolerance of a
    # memory test should be about
    "tanh": (torch.tanh, 1),
    "relu_scale": (lambda x: torch.relu(x) * 0.5, 1),
    "add": (torch.add, 2),
    "flip": (lambda x: x.flip(0), 1),
    "transpose": (lambda x: x.t(), 1),
    "transpose_add": (lambda x, y: x.t() + y, 2),
    "row_sum": (lambda x: x - x.sum(1, keepdim=True), 1),
    "relu_": (lambda x: x.relu_(), 1),
}


@st.composite
def memory_programs(draw):
    """(function, steps): 2-7 steps over a 6 x 6 matrix, each mostly on the values just
    made (a chain, where buffers die young), every other one a call into torch; the
    function returns the last value and a random subset of the others."""
    steps = []
    for i in range(draw(st.integers(2, 7))):
        name = draw(st.sampled_from(["matmul", "logcumsumexp"] if i % 2 else sorted(STEPS)))
        operands = [draw(st.integers(1, 3)) for _ in range(STEPS[name][1])]  # from the end
        steps.append((name, operands))
    returned = draw(st.sets(st.integers(0, len(steps) - 2), max_size=2))

    def fn(x):
        values = [x * 1]  # the input is never written in place here
        for name, operands in steps:
            values.append(STEPS[name][0](*[values[-min(i, len(values))] for i in operands]))
        return (values[-1], *[values[i + 1] for i in sorted(returned)])

    return fn, (steps, sorted(returned))


@settings(max_examples=60, deadline=None)
@given(memory_programs())
def test_random_programs_with_buffers_that_die_inside_the_graph(program):
    fn, _ = program
    check_traced(fn, a, atol=1e-4, rtol=1e-4)
