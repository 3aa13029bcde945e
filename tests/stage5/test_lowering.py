"""One test per lowering: compiled equals eager, through symbolic_trace and torch.compile.

`check_lowered` also fails if the op became a call into torch rather than a kernel.
"""

import functools
import math
import operator

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from stage5_inductor_cpp.graph_lowering import GraphLowering
from stage5_inductor_cpp.ir import InputBuffer
from stage5_inductor_cpp.lowering import EagerOnly
from tests.oracle import assert_same_as_eager
from tests.stage5.helpers import (
    assert_lowered,
    check_both,
    check_lowered,
    check_torch_compile,
    check_traced,
    compile_traced,
)

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
    "max_dim": lambda a: a.max(1), "max_dim_values": lambda a: a.max(1)[0] + 1,
    "min_dim_keepdim": lambda a: torch.min(a, dim=0, keepdim=True),
    "max_dim_ints": lambda a: (a * 4).int().max(-1).indices, "max_other": lambda a: a.max(v),
    "logsumexp": lambda a: a.logsumexp(1), "logsumexp_dims": lambda a: torch.logsumexp(a, (0, 1)),
    "logsumexp_keepdim": lambda a: a - a.logsumexp(-1, keepdim=True),
    "logsumexp_ints": lambda a: (a * 4).long().logsumexp(0),
}  # fmt: skip

VIEWS = {
    "t": lambda a: a.t() * 2, "transpose": lambda a: a.transpose(0, 1) + 1,
    "permute": lambda a: a.unsqueeze(0).permute(2, 0, 1).sin(), "view": lambda a: a.view(4, 12) + 1,
    "reshape_computed": lambda a: (a + 1).reshape(-1, 4).sum(1),
    "flatten": lambda a: a.flatten() * 2,
    "reshape_transposed": lambda a: a.t().reshape(-1).cumsum(0),
    "reshape_expanded": lambda a: a[:1].expand(6, 8).reshape(48) * 2,
    "contiguous_expanded": lambda a: a[0].expand(3, 8).contiguous().view(24),
    "unflatten": lambda a: a.unflatten(1, (2, 4)) + 1, "squeeze": lambda a: a[:1].squeeze(0) - 1,
    "expand": lambda a: a[:, :1].expand(6, 8) + a, "expand_as": lambda a: v.expand_as(a) * a,
    "slice_step": lambda a: a[::2, 1::3] * 2, "slice_negative": lambda a: a[-3:, :-2] + 1,
    "select": lambda a: a[2] + a[:, 3].sum(), "none_ellipsis": lambda a: a[None, ..., 1] * 3,
    "narrow": lambda a: a.narrow(1, 2, 3) + 0, "select_fn": lambda a: a.select(1, -1) * 2,
    "slice_scatter": lambda a: torch.slice_scatter(a, a[:, 2:5] * 2, 1, 2, 5) + 1,
    "slice_scatter_negative": lambda a: torch.slice_scatter(a, a[-2:].sin(), 0, -2),
    "slice_scatter_whole": lambda a: torch.slice_scatter(a, a * 3, 1),
    "contiguous_t": lambda a: a.t().contiguous(), "clone": lambda a: a.clone(),
    "return_input_view": lambda a: a.t(), "return_input": lambda a: (a, a + 1),
    "split": lambda a: (lambda p: (p[0] * 2, p[2] + p[0][:, :2]))(a.split(3, 1)),
    "split_views": lambda a: torch.split(a, [1, 5], dim=0),
    "split_with_sizes": lambda a: a.split_with_sizes([2, 6], -1)[1] + 1,
    "chunk": lambda a: (lambda c: (c[0].sum(0), c[2] - c[1]))(a.chunk(5)),
    "unbind": lambda a: (lambda r: r[0] * r[7])(a.unbind(1)),
    "T": lambda a: a.T * 2, "mT": lambda a: a.unsqueeze(0).mT + 1,
}  # fmt: skip

