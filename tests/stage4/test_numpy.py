"""NumPy compiled as torch.compile compiles it: one graph of torch._numpy's operations, results
with NumPy's types and dtypes, ndarray arguments guarded like tensors, breaks with reasons.

The oracle is the same function run eagerly with NumPy (tests/oracle.py compares NumPy's
arrays and scalars by type, dtype, shape and close values).
"""

import linecache

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import stage4_fx
from stage3_guards import counters
from tests.oracle import assert_same_as_eager
from tests.stage2.test_numpy import (  # the programs stage 2 traces, now compiled whole
    numpy_times_two,
    sum_over_an_axis,
    transpose_matmul,
    where_positive,
)

X = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
Y = torch.randn(4, 3, generator=torch.Generator().manual_seed(1))
A = np.random.default_rng(0).random((3, 4))
B = np.random.default_rng(1).random((3, 4))


def mean_reshape_astype(a):
    return a.mean(), a.reshape(2, 6), a.astype(np.float32), a.astype(float).dtype


def exp(x):
    return np.exp(x.numpy())


def concatenate(x):
    a = x.numpy()
    return np.concatenate([a, a * 2], axis=1)


def indexing(a):
    return a[1:, ::2] + a[0, :2], a[-1], a[1, 2]


def from_numpy_arange(x):
    return x + torch.from_numpy(np.arange(4))


def arrays_in_and_out(a, b):
    return np.maximum(a, b) * 2 - a.mean(axis=1, keepdims=True)


def linalg_and_back(x):
    norms = np.linalg.norm(x.numpy(), axis=1)
    return torch.from_numpy(norms) * 2 + x.sum(dim=1)


def in_place_on_the_argument(a):
    a *= 2
    a[0, 0] = -1.0
    return a


TYPICAL = [
    (numpy_times_two, (X,)),
    (sum_over_an_axis, (X,)),
    (where_positive, (X,)),
    (transpose_matmul, (X, Y)),
    (mean_reshape_astype, (A,)),
    (exp, (X,)),
    (concatenate, (X,)),
    (indexing, (A,)),
    (from_numpy_arange, (X,)),
    (arrays_in_and_out, (A, B)),
    (linalg_and_back, (X,)),
    (in_place_on_the_argument, (A,)),
]


@pytest.mark.parametrize(("fn", "args"), TYPICAL, ids=[fn.__name__ for fn, _ in TYPICAL])
def test_a_numpy_program_is_one_graph(fn, args):
    stage4_fx.reset()
    assert_same_as_eager(stage4_fx.compile(fn), fn, *args)
    report = stage4_fx.explain(fn)(*args)
    assert (report.graph_count, report.graph_break_count) == (1, 0), report


def test_an_ndarray_returned_as_it_is_is_the_same_object():
    def fn(a):
        a += 1
        return a, a.T

    a = A.copy()
    same, view = stage4_fx.compile(fn)(a)
    assert same is a and np.shares_memory(view, a) and type(view) is np.ndarray
    report = stage4_fx.explain(fn)(A.copy())
    assert (report.graph_count, report.graph_break_count) == (1, 0), report


def test_an_ndarray_argument_is_guarded_like_a_tensor():
    """Its type, then its tensor's dtype, shape and strides: another dtype recompiles (and gives
    NumPy's dtype), another shape too, a list is no ndarray."""

    def fn(a):
        return a / 2 + a.sum(axis=0)

    stage4_fx.reset()
    compiled = stage4_fx.compile(fn)
    arguments = (A, A + 1, A.astype(np.float32), np.arange(12).reshape(4, 3), A.T, [1.0, 2.0])
    compiles = []
    for arg in arguments:
        before = counters.compiled
        assert_same_as_eager(compiled, fn, arg)
        compiles.append(counters.compiled > before)
    # a list: the guard fails, the VM finds eager's TypeError, and the frame runs eagerly
    assert compiles == [True, False, True, True, True, False]


def test_what_cannot_be_traced_breaks_with_its_reason():
    def fn(a):
        noise = np.random.rand(3, 4)  # NumPy's generator: torch.compile breaks here too
        total = (a * 2).max().item()  # the data of an array
        return a + noise.shape[0], total

    assert_same_as_eager(stage4_fx.compile(fn), fn, A)
    report = stage4_fx.explain(fn)(A)
    kinds = [(b.kind, b.reason.split(",")[0]) for b in report.break_reasons]
    assert kinds == [
        (
            "untraceable_call",
            "call to `numpy.random.RandomState.rand`: NumPy's random generator is not traced: "
            "the graph would draw other numbers",
        ),
        ("item_call", "`ndarray.item()` reads the data of an array"),
    ], kinds


# --- the law, on random programs ---------------------------------------------------------------

STATEMENTS = [
    "a = a + {c}",
    "a = a * {c} - a",
    "a = np.exp(a / 10)",
    "a = np.where(a > {c}, a, -a)",
    "a = np.sum(a, axis=0, keepdims=True) + a",
    "a = a.mean(axis=-1, keepdims=True) - a",
    "a = np.maximum(a, {c})",
    "a = np.concatenate([a, a * {c}], axis=0)[: a.shape[0]]",
    "a = a.astype(np.float32)",
    "a = a.astype(np.int64)",
    "a = a // 2 + a % 3",
    "a = a / 2",
    "a = np.tanh(a) + np.abs(a)",
    "a = (a @ a.T)[:, : a.shape[1]]",
    "a = np.clip(a, -1, {k})",
    "a = a.reshape(-1).reshape(a.shape).T.T",
    "a[0] = {c}",
    "a += {k}",
]
RETURNS = ["a", "a, a.sum()", "np.sum(a, axis=1)", "a.max(), a.dtype", "torch.from_numpy(a) + 1"]


@st.composite
def programs(draw):
    lines = ["a = x.numpy() if isinstance(x, torch.Tensor) else x"]
    for _ in range(draw(st.integers(1, 4))):
        template = draw(st.sampled_from(STATEMENTS))
        c = draw(st.sampled_from([-1.5, 0.0, 0.5, 2.0, 3]))
        lines += template.format(c=c, k=draw(st.integers(0, 3))).splitlines()
    lines.append(f"return {draw(st.sampled_from(RETURNS))}")
    return "def program(x):\n" + "".join(f"    {line}\n" for line in lines)


def define(source: str):
    filename = f"<numpy program {abs(hash(source))}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"np": np, "torch": torch}
    exec(compile(source, filename, "exec"), namespace)
    return namespace["program"]


ARGUMENTS = {
    "float64": lambda rng: rng.standard_normal((3, 3)),
    "float32": lambda rng: rng.standard_normal((3, 3)).astype(np.float32),
    "int64": lambda rng: rng.integers(-5, 5, (3, 3)),
    "tensor": lambda rng: torch.from_numpy(rng.standard_normal((3, 3)).astype(np.float32)),
}


@settings(max_examples=40, deadline=None)
@given(programs(), st.sampled_from(sorted(ARGUMENTS)), st.integers(0, 2**16))
def test_random_numpy_programs_match_eager(source, kind, seed):
    program = define(source)
    arg = ARGUMENTS[kind](np.random.default_rng(seed))
    assert_same_as_eager(stage4_fx.compile(program), program, arg)
    report = stage4_fx.explain(program)(arg)
    assert report.graph_break_count == 0, (source, report.break_reasons)
