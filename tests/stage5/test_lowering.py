"""One test per lowering: compiled equals eager, through symbolic_trace and torch.compile.

`check_lowered` also fails if the op became a call into torch rather than a kernel.
"""

import operator

import pytest
import torch
import torch.nn.functional as F

from tests.oracle import assert_same_as_eager
from tests.stage5.helpers import check_both, check_lowered, check_traced, compile_traced

x = torch.randn(6, 8)
v = torch.randn(8)
ints = torch.randint(-5, 5, (6, 8))
specials = torch.tensor(
    [[float("nan"), 1.0, -2.0, 0.5], [float("inf"), float("-inf"), 0.0, -0.0]]
).repeat(1, 2)

POINTWISE = {
    "sin": torch.sin, "cos": torch.cos, "tan": torch.tan, "exp": torch.exp, "expm1": torch.expm1,
    "log": lambda a: torch.log(a.abs()), "log2": lambda a: a.abs().log2(),
    "log1p": lambda a: a.abs().log1p(), "sqrt": lambda a: a.abs().sqrt(),
    "rsqrt": lambda a: a.abs().rsqrt(),
    "tanh": torch.tanh, "erf": torch.erf, "atan": torch.atan, "abs": torch.abs, "neg": operator.neg,
    "relu": F.relu, "sigmoid": torch.sigmoid, "silu": F.silu, "gelu": F.gelu,
    "gelu_tanh": lambda a: F.gelu(a, approximate="tanh"), "reciprocal": torch.reciprocal,
    "floor": torch.floor, "ceil": torch.ceil, "trunc": torch.trunc, "round": torch.round,
    "isnan": torch.isnan, "logical_not": torch.logical_not, "square": torch.square,
    "leaky_relu": F.leaky_relu, "hardtanh": F.hardtanh, "softplus": F.softplus,
    "clamp": lambda a: a.clamp(-0.5, 0.5), "clamp_min": lambda a: a.clamp_min(0.1),
    "add": lambda a: a + v, "sub": lambda a: a - 1, "rsub": lambda a: 1 - a, "mul": lambda a: a * v,
    "div": lambda a: a / v, "pow2": lambda a: a**2, "pow_half": lambda a: a.abs() ** 0.5,
    "pow_t": lambda a: torch.pow(a.abs(), v), "maximum": lambda a: torch.maximum(a, v),
    "minimum": lambda a: torch.minimum(a, v), "atan2": lambda a: torch.atan2(a, v),
    "remainder": lambda a: a % 0.7, "eq": lambda a: a == v, "lt": lambda a: a < 0,
    "ge": lambda a: a >= v,
    "logical_and": lambda a: (a > 0) & (a < 1), "where": lambda a: torch.where(a > 0, a, v),
    "masked_fill": lambda a: a.masked_fill(a > 0, 2.0),
    "add_alpha": lambda a: torch.add(a, v, alpha=2),
    "to_int": lambda a: (a * 3).to(torch.int64), "to_double": lambda a: a.double() + 1,
    "int_promotion": lambda a: a + torch.arange(8), "bool_sum": lambda a: (a > 0) + (a < 0),
}  # fmt: skip

REDUCTIONS = {
    "sum": lambda a: a.sum(), "sum_dim": lambda a: a.sum(1), "sum_dims": lambda a: a.sum((0, 1)),
    "sum_keepdim": lambda a: a.sum(0, keepdim=True), "mean": lambda a: a.mean(-1),
    "amax": lambda a: a.amax(1), "amin_keepdim": lambda a: a.amin(0, keepdim=True),
    "max": lambda a: a.max(), "min": torch.min, "prod": lambda a: a.prod(1),
    "var": lambda a: a.var(1), "var_unbiased": lambda a: a.var(0, unbiased=False),
    "std": lambda a: a.std(), "argmax": lambda a: a.argmax(1), "argmin": lambda a: a.argmin(),
    "argmax_keepdim": lambda a: a.argmax(0, keepdim=True), "any": lambda a: (a > 1).any(1),
    "all": lambda a: (a > -3).all(), "softmax": lambda a: a.softmax(-1),
    "softmax0": lambda a: torch.softmax(a, 0), "log_softmax": lambda a: F.log_softmax(a, dim=1),
    "layer_norm": lambda a: F.layer_norm(a, (8,)),
    "layer_norm_affine": lambda a: F.layer_norm(a, (8,), v, v),
    "layer_norm_2d": lambda a: F.layer_norm(a, (6, 8)), "int_sum": lambda a: (a * 4).long().sum(0),
}  # fmt: skip