# Pieces torch refuses: the same error comes out.
PIECES_ERRORS = {
    "split_sizes_short": lambda a: a.split([2, 2]),
    "split_negative": lambda a: a.split(-1, 1),
    "chunk_zero": lambda a: a.chunk(0),
    "unbind_0d": lambda a: a.sum().unbind(),
    "split_dim": lambda a: a.split(2, 2),
    "mT_of_a_vector": lambda a: a[0].mT,
}

# The externs a case of the tables above has besides the op it tests.
OTHER_EXTERNS: dict = {}

EXTERNS = {
    "matmul": lambda a: a @ a.t(), "linear_relu": lambda a: F.relu(F.linear(a, a) + 1),
    "sort": lambda a: a.sort(1).values.exp(), "many_cat": lambda a: torch.cat([a] * 9),
    "cat_promotes": lambda a: torch.cat([a, (a * 4).long()], -1) + 1,
    "long_cumsum": lambda a: a.reshape(-1).repeat(30).cumsum(0),
    "adaptive_pool_indices": lambda a: F.adaptive_max_pool2d(a[None], 3, return_indices=True),
    "list_index": lambda a: a[[0, 2]],
    "slice_scatter_step": lambda a: torch.slice_scatter(a, a[:, ::2] * 2, 1, 0, None, 2),
    "batch_norm_training": lambda a: F.batch_norm(a, None, None, training=True),
}  # fmt: skip

# Ops that make or move values (cases of stage 6 too).
img = torch.randn(2, 3, 7, 9)
MOVES = {
    "cat": lambda a: torch.cat([a, a * 2]).sin(),
    "cat_dim1": lambda a: torch.cat([a.exp(), a], 1),
    "cat_legacy_empty": lambda a: torch.cat([a.new_zeros(0), a, a], -2),
    "cat_three": lambda a: torch.cat([a[:2], a, a[4:] * 2]),
    "stack": lambda a: torch.stack([a, a + 1]),
    "stack_last": lambda a: torch.stack([a, -a], -1),
    "flip": lambda a: a.flip(0) * 2,
    "flip_both": lambda a: torch.flip(a, (0, -1)).t(),
    "repeat": lambda a: a.repeat(2, 3),
    "repeat_more_dims": lambda a: a[0].repeat(3, 1, 2) + 1,
    "arange": lambda a: a + torch.arange(a.shape[1], device=a.device),
    "arange_float": lambda a: a[:, :5] * torch.arange(0.5, a.shape[1], 1.5, device=a.device),
    "arange_step": lambda a: torch.arange(1, a.shape[0] * 5, 3, device=a.device) * 2,
    "zeros": lambda a: a + torch.zeros(a.shape[1], device=a.device),
    "ones": lambda a: torch.ones(a.shape, dtype=torch.int64, device=a.device) + a,
    "full": lambda a: torch.full((a.shape[0], 1), 2.5, device=a.device) * a,
    "zeros_like": lambda a: torch.zeros_like(a) - a,
    "ones_like": lambda a: torch.ones_like(a) + a,
    "full_like": lambda a: torch.full_like(a, 7, dtype=torch.int32) * 2,
    "new_zeros": lambda a: a.new_zeros(a.shape[1]) + a,
    "new_full": lambda a: a.new_full((3,), 2.0),
    "size_arithmetic": lambda a: a.view(a.size(0) * 2, -1) + a.shape[1],
    "ones_of_size": lambda a: a + torch.ones(8, device=a.device),
}

POINTWISE_MORE = {
    "hardswish": F.hardswish,
    "nan_to_num": lambda a: (a / (a > 0)).nan_to_num(),
    "nan_to_num_given": lambda a: torch.nan_to_num(a.log(), 1.0, 2.0, -3.0),
    "nan_to_num_int": lambda a: (a * 3).long().nan_to_num(),
    "cumsum": lambda a: a.cumsum(0) * 2,
    "cumsum_last": lambda a: torch.cumsum(a, -1),
    "cumsum_int": lambda a: (a > 0).cumsum(1),
    "cumprod": lambda a: a.cumprod(1),
    "masked_fill_tensor": lambda a: a.masked_fill(a > 0, a[0, 0]),
}

