"""Small programs in the style of torch's test_torchinductor.py: `common(fn, args)` compiles
`fn` with stage 5's backend through the frontend and compares it with eager.

`common` also checks that the compiler met no bug of its own: no `CompilerWarning` (stage 3
runs a frame eagerly after an internal error), no log line "a bug of minidynamo" (a
lowering that raised and called torch instead), and that each graph ran as our kernels,
with only the ops in `externs` left to torch (matmuls, convolutions, ops without a
lowering). Strict mode (tests/conftest.py) makes an internal error raise as well.
"""

import logging
import warnings

import pytest
import torch
import torch.nn.functional as F

import stage4_fx
from stage1_eval_frame import logs
from stage3_guards import CompilerWarning
from tests.oracle import assert_same_as_eager
from tests.stage5.helpers import KeepGraphs, assert_lowered

# name -> (function, arguments, ops that may call torch)
CASES: dict = {}


def case(*args, externs=()):
    """Register `fn` to run as `common(fn, args)`."""

    def register(fn):
        CASES[fn.__name__] = (fn, args, externs)
        return fn

    return register


class Records(logging.Handler):
    """Every message of a logger while it is attached, at every level."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def common(fn, args, externs=()):
    graphs = KeepGraphs()
    stage4_fx.reset()
    compiled = stage4_fx.compile(fn, backend=graphs)
    records, logger = Records(), logs.get_logger("kernels")
    logger.addHandler(records)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert_same_as_eager(compiled, fn, *args, captured=lambda: bool(graphs.graphs))
    finally:
        logger.removeHandler(records)
    ours = [str(w.message) for w in caught if issubclass(w.category, CompilerWarning)]
    assert not ours, ours
    bugs = [m for m in records.messages if "a bug of minidynamo" in m]
    assert not bugs, bugs
    for graph in graphs.graphs:
        assert_lowered(graph, externs)


@pytest.mark.parametrize("name", CASES)
def test_common(name):
    common(*CASES[name])


def randn(*size, dtype=torch.float32):
    return torch.randn(size).to(dtype)


image = randn(2, 4, 5, 5)
image_cl = image.to(memory_format=torch.channels_last)
weight = randn(6, 4, 3, 3)
depthwise = randn(4, 1, 3, 3)
matrix, other = randn(8, 8), randn(8, 8)
batch = randn(2, 3, 4)

# ----------------------------------------------------------------------------- pointwise


@case(randn(17))
def add_const(a):
    return a + 1, a - 2.5, 3 * a, a / 4


@case(matrix, randn(8))
def broadcast_add_mul(a, b):
    return a + b, a * b[:, None]


@case(randn(4, 8))
def activations(a):
    return a.sigmoid(), F.silu(a), F.gelu(a), F.gelu(a, approximate="tanh"), a.relu()


@case(randn(4, 8))
def more_activations(a):
    return F.leaky_relu(a, 0.2), F.hardswish(a), F.hardtanh(a), F.softplus(a, beta=2)


@case(randn(4, 8))
def transcendental(a):
    return a.exp(), a.abs().log1p(), a.expm1(), a.tanh(), a.erf(), a.abs().rsqrt()


@case(randn(4, 8), randn(4, 8))
def pow_and_square(a, b):
    return a**2, a.abs() ** 0.5, torch.pow(a.abs(), b), a.square(), a**-1


@case(randn(4, 8))
def clamp_bounds(a):
    return a.clamp(-0.5, 0.5), a.clamp(min=0), torch.clip(a, max=0.25)


@case(randn(4, 8), randn(8))
def clamp_tensor_bounds(a, b):
    return a.clamp(min=b), torch.clamp(a, max=b.abs())


@case(randn(4, 8), randn(4, 8))
def where_and_extremes(a, b):
    return torch.where(a > 0, a, 0.0), torch.maximum(a, b), torch.minimum(a, b)


@case(randn(4, 8), randn(4, 8))
def comparisons_and_logic(a, b):
    return (a > b) & (b > 0), ~(a < 0), torch.logical_xor(a > 0, b > 0), a.eq(b).any()


@case(torch.tensor([float("nan"), float("inf"), -float("inf"), 1.5]))
def nan_to_num_defaults(a):
    return torch.nan_to_num(a, nan=None), a.nan_to_num(posinf=None, neginf=None)


@case(torch.tensor([float("nan"), float("inf"), -float("inf"), 1.5], dtype=torch.float16))
def nan_to_num_half(a):
    return torch.nan_to_num(a, nan=None, posinf=None), torch.nan_to_num(a, 1.0, 2.0, -2.0)


@case(randn(4, 8) * 100)
def round_decimals(a):
    return torch.round(a, decimals=2), a.round(decimals=-1), a.round(), a.round(decimals=0)


@case(randn(4, 8) * 100)
def rounding(a):
    return a.floor(), a.ceil(), a.trunc(), torch.remainder(a, 3.0)


@case(torch.randint(-5, 5, (4, 8)))
def integer_arithmetic(a):
    return a * 3 + 1, a.abs(), a.floor(), a.float() / 2, (a > 0).sum()


@case(randn(4, 8, dtype=torch.float16), randn(4, 8))
def mixed_dtypes(a, b):
    return a + b, a * 2, (a.float() + 1).half()


@case(randn(4, 8, dtype=torch.bfloat16))
def bfloat16_pointwise(a):
    return a.sin() * 2, a.sigmoid(), a + 1


@case(randn(4, 8), randn(4, 8))
def input_keyword(a, b):
    return torch.sin(input=a), torch.add(input=a, other=b, alpha=2), torch.mul(input=a, other=3)


@case(randn(4, 8), randn(4, 8))
def other_keyword(a, b):
    return torch.sub(a, other=b), torch.maximum(a, other=b), torch.where(a > 0, input=a, other=b)


# ----------------------------------------------------------------------------- reductions


@case(randn(4, 8, 3))
def sums(a):
    return a.sum(), a.sum(1), a.sum((0, 2), keepdim=True), a.sum(-1, dtype=torch.float64)


@case(randn(4, 8, 3))
def means_and_products(a):
    return a.mean(0), torch.mean(a, (1, 2)), a.prod(1), a.mean(dim=-1, keepdim=True)


@case(randn(4, 8, 3))
def amax_amin_tuple_dims(a):
    return torch.amax(a, (0, 2)), a.amin((1, -1), keepdim=True), torch.amin(input=a, dim=(0, 1))


@case(randn(4, 8, 3))
def argmax_input_keyword(a):
    return torch.argmax(input=a), torch.argmax(a, dim=1, keepdim=True), a.argmin(dim=-1)


@case(randn(4, 8, 3))
def argmin_input_keyword(a):
    return torch.argmin(input=a, dim=0), torch.argmin(input=a), torch.argmax(a, keepdim=True)


@case(randn(4, 8))
def max_min_with_indices(a):
    values, indices = a.max(1)
    smallest = torch.min(input=a, dim=0, keepdim=True)
    return values, indices, smallest.values, smallest.indices, a.max()


@case(randn(4, 8, 3))
def variance(a):
    return a.var(1), a.std(0, correction=0), torch.var_mean(a, (0, 2)), a.std(unbiased=False)


@case(randn(4, 8) > 0)
def any_all(a):
    return a.any(), a.all(1), torch.any(input=a, dim=0)


@case(randn(4, 8))
def softmaxes(a):
    return a.softmax(-1), F.log_softmax(a, dim=0), torch.logsumexp(a, 1)


@case(randn(4, 8))
def cumulative(a):
    return a.cumsum(1), torch.cumprod(a, dim=0)


@case(randn(4, 8, 6), randn(6), randn(6))
def layer_norm(a, w, b):
    return F.layer_norm(a, (6,), w, b), F.layer_norm(a, (8, 6))


@case(randn(2, 6, 5, 5), randn(6), randn(6))
def group_norm(a, w, b):
    return F.group_norm(a, 3, w, b), F.group_norm(a, 2)


@case(randn(2, 6, 5, 5), randn(6), randn(6).abs() + 0.5, randn(6), randn(6))
def batch_norm_inference(a, mean, var, w, b):
    return F.batch_norm(a, mean, var, w, b, training=False)


# ----------------------------------------------------------------------------- views


@case(batch)
def permutes(a):
    return a.permute(2, 0, 1) + 1, a.transpose(0, 1).contiguous(), a.mT * 2


@case(batch)
def view_reshape(a):
    return a.view(6, 4) * 2, a.reshape(-1) + 1, (a * 1).view(2, 12), a.flatten(1)


@case(randn(1, 3, 1, 2))
def squeezes(a):
    return a.squeeze(0, 2) * 1, torch.squeeze(a, (0, 2)), a.squeeze((0, 1)), a.squeeze(-2)


@case(randn(1, 3, 1, 2))
def squeeze_all_and_unsqueeze(a):
    return a.squeeze() + 1, a.unsqueeze(0) * 2, torch.squeeze(a, dim=(-4, -2)) * 3


@case(randn(3, 1))
def expands(a):
    return a.expand(3, 4) + 1, a.expand_as(matrix[:3]) * 2, a.expand(2, -1, 5).sum()


@case(randn(6, 8))
def slicing(a):
    return a[1:4, ::2] + 1, a[..., -1] * 2, a[None, 2:, 3] - 1, a[::3, 1:-1:2].sum()


@case(randn(6, 8))
def select_narrow(a):
    return a.select(1, 2) * 2, torch.narrow(a, 0, 1, 3) + 1, a[-1]


@case(randn(6, 8))
def pieces(a):
    first, *rest = a.split(2)
    left, right = a.chunk(2, dim=1)
    return first * 2, rest[-1] + 1, left - right, sum(a.unbind(1))


@case(randn(2, 3), randn(2, 5), randn(2, 3))
def cat_stack(a, b, c):
    return torch.cat([a, b], 1), torch.cat([a, c]), torch.stack([a, c], 1) + 1


@case(randn(4, 5))
def flip_repeat(a):
    return a.flip(0) + 1, a.flip(0, 1), a.repeat(2, 3), a[:, :2].repeat(2, 1, 1)


@case(randn(2, 12))
def unflatten(a):
    return a.unflatten(1, (3, 4)) * 2, (a + 1).view(2, 3, 4).transpose(1, 2)


@case(randn(4, 6), externs=("unfold",))
def unfold_windows(a):
    return (a * 2).unfold(1, 3, 1).sum(-1), a.unfold(0, 2, 2) + 1


@case(randn(4, 8), externs=("view",))
def view_as_another_dtype(a):
    return (a + 1).view(torch.int32) + 0, a.t().contiguous().view(torch.int16) * 1


@case(randn(4, 8), externs=("as_strided",))
def as_strided_of_computed(a):
    return torch.as_strided(a * 2, (4, 4), (1, 4)) + 0, (a + 1).t().as_strided((2,), (3,), 1) * 1


# ----------------------------------------------------------------------------- layouts


@case(image_cl)
def channels_last_pointwise(a):
    return a.sin() + 1, a.sum(1), a * image


@case(image)
def to_channels_last(a):
    return (a * 2).contiguous(memory_format=torch.channels_last), a.clone(
        memory_format=torch.channels_last
    )


@case(image_cl)
def channels_last_to_contiguous(a):
    return a.contiguous() + 0, (a + 1).contiguous(), a.permute(0, 2, 3, 1).reshape(-1, 4)


@case(batch)
def permute_contiguous_view(a):
    return (a * 2).permute(0, 2, 1).contiguous().view(2, 12), a.transpose(1, 2).reshape(8, 3)


@case(batch)
def stride_questions(a):
    y = a.transpose(1, 2) * 2
    return y + torch.tensor(y.stride()[0]), y.is_contiguous(), y.stride()


@case(image, externs=("conv2d", "as_strided"))
def as_strided_of_a_convolution(a):
    return torch.as_strided(F.conv2d(a, weight), (4, 6), (6, 1)).clone()


@case(image, externs=("conv2d", "view"))
def view_of_a_convolution(a):
    y = F.conv2d(a, weight, padding=1)
    return y.view(2, 6, -1).sum(-1), y.view(torch.int16).view(torch.float32) * 1


@case(image, externs=("conv2d", "as_strided"))
def convolution_read_by_strides_after_views(a):
    y = F.conv2d(a, weight)
    return y[:, 1:].as_strided((3,), (2,), 1) * 1, y.transpose(2, 3).as_strided((4,), (1,))


# ----------------------------------------------------------------------------- indexing


@case(randn(6, 8), torch.tensor([0, 5, 2, 2]), externs=("check_indices",))
def index_with_tensor(a, i):
    return a[i] + 1, a[:, i] * 2, a.index_select(1, i), a[i, i]


@case(randn(6, 8), torch.randint(0, 8, (6, 3)), externs=("check_indices",))
def gather_rows(a, i):
    return a.gather(1, i) * 2, torch.gather(a, 1, i).sum()


@case(torch.randint(0, 10, (3, 5)), randn(10, 4), externs=("check_indices",))
def embedding(ids, table):
    return F.embedding(ids, table) * 2


@case(randn(6, 8))
def masked_fill(a):
    return a.masked_fill(a > 0, 0.5), a.masked_fill(mask=a < -1, value=-1.0)


@case(randn(6, 8), torch.tensor([1, 3]), externs=("check_indices", "setitem_on_a_copy"))
def index_put(a, i):
    a = a.clone()
    a[i] = 0.0
    a[:, 2] += 1
    return a


@case(randn(6, 8))
def add_into_a_slice(a):
    """`b[i] += v` is an add into the view `b[i]`, then `b[i] = b[i]`: no copy of `b`."""
    b = a * 2
    b[1:3, ::2] += 1
    a[:, 2] *= b[:, 0]
    return b


@case(randn(6, 8), externs=("setitem_on_a_copy",))  # a store into a slice: torch's
def setitem_of_an_input(a):
    a[1:3] = 2.0
    a[:, -1].mul_(3)
    return a.sum(0)


# ----------------------------------------------------------------------------- convolutions


@case(image, externs=("conv2d",))
def conv_relu(a):
    return F.conv2d(a, weight, padding=1).relu()


@case(image, externs=("conv2d",))
def conv_stride_groups(a):
    return F.conv2d(a, weight, stride=2), F.conv2d(a, depthwise, groups=4, padding=1) * 2


@case(image, randn(6), randn(6), randn(6).abs() + 0.5, externs=("conv2d",))
def conv_batch_norm_relu(a, mean, w, var):
    y = F.conv2d(a, weight, padding=1)
    return F.batch_norm(y, mean, var, w, None, training=False).relu()


@case(image, externs=("conv2d",))
def conv_residual(a):
    y = F.conv2d(a, weight[:4, :], padding=1)
    return (F.conv2d(y.relu(), weight[:4, :], padding=1) + a).relu()


@case(image_cl, externs=("conv2d",))
def conv_of_channels_last(a):
    return F.conv2d(a, weight) + 1


@case(image_cl, randn(6), externs=("conv2d",))
def conv_by_keywords(a, b):
    y = F.conv2d(input=a, weight=weight, bias=b, padding=1)  # channels-last, as eager's
    return y, F.relu(input=y * 2, inplace=True)


@case(image)
def pools(a):
    return F.max_pool2d(a, 2), F.avg_pool2d(a, 3, 1, 1), F.adaptive_avg_pool2d(a, 1)


@case(image, externs=("conv2d",))
def conv_pool_flatten(a):
    y = F.max_pool2d(F.conv2d(a, weight).relu(), 2)
    return F.adaptive_avg_pool2d(y, 1).flatten(1)


# ----------------------------------------------------------------------------- products


@case(randn(4, 8), randn(6, 8), randn(6), externs=("addmm",))
def linear_relu(a, w, b):
    return F.linear(a, w, b).relu()


@case(batch, randn(2, 4, 5), externs=("bmm", "matmul"))
def batched_products(a, b):
    return torch.bmm(a, b) * 2, (a @ b).softmax(-1)


@case(randn(2, 2, 6, 4), randn(2, 2, 6, 4), randn(2, 2, 6, 4), externs=("matmul",))
def attention(q, k, v):
    scores = (q @ k.transpose(-1, -2)) / 2.0
    return scores.softmax(-1) @ v