VIEWS = {
    "t": lambda a: a.t() * 2, "transpose": lambda a: a.transpose(0, 1) + 1,
    "permute": lambda a: a.unsqueeze(0).permute(2, 0, 1).sin(), "view": lambda a: a.view(4, 12) + 1,
    "reshape_computed": lambda a: (a + 1).reshape(-1, 4).sum(1),
    "flatten": lambda a: a.flatten() * 2,
    "reshape_transposed": lambda a: a.t().reshape(-1).cumsum(0),  # cumsum: an extern
    "reshape_expanded": lambda a: a[:1].expand(6, 8).reshape(48) * 2,
    "contiguous_expanded": lambda a: a[0].expand(3, 8).contiguous().view(24),
    "unflatten": lambda a: a.unflatten(1, (2, 4)) + 1, "squeeze": lambda a: a[:1].squeeze(0) - 1,
    "expand": lambda a: a[:, :1].expand(6, 8) + a, "expand_as": lambda a: v.expand_as(a) * a,
    "slice_step": lambda a: a[::2, 1::3] * 2, "slice_negative": lambda a: a[-3:, :-2] + 1,
    "select": lambda a: a[2] + a[:, 3].sum(), "none_ellipsis": lambda a: a[None, ..., 1] * 3,
    "narrow": lambda a: a.narrow(1, 2, 3) + 0, "select_fn": lambda a: a.select(1, -1) * 2,
    "contiguous_t": lambda a: a.t().contiguous(), "clone": lambda a: a.clone(),
    "return_input_view": lambda a: a.t(), "return_input": lambda a: (a, a + 1),
}  # fmt: skip

# The externs a case of the tables above has besides the op it tests.
OTHER_EXTERNS = {"reshape_transposed": ("cumsum",)}

EXTERNS = {
    "matmul": lambda a: a @ a.t(), "linear_relu": lambda a: F.relu(F.linear(a, a) + 1),
    "cat": lambda a: torch.cat([a, a * 2]).sin(), "max_dim": lambda a: a.max(1),
    "max_dim_values": lambda a: a.max(1)[0] + 1, "cumsum": lambda a: a.cumsum(0) * 2,
    "advanced_index": lambda a: a[torch.tensor([0, 2])] + 1,
    "sort": lambda a: a.sort(1).values.exp(),
    "size_arithmetic": lambda a: a.view(a.size(0) * 2, -1) + a.shape[1],
    "ones": lambda a: a + torch.ones(8), "half": lambda a: a.half().float() + 1,
}  # fmt: skip


@pytest.mark.parametrize("name", POINTWISE)
def test_pointwise(name):
    check_lowered(POINTWISE[name], x)


@pytest.mark.parametrize("name", ["sin", "relu", "maximum", "where", "div", "isnan", "clamp"])
def test_pointwise_nan_inf(name):
    check_lowered(POINTWISE[name], specials)


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reduction(name):
    check_lowered(REDUCTIONS[name], x)


@pytest.mark.parametrize("name", ["amax", "max", "argmax", "softmax", "sum", "argmin", "min"])
def test_reduction_nan_inf(name):
    check_lowered(REDUCTIONS[name], specials)
    infinities = torch.tensor([[float("-inf")] * 3, [float("inf")] * 3, [1.0, float("-inf"), 2.0]])
    check_lowered(REDUCTIONS[name], infinities)


@pytest.mark.parametrize("name", VIEWS)
def test_view(name):
    check_lowered(VIEWS[name], x, externs=OTHER_EXTERNS.get(name, ()))


@pytest.mark.parametrize("name", EXTERNS)
def test_extern(name):
    check_traced(EXTERNS[name], x)


@pytest.mark.parametrize("name", ["sin", "int_promotion", "bool_sum", "to_int"])
def test_integer_inputs(name):
    check_lowered(POINTWISE[name], ints)


# Shapes, strides and dtypes that are easy to get wrong (stage 6 runs them too).
LAYOUTS = [
    (lambda a: a.sum() * 2, [torch.tensor(3.0)]),
    (lambda a: a.softmax(0), [torch.tensor(3.0)]),
    (lambda a: a.sum(0) + 1, [torch.randn(0, 3)]),
    (lambda a: a.mean(1), [torch.randn(0, 3)]),
    (lambda a: a.sin() * 2, [torch.randn(3, 0)]),
    (lambda a, b: a * b, [torch.randn(4, 1), torch.tensor(2.0, dtype=torch.float64)]),
    (lambda a, b: a + b, [torch.randn(5, 3).t(), torch.randn(3, 5)[:, ::1]]),
    (lambda a, b: a + b, [torch.randn(10, 6)[::2, 1::2], torch.randn(3)]),
    (lambda a, b: (a * b).sum(1), [torch.randn(2, 3, dtype=torch.float64), torch.randn(3)]),
    (lambda a, n: a * n, [torch.randn(4), 3]),
]


@pytest.mark.parametrize("fn, args", LAYOUTS)
def test_shapes_strides_dtypes(fn, args):
    check_lowered(fn, *args)


@pytest.mark.parametrize(
    "fn, args",
    [
        (lambda a, b: a + b, [torch.randn(3, 4), torch.randn(5)]),
        (lambda a: a.view(5, -1), [torch.randn(3, 4)]),
        (lambda a: a.t().view(-1), [torch.randn(3, 4)]),
        (lambda a: a.amax(0), [torch.randn(0, 4)]),
        (lambda a: a.sum(3), [torch.randn(3, 4)]),
        (lambda a: a.long().mean(), [torch.randn(3, 4)]),
        (lambda a: a[5], [torch.randn(3, 4)]),
        (lambda a: (a > 0) - (a < 0), [torch.randn(3)]),
    ],
)
def test_same_exception_as_eager(fn, args):
    assert_same_as_eager(compile_traced(fn), fn, *args)


@pytest.mark.parametrize(
    "name", ["softmax", "layer_norm_affine", "var", "argmax", "t", "linear_relu"]
)
def test_through_torch_compile(name):
    check_both({**REDUCTIONS, **VIEWS, **EXTERNS}[name], x)