NORMS = {
    "var_mean": lambda a: torch.var_mean(a, 1),
    "std_mean": lambda a: torch.std_mean(a, 0, True),
    "var_mean_all": lambda a: torch.var_mean(a, correction=0),
    "batch_norm": lambda a: F.batch_norm(a, a[0, :, 0, 0], a[1, :, 1, 1].abs(), a[0, :, 1, 2]),
    "batch_norm_affine": lambda a: F.batch_norm(
        a, a[0, :, 0, 0], a[1, :, 1, 1].abs() + 0.5, a[0, :, 1, 2], a[1, :, 2, 3], eps=1e-3
    ),
    "batch_norm_2d": lambda a: F.batch_norm(a[0, 0], a[1, 0, 0], a[1, 1, 0].abs()),
    "group_norm": lambda a: F.group_norm(a, 3, a[0, :, 0, 0], a[1, :, 0, 0]),
    "group_norm_one": lambda a: F.group_norm(a, 1),
    "group_norm_3d": lambda a: F.group_norm(a[0], 1),
    "rms_norm": lambda a: F.rms_norm(a, (9,), a[0, 0, 0]),
    "rms_norm_2d": lambda a: F.rms_norm(a, (7, 9)),
    "rms_by_hand": lambda a: a * torch.rsqrt(a.pow(2).mean(-1, keepdim=True) + 1e-6) * a[0, 0, 0],
    "layer_norm_4d": lambda a: F.layer_norm(a, (9,), a[0, 0, 0]),
}

POOLS = {
    "max_pool": lambda a: F.max_pool2d(a, 2),
    "max_pool_pad": lambda a: F.max_pool2d(a, 3, 2, 1),
    "max_pool_ceil": lambda a: F.max_pool2d(a, (2, 3), ceil_mode=True),
    "max_pool_dilation": lambda a: F.max_pool2d(a, 2, 1, 1, dilation=2),
    "max_pool_3d_input": lambda a: F.max_pool2d(a[0], 3, 1, 1).relu(),
    "max_pool_wide": lambda a: F.max_pool2d(a, (6, 5), 1, (3, 2)),
    "avg_pool": lambda a: F.avg_pool2d(a, 2),
    "avg_pool_pad": lambda a: F.avg_pool2d(a, 3, 2, 1),
    "avg_pool_no_pad_count": lambda a: F.avg_pool2d(a, 3, 2, 1, True, False),
    "avg_pool_divisor": lambda a: F.avg_pool2d(a, (3, 2), divisor_override=5),
    "avg_pool_ceil": lambda a: F.avg_pool2d(a, 2, ceil_mode=True),
    "adaptive_pool": lambda a: F.adaptive_avg_pool2d(a, (1, 1)),
    "adaptive_pool_even": lambda a: F.adaptive_avg_pool2d(a, (7, 3)),
    "adaptive_pool_none": lambda a: F.adaptive_avg_pool2d(a, (None, 1)).flatten(1),
    # windows of more than one size: their bounds are computed per output
    "adaptive_pool_uneven": lambda a: F.adaptive_avg_pool2d(a[0], (4, 3)),
    "adaptive_pool_larger": lambda a: F.adaptive_avg_pool2d(a, (10, 12)),
    "adaptive_max_pool": lambda a: F.adaptive_max_pool2d(a, (7, 3)),
    "adaptive_max_pool_uneven": lambda a: F.adaptive_max_pool2d(a, (4, 5)),
    "adaptive_pool_1d": lambda a: F.adaptive_avg_pool1d(a[0], 4),
    "adaptive_max_pool_1d": lambda a: F.adaptive_max_pool1d(a[0], 5),
    "adaptive_pool_3d": lambda a: F.adaptive_avg_pool3d(a, (2, 4, 3)),
    "adaptive_max_pool_3d": lambda a: F.adaptive_max_pool3d(a.exp(), (3, 4, 5)),
    "channels_last": lambda a: F.max_pool2d(a.contiguous(memory_format=torch.channels_last), 2),
}

