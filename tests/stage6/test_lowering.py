"""Stage 5's lowering cases, compiled to Triton: every op, reduction and view equals eager,
and becomes a kernel (`check_lowered`)."""

import pytest
import torch

from tests.oracle import assert_same_as_eager
from tests.stage5.test_lowering import (
    DTYPES,
    EXTERNS,
    INDEX_ERRORS,
    INDEXING,
    LAYOUTS,
    MOVES,
    NORMS,
    OTHER_EXTERNS,
    POINTWISE,
    POINTWISE_MORE,
    POOLS,
    POWERS,
    REDUCTIONS,
    VIEWS,
    img,
    ints,
    specials,
    x,
)
from tests.stage6.helpers import DEVICES, check_lowered, check_traced, compile_traced, on

pytestmark = pytest.mark.parametrize("device", DEVICES)


def uses_cpu_constant(fn):
    """Cases that use stage 5's CPU tensor `v`, or make a CPU tensor, only run on the CPU."""
    code = getattr(fn, "__code__", None)
    return code is not None and bool({"v", "arange", "ones", "tensor"} & set(code.co_names))


def skip_unless_cpu(fn, device):
    if device != "cpu" and uses_cpu_constant(fn):
        pytest.skip("uses a CPU tensor: eager and ours both raise")


@pytest.mark.parametrize("name", POINTWISE)
def test_pointwise(name, device):
    skip_unless_cpu(POINTWISE[name], device)
    check_lowered(POINTWISE[name], x, device=device)


@pytest.mark.parametrize("name", ["sin", "relu", "maximum", "where", "div", "isnan", "clamp"])
def test_pointwise_nan_inf(name, device):
    skip_unless_cpu(POINTWISE[name], device)
    fn = POINTWISE[name]
    check_lowered(lambda a: fn(a.repeat(1, 3)[:, :8]), specials, device=device, externs=("repeat",))


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reduction(name, device):
    skip_unless_cpu(REDUCTIONS[name], device)
    check_lowered(REDUCTIONS[name], x, device=device)


@pytest.mark.parametrize("name", ["amax", "max", "argmax", "softmax", "sum", "argmin", "min"])
def test_reduction_nan_inf(name, device):
    check_lowered(REDUCTIONS[name], specials, device=device)


@pytest.mark.parametrize("name", VIEWS)
def test_view(name, device):
    skip_unless_cpu(VIEWS[name], device)
    check_lowered(VIEWS[name], x, device=device, externs=OTHER_EXTERNS.get(name, ()))


@pytest.mark.parametrize("name", EXTERNS)
def test_extern(name, device):
    skip_unless_cpu(EXTERNS[name], device)
    check_traced(EXTERNS[name], x, device=device)


@pytest.mark.parametrize("name", ["sin", "int_promotion", "bool_sum", "to_int"])
def test_integer_inputs(name, device):
    skip_unless_cpu(POINTWISE[name], device)
    check_lowered(POINTWISE[name], ints, device=device)


@pytest.mark.parametrize(
    "fn, args",
    [
        *LAYOUTS,
        # and the block shapes of Triton's kernels: rows longer than a block, masks, loops
        (lambda a: (a * 0.1).sum(1), [torch.randn(3, 5, dtype=torch.float64)]),
        (lambda a: a.softmax(-1), [torch.randn(3, 10000)]),
        (lambda a: (a.exp() + 1).sum(0), [torch.randn(33, 5)]),
        (lambda a: (a * 0.3).bool() & (a > -1), [torch.randn(4, 5)]),
        (lambda a: a.sum(0) + a.argmax(0), [torch.randn(3, 200)]),
        (lambda a: a.argmin(1), [torch.randn(2, 9000)]),
    ],
)
def test_shapes_strides_dtypes(fn, args, device):
    check_lowered(fn, *args, device=device)


@pytest.mark.parametrize("op", [torch.add, torch.mul, torch.maximum, torch.minimum])
def test_arithmetic_on_bools(op, device):
    # On a GPU, True + True in Triton's 1-bit ints wrapped to False; torch says True.
    a = torch.tensor([True, True, False, False])
    b = torch.tensor([True, False, True, False])
    check_lowered(op, a, b, device=device)


# The factories of MOVES name the device (`device=a.device`): they run on CUDA too.
@pytest.mark.parametrize("name", MOVES)
def test_moves(name, device):
    check_lowered(MOVES[name], x, device=device)


@pytest.mark.parametrize("name", POINTWISE_MORE)
def test_pointwise_more(name, device):
    check_lowered(POINTWISE_MORE[name], x, device=device)


@pytest.mark.parametrize("name", NORMS)
def test_norms(name, device):
    check_lowered(NORMS[name], img, device=device)


@pytest.mark.parametrize("name", POOLS)
def test_pools(name, device):
    check_lowered(POOLS[name], img, device=device)


@pytest.mark.parametrize("name", INDEXING)
def test_indexing(name, device):
    fn, args = INDEXING[name]
    check_lowered(fn, *args, device=device, externs=("check_indices",))


@pytest.mark.parametrize("name", INDEX_ERRORS)
def test_positions_out_of_range_raise_as_in_eager(name, device):
    if device != "cpu":
        pytest.skip("CUDA's eager fails a device assert, which ends the process's CUDA context")
    fn, args = INDEX_ERRORS[name]
    assert_same_as_eager(compile_traced(fn), fn, *on(device, args))


@pytest.mark.parametrize("name", DTYPES)
def test_dtypes(name, device):
    fn, args = DTYPES[name]
    if name == "uint8_pool" and device == "cuda":  # CUDA's max_pool2d refuses integers
        assert_same_as_eager(compile_traced(fn), fn, *on(device, args))
        return
    close = {}
    if name == "half_cumsum" and device == "cuda":
        # CUDA's scan adds the float16 row in another order (and precision) than the CPU's
        # float32 loop and ours: a few float16 ulps apart, as any reordered sum may be
        close = {"atol": 4e-3, "rtol": 4e-3}
    check_lowered(fn, *args, device=device, externs=("check_indices",), **close)


@pytest.mark.parametrize("dtype, exponent", POWERS)
def test_pow_rounds_where_eagers_kernel_rounds(dtype, exponent, device):
    """Stage 5's case, on each device: CUDA's float16 kernel rounds the square too."""
    a = (torch.rand(4096) * 4 + 0.25).to(dtype)
    check_lowered(lambda a: a**exponent, a.to(device), device=device, rtol=0, atol=0)
