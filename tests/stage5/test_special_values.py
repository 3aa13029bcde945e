"""NaN, ±inf, ±0.0, denormals and huge values through every float lowering (special_values.py).

Each mismatch these tests found has a test of its own below, which failed before its fix.
"""

import functools

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from stage5_inductor_cpp import compile_fx
from tests.stage5 import special_values
from tests.stage5.helpers import as_python_function, assert_lowered, check_lowered

DTYPES = [torch.float32, torch.float64]
inf, nan = float("inf"), float("nan")


def test_every_float_lowering_meets_special_values():
    assert not special_values.lowerings_not_reached()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("group", special_values.GROUPS)
def test_every_special_value(group, dtype):
    for inputs in special_values.every_special_value(group, dtype):
        special_values.check_group(compile_fx, group, inputs)


@settings(max_examples=15)
@given(data=st.data())
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("group", special_values.GROUPS)
def test_special_values_among_others(group, dtype, data):
    special_values.check_group(compile_fx, group, data.draw(special_values.inputs(group, dtype)))


# The sign of a zero shows in 1 / x (inf or -inf), which assert_close compares.
CLAMP_AT_ZERO = [
    lambda a: 1 / a.clamp(max=-0.0),
    lambda a: 1 / a.clamp(min=0.0),
    lambda a: 1 / F.hardtanh(a, -0.0, 0.0),
]
ZEROS = torch.tensor([0.0, -0.0, 0.0, -0.0, nan, 1.0])


@pytest.mark.parametrize("fn", CLAMP_AT_ZERO)
def test_clamp_by_a_number_keeps_the_value_at_the_bound(fn):
    """torch's clamp replaces only values beyond a number bound: clamp(0.0, max=-0.0) is 0.0
    (it was maximum/minimum, which gave -0.0)."""
    check_lowered(fn, ZEROS)
    check_lowered(fn, ZEROS.double())


ROUNDED_ONCE = [
    lambda x, y: torch.add(x, y, alpha=2),
    lambda x, y: torch.sub(x, y, alpha=-2),
    lambda x, y: torch.rsub(y, x, alpha=-2),
]


def alpha_operands(dtype):
    big = torch.finfo(dtype).max * 0.9
    a = torch.tensor([big, inf, 1.0, 1 + 2**-20], dtype=dtype)
    return a, torch.tensor([-big, -big, 2**-30, 2**-30], dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("fn", ROUNDED_ONCE)
def test_add_with_alpha_rounds_once(fn, dtype):
    """torch computes a + alpha * b as one fused multiply-add: 3e38 + 2 * -3e38 is -3e38, and
    inf + 2 * -3e38 is inf (a multiply, then an add, gave -inf and nan in Triton)."""
    check_lowered(fn, *alpha_operands(dtype), rtol=0, atol=0)


ROUNDED_TWICE = [lambda x: x * 2 - 3e38, lambda x: x * x - 1]
TWICE = torch.tensor([3e38, 1 + 2**-12, 1.5])


@pytest.mark.parametrize("fn", ROUNDED_TWICE)
def test_products_and_sums_of_two_ops_are_rounded_twice(fn):
    """g++ fused `a * b + c` of two torch ops into one FMA (-ffp-contract=fast), whose product
    is not rounded: 3e38 * 2 - 3e38 gave 3e38 where torch's product overflows to inf."""
    check_lowered(fn, TWICE, rtol=0, atol=0)


@pytest.mark.parametrize("op", [torch.std, torch.var])
def test_float32_variance_accumulates_in_double_as_torch_does(op):
    """torch's CPU variance of float32 runs in double: the std of [1e-40, 0] is 7e-41 and that
    of [3e38, -3e38, 0] 3e38; in float32 the squares gave 0 and inf."""
    rows = torch.tensor([[1e-40, 0.0, 0.0], [3e38, -3e38, 0.0], [1e20, -1e20, 0.0]])
    check_lowered(lambda x: op(x, -1), rows, rtol=1.3e-6, atol=0)


def test_a_variance_in_one_pass_keeps_its_digits_far_from_zero_and_is_never_negative():
    """Float data: one pass, the sums of x - k and (x - k)**2 in double (k: the row's first
    element). Rows far from 0 (means of 3e4 and 1e6 standard deviations) keep float32's
    digits, which the unshifted sum(x * x) - sum(x) * mean loses (2e-6 of the variance at
    3e4), and a constant row, whose difference may round below 0, has variance 0 as in
    torch (no NaN standard deviation)."""
    torch.manual_seed(0)
    far = torch.tensor([[3e4], [1e6]]) + torch.randn(2, 4096)
    rows = torch.cat([far, torch.full((1, 4096), 0.1)])
    check_lowered(lambda x: torch.var(x, -1), rows, rtol=1.3e-6, atol=0)
    check_lowered(lambda x: torch.std(x, -1), rows, rtol=1.3e-6, atol=0)


def test_a_variance_of_doubles_takes_two_passes():
    """A double's square may overflow: (1e200)**2 is inf in double, so double data takes the
    mean and then the squared deviations, and the variance of [1e200, 1e200] is 0."""
    rows = torch.tensor([[1e200, 1e200], [1e200, -1e200]], dtype=torch.float64)
    check_lowered(lambda x: torch.var(x, -1), rows, rtol=1e-12, atol=0)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_gelu_follows_torchs_formula(approximate, dtype):
    """Our gelu is torch's x * 0.5 * (1 + erf(x / sqrt(2))) (or its tanh form): -inf gives NaN,
    -3e38 gives -0.0, +inf gives inf, as torch's own kernel does for one element, a strided
    tensor, float64, or with oneDNN off. oneDNN, which runs float32 exact gelu of contiguous
    tensors of more than one element, gives NaN at +inf (special_values.huge_positive_gelu)."""
    big = torch.finfo(dtype).max
    x = torch.tensor([inf, -inf, nan, big, -big, 1e-40, -0.0, 0.0, 20.0, -20.0], dtype=dtype)
    gelu = as_python_function(functools.partial(F.gelu, approximate=approximate), 1)
    compiled = compile_fx(torch.fx.symbolic_trace(gelu), [x])
    with torch.backends.mkldnn.flags(enabled=False):
        expected = gelu(x)
    torch.testing.assert_close(compiled(x), expected, equal_nan=True, rtol=0, atol=0)
    assert_lowered(compiled)
    alone = torch.stack([gelu(v) for v in x])
    torch.testing.assert_close(alone, expected, equal_nan=True, rtol=0, atol=0)


def test_maximum_and_minimum_of_equal_zeros_return_the_first_as_torch():
    # found by test_properties' random programs: torch.maximum(0.0, -0.0) is 0.0, and
    # torch.maximum(-0.0, 0.0) is -0.0 (the sign shows in 1 / the result)
    def fn(a, b):
        return 1 / torch.maximum(a, b), 1 / torch.minimum(a, b), 1 / torch.maximum(b, a)

    a, b = torch.tensor([0.0, 1.0]), torch.tensor([-0.0, 1.0])
    check_lowered(fn, a, b)