# Reads at positions held in tensors; `check_indices` is the call into torch that checks them.
rows = torch.tensor([5, -1, 0, 2])
INDEXING = {
    "embedding": (lambda i, w: F.embedding(i, w) * 2, [torch.tensor([[0, 5], [1, 1]]), x]),
    "embedding_int32": (
        lambda i, w: F.embedding(i, w),
        [torch.tensor([3, 0], dtype=torch.int32), x],
    ),
    "index_select": (lambda a, i: a.index_select(1, i) + 1, [x, torch.tensor([7, 0, 3])]),
    "index_select_0": (lambda a, i: torch.index_select(a.exp(), 0, i), [x, torch.tensor([5, 5])]),
    "gather": (lambda a, i: a.gather(1, i), [x, torch.randint(0, 8, (6, 3))]),
    "gather_0": (lambda a, i: torch.gather(a, 0, i) * a[:2, :3], [x, torch.randint(0, 6, (2, 3))]),
    "gather_argmax": (lambda a: a.gather(1, a.argmax(1, keepdim=True)), [x]),
    "index": (lambda a, i: a[i] + 1, [x, rows]),
    "index_second": (lambda a, i: a[:, i.view(2, 2)], [x, rows]),
    "index_two": (lambda a, i, j: a[i, j], [x, rows, torch.tensor([[0], [7]])]),
    "index_apart": (lambda a, i: a[i[:2], :, i[2:]], [torch.randn(6, 4, 3), rows]),
    "index_none": (lambda a, i: a[None, 1:, i] * 2, [x, rows]),
    "index_int": (lambda a, i: a[0, :, i], [torch.randn(2, 3, 6), rows]),
    "index_ellipsis": (lambda a, i: a[..., i], [torch.randn(2, 3, 6), rows]),
}
INDEX_ERRORS = {
    "embedding": (lambda i, w: F.embedding(i, w), [torch.tensor([1, 6]), x]),
    "embedding_negative": (lambda i, w: F.embedding(i, w), [torch.tensor([-1]), x]),
    "index_select_0": (lambda a, i: a.index_select(0, i), [x, torch.tensor([6])]),
    "index_select_1": (lambda a, i: a.index_select(1, i), [x, torch.tensor([-1])]),
    "gather": (lambda a, i: a.gather(1, i), [x, torch.tensor([[8]])]),
    "index": (lambda a, i: a[i], [x, torch.tensor([-7])]),
    "index_second": (lambda a, i: a[:, i], [x, torch.tensor([8])]),
}

