"""Adaptive pooling to any output size, for any input size (lowerings/pooling.py).

Output `i` of `o` pools input `floor(i*n/o)` up to `ceil((i+1)*n/o)`; the kernel computes
each window's bounds, so one kernel serves every input size: larger than the output,
smaller, divisible by it or not.
"""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import stage4_fx
from stage5_inductor_cpp import compile_fx
from tests.oracle import assert_same_as_eager
from tests.stage5.helpers import KeepGraphs

pytestmark = pytest.mark.usefixtures("fresh_compiles")  # tests/conftest.py


def test_the_largest_window_is_ceil_of_n_plus_o_minus_1_over_o():
    """The reduction's range over each dim (the lowering's `kernel`) holds every window."""
    for n in range(1, 70):
        for o in range(1, 40):
            longest = max(-(-(i + 1) * n // o) - i * n // o for i in range(o))
            assert longest <= (n + 2 * o - 2) // o, (n, o)


# (function, number of spatial dims): 1d pools (C, L), 2d (N, C, H, W), 3d (N, C, D, H, W)
POOLS = {
    "avg1d": (F.adaptive_avg_pool1d, 1),
    "max1d": (F.adaptive_max_pool1d, 1),
    "avg2d": (F.adaptive_avg_pool2d, 2),
    "max2d": (F.adaptive_max_pool2d, 2),
    "avg3d": (F.adaptive_avg_pool3d, 3),
    "max3d": (F.adaptive_max_pool3d, 3),
}


def pooled_to(name, output):
    pool, _ = POOLS[name]

    def run(x):
        return pool(x.relu() + 1, output) * 2  # a computed input, stored first

    return run


def symbolic_graph(backend):
    """The graph compiled for the second size on: symbolic, and the same for every size."""
    assert len(backend.graphs) == 2, [g.per_size_reason for g in backend.graphs]
    graph = backend.graphs[1]
    assert graph.symbolic is not None, graph.per_size_reason
    assert {id(c) for c in graph.specializations.values()} == {id(graph.symbolic)}
    return graph.symbolic


def check_pool_over_sizes(name, output, sides, compile=compile_fx, device="cpu"):
    """Pool `name` to `output` checked against eager at each size of `sides`, after a first
    call at other sizes; one symbolic graph served them all, and its pool is our kernel."""
    stage4_fx.reset()
    _, dims = POOLS[name]
    fn = pooled_to(name, tuple(output[:dims]))
    backend = KeepGraphs(compile)
    compiled = stage4_fx.compile(fn, backend=backend)
    # the first call's sizes are none of the later ones': every spatial dim is a symbol from
    # the second call on (a dim becomes one when it changes)
    lead = (3,) if dims == 1 else (1, 2)
    for spatial in [(31, 31, 31), *sides]:
        x = torch.randn(*lead, *spatial[:dims], device=device)
        assert_same_as_eager(compiled, fn, x, atol=1e-5, rtol=1e-5)
    assert not symbolic_graph(backend).extern_names


POOLS_TO = st.lists(st.integers(1, 9), min_size=3, max_size=3)  # output sizes
SIDES = st.lists(st.lists(st.integers(2, 30), min_size=3, max_size=3), min_size=2, max_size=4)


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(sorted(POOLS)), output=POOLS_TO, sides=SIDES)
def test_adaptive_pools_equal_eager_at_random_sizes_with_one_symbolic_compile(name, output, sides):
    check_pool_over_sizes(name, output, sides)


def test_a_pool_to_seven_by_seven_is_one_kernel_for_every_image_size():
    """A VGG's or an AlexNet's head: `adaptive_avg_pool2d(x, (7, 7))` of images larger and
    smaller than 7, divisible by it and not."""
    fn = pooled_to("avg2d", (7, 7))
    backend = KeepGraphs()
    compiled = stage4_fx.compile(fn, backend=backend)
    for side in (14, 9, 7, 5, 21, 16, 3):
        assert_same_as_eager(compiled, fn, torch.randn(2, 3, side, side + 2))
    code = symbolic_graph(backend)
    assert not code.extern_names
    kernels = code.source.replace(code.prelude, "")
    assert "ps0" in kernels and "//" not in kernels  # the largest window: a computed size


def test_static_even_windows_keep_the_average_pool_kernel():
    """Where `o` divides `n` (and the sizes are ints) the windows are an `avg_pool2d`'s:
    affine loads, no bounds computed per output."""
    backend = KeepGraphs()
    fn = pooled_to("avg2d", (7, 3))
    compiled = stage4_fx.compile(fn, backend=backend)
    assert_same_as_eager(compiled, fn, torch.randn(2, 3, 14, 9))
    assert "/ 7L" not in backend.graphs[0].last.source  # no window bound computed


def half_grid(x):
    """An output size of symbols (`s0//2` rows), of a channels-last input: `contiguous` asks
    a meta tensor of symbolic strides whether it is so already (lowerings/copies.py)."""
    x = x.contiguous(memory_format=torch.channels_last)
    return F.adaptive_avg_pool2d(x, (x.size(2) // 2, 3)) + 1


def test_an_output_size_of_symbols_of_a_channels_last_input():
    backend = KeepGraphs()
    compiled = stage4_fx.compile(half_grid, backend=backend)
    for side in (17, 9, 12, 5, 23):
        assert_same_as_eager(compiled, half_grid, torch.randn(2, 3, side, side + 1))
    assert not symbolic_graph(backend).extern_names