# float16 and bfloat16 are computed in float32 and rounded as they are stored; int8 and
# uint8 wrap around, and promote as torch does. (Inputs are rounded as eager's are.)
h, b = torch.randn(6, 8).half(), torch.randn(6, 8).bfloat16()
i8 = torch.randint(-128, 128, (6, 8), dtype=torch.int8)
u8 = torch.randint(0, 256, (6, 8), dtype=torch.uint8)
DTYPES = {
    "half_chain": (lambda a: a.sin() * 2 + 1, [h]),
    "bfloat16_chain": (lambda a: a.exp() - a, [b]),
    "half_mean": (lambda a: (a * 1000).mean(), [h]),
    "bfloat16_sum": (lambda a: a.sum(1), [b]),
    "half_softmax": (lambda a: a.softmax(-1), [h]),
    "bfloat16_log_softmax": (lambda a: a.log_softmax(0), [b]),
    "half_layer_norm": (lambda a: F.layer_norm(a, (8,)), [h]),
    "bfloat16_var": (lambda a: a.var(1), [b]),
    "half_to_float": (lambda a: a.float() + 1, [h]),
    "to_half": (lambda a: (a * 3).half(), [x]),
    "bfloat16_to_half": (lambda a: a.half(), [b]),
    "half_and_float": (lambda a, c: a + c, [h, x]),
    "half_gelu": (F.gelu, [h]),
    "bfloat16_silu": (F.silu, [b]),
    "half_amax": (lambda a: a.amax(0), [h]),
    "bfloat16_argmax": (lambda a: a.argmax(1), [b]),
    "half_where": (lambda a: torch.where(a > 0, a, 0.1), [h]),
    "bfloat16_masked_fill": (lambda a: a.masked_fill(a < 0, -3.0), [b]),
    "half_pool": (lambda a: F.max_pool2d(a, 2), [img.half()]),
    "bfloat16_batch_norm": (
        lambda a: F.batch_norm(a, a[0, :, 0, 0], a[1, :, 0, 0].abs()),
        [img.bfloat16()],
    ),
    "half_cat": (lambda a, c: torch.cat([a, c.half()]), [h, x]),
    "half_embedding": (lambda i, w: F.embedding(i, w), [rows.abs(), h]),
    "half_nan_to_num": (lambda a: (a / 0).nan_to_num(), [h]),
    "half_cumsum": (lambda a: a.cumsum(1), [h]),
    "bfloat16_rms_norm": (lambda a: F.rms_norm(a, (8,)), [b]),
    "int8_add": (lambda a: a + a, [i8]),
    "int8_mul": (lambda a: a * 3 - 100, [i8]),
    "uint8_add_wraps": (lambda a: a + 300, [u8]),
    "uint8_compare_wraps": (lambda a: a < 300, [u8]),
    "uint8_neg": (lambda a: -a, [u8]),
    "int8_abs": (torch.abs, [i8]),
    "int8_relu": (torch.relu, [i8]),
    "int8_plus_uint8": (lambda a, c: a + c, [i8, u8]),
    "uint8_div": (lambda a, c: a / c, [u8, u8 | 1]),
    "int8_sum": (lambda a: a.sum(0), [i8]),
    "uint8_amax": (lambda a: a.amax(1), [u8]),
    "int8_argmin": (lambda a: a.argmin(0), [i8]),
    "float_to_uint8": (lambda a: (a * 100).byte(), [x.abs()]),
    "uint8_to_float": (lambda a: a.float() / 255, [u8]),
    "int8_cumsum": (lambda a: a.cumsum(1), [i8]),
    "uint8_maximum": (lambda a, c: torch.maximum(a, c), [u8, u8.flip(0)]),
    "int16": (lambda a: a.short() * 300, [i8]),
    "uint8_pool": (lambda a: F.max_pool2d(a[None], 2), [u8]),
}


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


@pytest.mark.parametrize("name", PIECES_ERRORS)
def test_pieces_torch_refuses_raise_as_in_eager(name):
    assert_same_as_eager(compile_traced(PIECES_ERRORS[name]), PIECES_ERRORS[name], x)


@pytest.mark.parametrize("name", EXTERNS)
def test_extern(name):
    check_traced(EXTERNS[name], x)


@pytest.mark.parametrize("name", MOVES)
def test_moves(name):
    check_lowered(MOVES[name], x)


@pytest.mark.parametrize("name", POINTWISE_MORE)
def test_pointwise_more(name):
    check_lowered(POINTWISE_MORE[name], x)


@pytest.mark.parametrize("name", NORMS)
def test_norms(name):
    check_lowered(NORMS[name], img)


@pytest.mark.parametrize("name", POOLS)
def test_pools(name):
    check_lowered(POOLS[name], img)


@pytest.mark.parametrize("name", INDEXING)
def test_indexing(name):
    fn, args = INDEXING[name]
    check_lowered(fn, *args, externs=("check_indices",))


@pytest.mark.parametrize("name", INDEX_ERRORS)
def test_positions_out_of_range_raise_as_in_eager(name):
    fn, args = INDEX_ERRORS[name]
    assert_same_as_eager(compile_traced(fn), fn, *args)


@pytest.mark.parametrize("name", DTYPES)
def test_dtypes(name):
    fn, args = DTYPES[name]
    check_lowered(fn, *args, externs=("check_indices",))


# The exponents eager's pow special-cases, in the half dtypes: its kernels compute some of
# them as products in the tensor's dtype (the square rounded before the next step), others
# in float (`power` in lowerings/pointwise.py says which). Not float16 by 0.5: the CPU's
# kernel takes a pow for it (SLEEF's, within an ulp of the root), where a kernel takes sqrt.
POWERS = [(d, e) for d in (torch.bfloat16, torch.float16) for e in (2, 3, -2, 0.5, -0.5, -1)]
POWERS.remove((torch.float16, 0.5))


@pytest.mark.parametrize("dtype, exponent", POWERS)
def test_pow_rounds_where_eagers_kernel_rounds(dtype, exponent):
    """GPT-2's tanh GELU cubes its input. In bfloat16 eager rounds the square before it
    multiplies again; a kernel that did not disagreed with eager on a fifth of the cubes,
    and on some GELUs near zero by half their value."""
    a = (torch.rand(4096) * 4 + 0.25).to(dtype)
    check_lowered(lambda a: a**exponent, a, rtol=0, atol=0)


def test_a_pools_computed_input_is_stored_once_not_recomputed_per_window():
    """ResNet's stem: batch norm and ReLU, then a 3x3 max pool. Inlined into the pool, the
    norm ran for each of the 9 window elements of every output (77 of ResNet's 200 ms)."""

    def stem(a, mean, var):
        return F.max_pool2d(
            torch.relu((a - mean[:, None, None]) / (var[:, None, None] + 1)), 3, 2, 1
        )

    args = [torch.randn(2, 4, 8, 8), torch.randn(4), torch.rand(4)]
    graph = GraphLowering(torch.fx.symbolic_trace(stem), args).run()
    pool = graph.buffers[-1]
    assert "truediv" not in str(pool.data)  # it loads the stored ReLU, computes nothing again
    check_lowered(stem, *args)


def test_hand_written_rms_norm_is_one_kernel():
    compiled = check_lowered(NORMS["rms_by_hand"], img)
    assert len(compiled.last.kernel_names) == 1, compiled.last.kernel_names


class BasicBlock(torch.nn.Module):
    """torchvision's ResNet block (torchvision is not installed here), with a pooled head."""

    def __init__(self, width=8):
        super().__init__()
        conv = functools.partial(torch.nn.Conv2d, width, width, 3, 1, 1, bias=False)
        self.conv1, self.bn1, self.conv2, self.bn2 = (
            conv(), torch.nn.BatchNorm2d(width), conv(), torch.nn.BatchNorm2d(width),
        )  # fmt: skip
        self.relu = torch.nn.ReLU(inplace=True)
        self.pool = torch.nn.MaxPool2d(3, 2, 1)
        for bn in (self.bn1, self.bn2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        x = self.pool(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += x
        return F.adaptive_avg_pool2d(self.relu(out), (1, 1)).flatten(1)


def test_a_resnet_block_calls_torch_for_its_convolutions_only():
    block = BasicBlock().eval()
    with torch.no_grad():
        (compiled,) = check_torch_compile(block, torch.randn(2, 8, 10, 10))
    assert_lowered(compiled, externs=("conv2d",))


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


def test_view_and_reshape_and_to_are_lowered_each_by_its_own_function():
    """`view` must share its input's memory (torch decides), `reshape` may copy; `to` takes
    `copy` by position. Each lowering is told what differs, not the op being lowered."""
    x = torch.randn(4, 5).t()  # not contiguous: viewable as (5, 2, 2), not as (20,)

    def buffers(fn):
        return GraphLowering(torch.fx.symbolic_trace(fn), [x]).run().buffers

    assert buffers(lambda a: a.view(5, 2, 2)) == []  # x's memory, at torch's strides
    assert buffers(lambda a: a.reshape(5, 2, 2)) == []  # torch's reshape is a view here too
    with pytest.raises(EagerOnly, match="view size is not compatible"):
        buffers(lambda a: a.view(20))  # torch raises; the graph runs in torch, which says so
    assert buffers(lambda a: a.reshape(20))[0].name == "buf0"  # a copy, in a kernel
    assert len(buffers(lambda a: a.to(torch.float32, False, True))) == 1  # copy=True
    assert buffers(lambda a: a.to(torch.float32)) == []  # x itself


@st.composite
def reshaped_steps(draw):
    """A value not yet in memory (a pointwise step of an input, with an operand broadcast
    over some of its dims), reshaped by merging or splitting dims, then another step."""
    shape = draw(st.lists(st.sampled_from([1, 2, 3, 4, 6]), min_size=1, max_size=4))
    broadcast = [draw(st.booleans()) for _ in shape]
    other_shape = [1 if b else s for s, b in zip(shape, broadcast, strict=True)]
    numel = math.prod(shape)
    divisors = [d for d in range(1, numel + 1) if numel % d == 0]
    new_shape = [draw(st.sampled_from(divisors))]
    new_shape.append(numel // new_shape[0])
    if draw(st.booleans()):
        new_shape = [numel]
    transposed = draw(st.booleans()) and len(shape) > 1  # an input read across its memory
    seed = draw(st.integers(0, 2**16))
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(shape[::-1] if transposed else shape, generator=gen)
    a = a.permute(*reversed(range(len(shape)))) if transposed else a
    return a, torch.randn(other_shape, generator=gen), tuple(new_shape)


@given(reshaped_steps())
def test_a_reshaped_value_not_in_memory_has_eagers_values(case):
    """views.reshaped_value computes a merge of dims without storing the value where every
    load reads the merged dims as one; a broadcast operand, or an input read transposed,
    must keep the value stored (or indexed right)."""
    a, other, new_shape = case

    def fn(x, y):
        return ((x * y).sin().reshape(new_shape) + 1).to(torch.bfloat16)

    check_traced(fn, a, other, atol=1e-2, rtol=1e-2)


def test_a_reshape_after_a_pointwise_step_fuses_into_its_reader():
    """GPT-2's GELU under autocast computes in float32, merges (batch, seq) with `view`, and
    casts for the product: one kernel, with no float32 buffer (stored, the value took a
    kernel of its own to write and another to cast)."""

    def fn(a):
        h = a.view(4, 8, 24)
        g = 0.5 * h * (1.0 + torch.tanh(0.79788 * (h + 0.044715 * torch.pow(h, 3.0))))
        return g.view(-1, 24).to(torch.bfloat16)

    lowered = GraphLowering(torch.fx.symbolic_trace(fn), [torch.randn(32, 24)]).run()
    assert [b.layout.dtype for b in lowered.buffers if not isinstance(b, InputBuffer)] == [
        torch.bfloat16
    ]
    check_traced(fn, torch.randn(32, 24), atol=1e-2, rtol=1e-2)


def test_a_reshape_of_a_value_that_reads_a_kernels_buffer_keeps_its_sizes():
    """An RMS norm viewed as (tokens, width) for a product: the normalised value reads the
    sum's buffer and fuses into the sum's kernel over (batch, seq); computed over the merged
    sizes, the scheduler refused that kernel ("iteration spaces differ"): two kernels."""
    w = torch.randn(24, 16)

    def fn(a):
        normed = a * torch.rsqrt(a.pow(2).mean(-1, keepdim=True) + 1e-6)
        return normed.view(-1, 24) @ w

    compiled = check_lowered(fn, torch.randn(4, 8, 24), externs=("matmul",), atol=1e-4, rtol=1e-4)
    assert compiled.last.wrapper_source.count("cpp_fused_") == 1
