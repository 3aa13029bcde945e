"""NaN, ±inf, ±0.0, denormals and huge values through every float lowering, against eager.

The ops come in three groups, each compiled once per dtype as one graph that returns
every op's result (so a session compiles six graphs per backend, whatever hypothesis
draws): `UNARY` on a vector, `BINARY` on a column and a row (broadcasting gives every
pair of their values), `REDUCTIONS` on a matrix, over its rows unless named otherwise.
An `Op` compares exactly when torch's result is one correctly rounded operation (or
none), with `assert_close`'s defaults otherwise, and the sign of zeros too (which
`assert_close` does not).

Where eager's own answer depends on how it runs (one element or many, the length of a
row, the order in which its vectorized loop adds), `Op.eager_differs` names the
elements it cannot decide, with the evidence; they are left out for that op only.
"""

import dataclasses
import functools
import itertools
import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from hypothesis import strategies as st

from stage5_inductor_cpp.lowering import LOWERINGS
from tests.stage5.helpers import as_python_function, assert_lowered

INF, NAN = math.inf, math.nan
SPECIAL = {
    torch.float32: (NAN, INF, -INF, 0.0, -0.0, 1e-40, -1e-40, 3e38, -3e38,
                    1.0, -1.0, 0.5, -2.5, 3.0, 100.0, -100.0),
    torch.float64: (NAN, INF, -INF, 0.0, -0.0, 1e-310, -1e-310, 1.7e308, -1.7e308,
                    1.0, -1.0, 0.5, -2.5, 3.0, 1000.0, -1000.0),
}  # fmt: skip
N = 16  # values per vector: a binary op sees N * N pairs
ROWS, COLUMNS = N, 5


# Values of few significant bits (as programs.py's): sums of them are exact in any order.
FEW_BITS = st.integers(-64, 64).map(lambda k: k / 8)


def values(dtype, elementwise: bool) -> st.SearchStrategy:
    """One element: a special value, or any float of `dtype` for elementwise ops (hypothesis
    favours the odd ones), one of few bits for reductions (any floats would make sums whose
    rounding depends on the order: [1e10, 1, -1e10])."""
    width = 32 if dtype == torch.float32 else 64
    other = st.floats(width=width) if elementwise else FEW_BITS
    return st.one_of(st.sampled_from(SPECIAL[dtype]), other)


def inputs(group: str, dtype) -> st.SearchStrategy:
    """The group's input tensors, of its fixed shapes."""
    elements = values(dtype, elementwise=group != "reductions")
    return st.tuples(
        *[
            st.lists(elements, min_size=math.prod(shape), max_size=math.prod(shape)).map(
                lambda xs, shape=shape: torch.tensor(xs, dtype=dtype).reshape(shape)
            )
            for shape in GROUPS[group][1]
        ]
    )


@dataclasses.dataclass(frozen=True)
class Op:
    """One op under test: `fn(*inputs)`; `exact`: compare bit for bit (NaN with NaN);
    `eager_differs(*inputs)`: a mask of the results where eager disagrees with itself;
    `signed_zeros`: the sign of a zero result is the op's, not its rounding's."""

    fn: Callable
    exact: bool = False
    eager_differs: Callable | None = None
    signed_zeros: bool = True  # compare the sign of zero results


# ----------------------------------------------------------------------------- where eager differs


def huge_positive_gelu(x):
    """Exact gelu of float32: oneDNN (contiguous tensors of more than one element, mkldnn on)
    computes nan at +inf and inf above ~1.7e38; torch's own kernel, which runs one element,
    strided tensors, float64 and `torch.backends.mkldnn.flags(enabled=False)`, gives inf and
    x: `F.gelu(torch.tensor([inf, 3e38, 0]))` is [nan, inf, 0], `F.gelu(torch.tensor([inf]))`
    is [inf]. Our kernels compute torch's formula, `x * 0.5 * (1 + erf(x / sqrt(2)))`."""
    if x.dtype != torch.float32:
        return torch.zeros_like(x, dtype=torch.bool)
    return x > torch.finfo(torch.float32).max / 2


def quotient_overflows(a, b):
    """remainder(a, b) where a / b overflows: torch's vectorized fmod divides and gives nan,
    its scalar loop (one element, strided tensors) gives the exact fmod, as std::fmod does:
    `torch.tensor([1.7e308] * 40) % 0.5` is nan, `torch.tensor([1.7e308]) % 0.5` is 0."""
    return torch.isinf(a / b) & torch.isfinite(a) & (b != 0)


def zeros_of_opposite_signs(a, b):
    """maximum(0.0, -0.0) and the like: either zero is right, and eager's pick depends on the
    path. On the CPU `torch.maximum(torch.zeros(n), -torch.zeros(n))` is 0.0 for n = 3 and
    -0.0 for n = 16 (its vector loop), CUDA picks otherwise again; clamp by a tensor too."""
    return (a == 0) & (b == 0) & (a.signbit() != b.signbit())


def _same(a, b):
    """Equal as `assert_same_values` sees it: close, NaN with NaN, zeros of one sign."""
    return torch.isclose(a, b, equal_nan=True) & ((a != 0) | (a.signbit() == b.signbit()))


def order_dependent_sum(rows):
    """Rows whose float sum depends on the order of the additions, which for eager depends on
    where the values sit in its vector lanes (40 zeros with 3e38 at 0 and 1 sum to inf with
    -3e38 at 2, to 3e38 with it at 8); we add in double (C++) or in a tree (Triton):
    - the positive (or negative) values add up past the largest float, beside a value of
      the other sign: the sum may overflow on the way or not;
    - large values of both signs: they cancel, and what they absorbed of the small ones
      first depends on the order (1 + 3e38 - 3e38 + 3 is 3 left to right, 0 in pairs)."""
    finite = torch.isfinite(rows)
    half = torch.where(finite, rows, 0).double() / 2
    limit = torch.finfo(rows.dtype).max / 2
    positive, negative = half.clamp(min=0).sum(-1), half.clamp(max=0).sum(-1)
    overflows = ((positive > limit) & (rows < 0).any(-1)) | (
        (negative < -limit) & (rows > 0).any(-1)
    )
    large = finite & (rows.abs() * torch.finfo(rows.dtype).eps > 0.25)  # absorbs 1/8
    cancel = (large & (rows > 0)).any(-1) & (large & (rows < 0)).any(-1)
    return overflows | cancel


def partial_products_leave_range(rows):
    """Rows whose large factors multiply past the largest float beside a small one (or zero),
    or whose small factors multiply below the smallest normal beside a large one (or inf):
    the answer depends on the order, as for sums: `torch.tensor([3e38, 3e38, 1e-40]).prod()`
    is inf, and 9e36 with 1e-40 first."""
    finite = torch.isfinite(rows) & (rows != 0)
    exponent = torch.where(finite, rows.abs().double().log2(), 0)
    info = torch.finfo(rows.dtype)
    large, small = exponent.clamp(min=0).sum(-1), exponent.clamp(max=0).sum(-1)
    has_large, has_small = (rows.abs() > 1).any(-1), (rows.abs() < 1).any(-1)
    return ((large > math.log2(info.max)) & has_small) | (
        (small < math.log2(info.tiny)) & has_large
    )


def rows_with_zeros_of_both_signs(reduce):
    """Rows whose largest (or smallest) value is 0.0 and -0.0 both: either is right, and eager
    picks by position and by op: for `torch.tensor([0.0, -0.0])` amax() is 0.0, max() -0.0.
    Our kernels combine lanes (C++) or a tree (Triton) in their own order."""

    def differs(rows):
        zero = reduce(rows) == 0
        return (
            zero
            & (rows == 0).logical_and(rows.signbit()).any(-1)
            & ((rows == 0).logical_and(~rows.signbit()).any(-1))
        )

    return differs


def path_dependent_variance(correction):
    """Rows whose eager variance over a dim (Welford) differs from that of the row alone
    (two passes): an overflow in Welford's running sums. `torch.tensor([[1.7e308] * 2]).var(1)`
    is 0, `torch.tensor([1.7e308] * 2).var()` is inf, and [1.7e308, -1.7e308] gives -inf.
    Also rows of finite values whose squared deviations overflow: on CUDA, Welford's updates
    give NaN for [1.7e308, 0, 0, 0, -1.7e308] where two passes give inf (on an H100)."""

    def differs(rows):
        alone = torch.stack([row.var(correction=correction) for row in rows])
        finite = torch.isfinite(rows).all(-1)
        deviations = rows - rows.mean(-1, keepdim=True)
        overflows = finite & torch.isinf(deviations * deviations).any(-1)
        return ~_same(rows.var(-1, correction=correction), alone) | overflows

    return differs


def square_overflows(rows):
    """layer_norm of a row whose squares overflow: eager's moments depend on the row's
    length (`torch.native_layer_norm` of [2e19] * 32 has rstd nan, of [2e19] * 33 316.2)."""
    limit = math.sqrt(torch.finfo(rows.dtype).max)
    return (rows.abs() > limit).any(-1, keepdim=True) & torch.isfinite(rows).all(-1, keepdim=True)


def rms_of_infinity(rows):
    """rms_norm of a row with an infinity: on the CPU, `x * rsqrt(inf)` gives 0 for the
    finite elements; CUDA's fused kernel (a Welford-style running mean of the squares) gives
    NaN for the whole row (measured on an H100: [inf, 1.0, 2.0] is [nan, nan, nan] there,
    [nan, 0., 0.] on the CPU). Rows whose squares overflow as `square_overflows`."""
    return square_overflows(rows) | torch.isinf(rows).any(-1, keepdim=True)


def welford_mean(rows):
    """The mean that `var_mean` returns is Welford's running mean, which an infinity makes NaN
    unless it comes last: `torch.var_mean(torch.tensor([inf, 1.0]))[1]` is nan, with the
    values swapped inf. We sum, then divide: inf both ways, and inf where the sum overflows
    (Welford's mean does not). Sums as `order_dependent_sum`."""
    half = torch.where(torch.isfinite(rows), rows, 0).double() / 2
    overflows = half.sum(-1).abs() > torch.finfo(rows.dtype).max / 2
    return torch.isinf(rows).any(-1) | overflows | order_dependent_sum(rows)


def over_prefixes(differs):
    """`differs` of every prefix of the rows: what the elements of cumsum (cumprod) fold."""
    return lambda rows: torch.stack([differs(rows[:, : j + 1]) for j in range(rows.shape[1])], 1)


def window_sums_differ(x):
    """`order_dependent_sum` of the 3x3 windows (padded with zeros) that `avg_pool` sums."""
    windows = F.unfold(x[None, None], 3, padding=1)[0].t()  # one row per output element
    return order_dependent_sum(windows).reshape(x.shape)


def windows_with_zeros_of_both_signs(x):
    """3x3 windows (max_pool's) whose largest value is 0.0 and -0.0 both: either is right."""

    def pooled(mask):
        return F.max_pool2d(mask.to(x.dtype)[None, None], 3, 1, 1)[0, 0] > 0

    zero = F.max_pool2d(x[None, None], 3, 1, 1)[0, 0] == 0
    return zero & pooled((x == 0) & x.signbit()) & pooled((x == 0) & ~x.signbit())


def adaptive_windows(x, output, padded_with):
    """The values that each adaptive window of x's last `len(output)` dims pools, one row per
    output element (`[..., *output, elements]`), padded to the longest."""
    dims = len(output)
    spans = [
        [(i * n // o, -(-(i + 1) * n // o)) for i in range(o)]
        for n, o in zip(x.shape[-dims:], output, strict=True)
    ]
    rows = [
        x[(..., *[slice(a, b) for a, b in starts])].flatten(x.dim() - dims)
        for starts in itertools.product(*spans)
    ]
    longest = max(row.shape[-1] for row in rows)
    rows = [F.pad(row, (0, longest - row.shape[-1]), value=padded_with) for row in rows]
    return torch.stack(rows, -2).unflatten(-2, output)


def adaptive_sums_differ(output):
    """`order_dependent_sum` of the adaptive windows that `adaptive_avg_pool` sums."""

    def differs(x):
        windows = adaptive_windows(x, output, 0.0)
        return order_dependent_sum(windows.flatten(0, -2)).reshape(windows.shape[:-1])

    return differs


def adaptive_zeros_of_both_signs(output):
    """Adaptive windows (`adaptive_max_pool`'s) whose largest value is 0.0 and -0.0 both."""

    def differs(x):
        windows = adaptive_windows(x, output, -INF)
        zeros = windows == 0
        both = (zeros & windows.signbit()).any(-1) & (zeros & ~windows.signbit()).any(-1)
        return (windows.amax(-1) == 0) & both

    return differs


def _columns(differs):
    return lambda x: differs(x.t())


def _whole(differs):
    return lambda x: differs(x.reshape(1, -1))[0]


# ----------------------------------------------------------------------------- the ops


def reversed_positions(x):
    """Positions n-1 .. 0 along the first dim, on x's device (a CPU index would be refused)."""
    return torch.arange(x.shape[0] - 1, -1, -1, device=x.device)


# sqrt is not exact: torch's float32 sqrt of 3e38 is one ulp above IEEE's (and ours).
UNARY = {
    name: Op(getattr(torch, name), exact)
    for name, exact in [
        ("abs", True), ("neg", True), ("sin", False), ("cos", False), ("tan", False),
        ("exp", False), ("log", False), ("log2", False), ("log1p", False), ("expm1", False),
        ("sqrt", False), ("rsqrt", False), ("tanh", False), ("erf", False), ("atan", False),
        ("relu", True), ("reciprocal", True), ("floor", True), ("ceil", True),
        ("trunc", True), ("round", True), ("isnan", True), ("logical_not", True),
        ("sigmoid", False), ("square", True),
    ]
}  # fmt: skip
UNARY.update(
    silu=Op(F.silu),
    gelu=Op(F.gelu, eager_differs=huge_positive_gelu),
    gelu_tanh=Op(lambda x: F.gelu(x, approximate="tanh")),
    leaky_relu=Op(F.leaky_relu, exact=True),
    softplus=Op(F.softplus),
    hardtanh=Op(F.hardtanh, exact=True),
    clamp=Op(lambda x: torch.clamp(x, -1.5, 2.0), exact=True),
    clamp_nan=Op(lambda x: torch.clamp(x, min=NAN), exact=True),
    clip=Op(lambda x: x.clip(max=-0.0), exact=True),
    clamp_min=Op(lambda x: torch.clamp_min(x, 0.0), exact=True),
    clamp_max=Op(lambda x: torch.clamp_max(x, INF), exact=True),
    pow_2=Op(lambda x: x**2, exact=True),
    pow_3=Op(lambda x: x**3, exact=True),
    pow_half=Op(lambda x: x**0.5),
    pow_minus_half=Op(lambda x: x**-0.5),
    pow_minus_1=Op(lambda x: x**-1, exact=True),
    pow_minus_2=Op(lambda x: x**-2, exact=True),
    pow_1_5=Op(lambda x: x**1.5),
    pow_0=Op(lambda x: x**0, exact=True),
    rpow=Op(lambda x: 2.0**x),
    mul_inf=Op(lambda x: x * INF, exact=True),
    add_nan=Op(lambda x: x + NAN, exact=True),
    sub_minus_0=Op(lambda x: x - (-0.0), exact=True),
    rsub=Op(lambda x: 1.0 - x, exact=True),
    div=Op(lambda x: x / 3.0, exact=True),
    remainder=Op(lambda x: x % 2.0, exact=True, eager_differs=lambda x: quotient_overflows(x, 2.0)),
    masked_fill=Op(lambda x: x.masked_fill(x > 0, -0.0), exact=True),
    where=Op(lambda x: torch.where(x < 1, x, NAN), exact=True),
    double=Op(lambda x: x.double(), exact=True),
    to_float=Op(lambda x: x.to(torch.float32), exact=True),
    to_bool=Op(lambda x: x.bool(), exact=True),
    to_long=Op(lambda x: x.long(), exact=True),
    to_int=Op(lambda x: x.int(), exact=True),
    dropout=Op(lambda x: F.dropout(x, 0.5, training=False), exact=True),
    clone=Op(lambda x: x.clone(), exact=True),
    hardswish=Op(F.hardswish),
    nan_to_num=Op(torch.nan_to_num, exact=True),
    nan_to_num_given=Op(lambda x: x.nan_to_num(-0.0, 1e39, -2.0), exact=True),
    half=Op(lambda x: x.half().float(), exact=True),
    bfloat16=Op(lambda x: x.bfloat16().double(), exact=True),
    flip=Op(lambda x: x.flip(0), exact=True),
    repeat=Op(lambda x: x.repeat(2), exact=True),
    cat=Op(lambda x: torch.cat([x, x.flip(0), x[:3]]), exact=True),
    stack=Op(lambda x: torch.stack([x, -x], 1), exact=True),
    slice_scatter=Op(lambda x: torch.slice_scatter(x, x[:3].flip(0), 0, 0, 3), exact=True),
    index_select=Op(lambda x: x.index_select(0, reversed_positions(x)), exact=True),
    gather=Op(lambda x: x.gather(0, reversed_positions(x)), exact=True),
    index=Op(lambda x: x[reversed_positions(x)[::2]], exact=True),
    embedding=Op(lambda x: F.embedding(reversed_positions(x), x[:, None])[:, 0], exact=True),
    factories=Op(
        lambda x: torch.zeros_like(x) + x.new_ones(x.shape) * x.new_full((1,), 2.0) + x,
        exact=True,
    ),
    arange=Op(lambda x: x * torch.arange(x.shape[0], dtype=x.dtype, device=x.device), exact=True),
)

BINARY = {
    name: Op(getattr(torch, name), exact)
    for name, exact in [
        ("add", True), ("sub", True), ("mul", True), ("div", True), ("true_divide", True),
        ("atan2", False), ("eq", True), ("ne", True), ("lt", True), ("le", True), ("gt", True),
        ("ge", True), ("logical_and", True), ("logical_or", True), ("logical_xor", True),
        ("pow", False),
    ]
}  # fmt: skip
# Ops that pick one of their operands (a zero of either sign, when both are zeros).
PICK_ONE = {
    "maximum": torch.maximum, "minimum": torch.minimum, "max": torch.max, "min": torch.min,
    "clamp": lambda a, b: torch.clamp(a, min=b), "clamp_max": lambda a, b: torch.clamp(a, max=b),
}  # fmt: skip
BINARY.update(
    {
        name: Op(fn, exact=True, eager_differs=zeros_of_opposite_signs)
        for name, fn in PICK_ONE.items()
    },
    remainder=Op(torch.remainder, exact=True, eager_differs=quotient_overflows),
    add_alpha=Op(lambda a, b: torch.add(a, b, alpha=2), exact=True),
    sub_alpha=Op(lambda a, b: torch.sub(a, b, alpha=3), exact=True),
    rsub=Op(lambda a, b: torch.rsub(a, b, alpha=0.5), exact=True),
    where=Op(lambda a, b: torch.where(a > b, a, b), exact=True),
)

_sum = order_dependent_sum


def batch_norm_statistics(x):
    """Running mean and variance, weight and bias of ordinary values, on x's device."""
    stats = torch.arange(COLUMNS, dtype=x.dtype, device=x.device) / 3
    return stats - 2, stats + 0.5, stats, -stats


def normalized_by_batch_norm(x):
    """Batch norm in inference, its statistics made in the graph (a tensor made while tracing
    would be a constant on the CPU, which CUDA kernels cannot read)."""
    return F.batch_norm(x, *batch_norm_statistics(x))


def batch_norm_orders_differ(x):
    """Where eager's batch norm overflows in one of its orders of operations and not in
    another: the CPU computes `x * (w * invstd) + (b - mean * w * invstd)`, CUDA's kernel
    for contiguous inputs `w * (x - mean) * invstd + b` (aten/src/ATen/native/cuda/
    Normalization.cuh), whose `w * (x - mean)` is -inf for x = -3e38 and w = 4/3."""
    mean, var, w, b = batch_norm_statistics(x)
    invstd = torch.rsqrt(var + 1e-5)
    orders = (
        x * (w * invstd) + (b - mean * w * invstd),
        w * (x - mean) * invstd + b,
        (x - mean) * invstd * w + b,
    )
    finite = [torch.isfinite(o) | torch.isnan(x) for o in orders]
    return (finite[0] != finite[1]) | (finite[0] != finite[2])


_amax = rows_with_zeros_of_both_signs(lambda rows: rows.amax(-1))
_amin = rows_with_zeros_of_both_signs(lambda rows: rows.amin(-1))
_max_dim = rows_with_zeros_of_both_signs(lambda rows: rows.max(-1).values)
REDUCTIONS = {
    "sum": Op(lambda x: x.sum(-1), eager_differs=_sum),
    "sum_columns": Op(lambda x: x.sum(0), eager_differs=_columns(_sum)),
    "sum_all": Op(lambda x: x.sum(), eager_differs=_whole(_sum)),
    "mean": Op(lambda x: x.mean(-1), eager_differs=_sum),
    "prod": Op(lambda x: x.prod(-1), eager_differs=partial_products_leave_range),
    "amax": Op(lambda x: x.amax(-1), exact=True, eager_differs=_amax),
    "amin": Op(lambda x: x.amin(0), exact=True, eager_differs=_columns(_amin)),
    "max": Op(lambda x: x.max(), exact=True, eager_differs=_whole(_amax)),
    "min": Op(lambda x: x.min(), exact=True, eager_differs=_whole(_amin)),
    "argmax": Op(lambda x: x.argmax(-1), exact=True),
    "max_dim": Op(lambda x: x.max(-1).values, exact=True, eager_differs=_max_dim),
    "min_dim_indices": Op(lambda x: x.min(0).indices, exact=True),
    "logsumexp": Op(lambda x: x.logsumexp(-1), eager_differs=_sum),
    "argmin": Op(lambda x: x.argmin(0), exact=True),
    "any": Op(lambda x: x.any(-1), exact=True),
    "all": Op(lambda x: x.all(-1), exact=True),
    "var": Op(lambda x: x.var(-1), eager_differs=path_dependent_variance(1)),
    "std": Op(lambda x: x.std(-1, correction=0), eager_differs=path_dependent_variance(0)),
    "softmax": Op(lambda x: x.softmax(-1)),
    "softmax_columns": Op(lambda x: torch.softmax(x, 0)),
    "log_softmax": Op(lambda x: F.log_softmax(x, -1)),
    # (x - mean) * rstd is -0.0 or 0.0 for x = -0.0 as the mean rounds to -1e-310 or to 0,
    # and eager's mean comes from sums or Welford updates, by the row's length (above).
    "layer_norm": Op(
        lambda x: F.layer_norm(x, (COLUMNS,)), eager_differs=square_overflows, signed_zeros=False
    ),
    "transpose": Op(lambda x: x.t().contiguous(), exact=True),
    "cumsum": Op(lambda x: x.cumsum(-1), eager_differs=over_prefixes(_sum)),
    "cumprod": Op(
        lambda x: x.cumprod(-1), eager_differs=over_prefixes(partial_products_leave_range)
    ),
    "var_mean": Op(lambda x: torch.var_mean(x, -1)[0], eager_differs=path_dependent_variance(1)),
    "std_mean": Op(lambda x: torch.std_mean(x, 0)[1], eager_differs=_columns(welford_mean)),
    "rms_norm": Op(lambda x: F.rms_norm(x, (COLUMNS,)), eager_differs=rms_of_infinity),
    "group_norm": Op(
        lambda x: F.group_norm(x, 1), eager_differs=square_overflows, signed_zeros=False
    ),
    "batch_norm": Op(
        normalized_by_batch_norm, eager_differs=batch_norm_orders_differ, signed_zeros=False
    ),
    "max_pool": Op(
        lambda x: F.max_pool2d(x[None, None], 3, 1, 1)[0, 0],
        exact=True,
        eager_differs=windows_with_zeros_of_both_signs,
    ),
    "avg_pool": Op(
        lambda x: F.avg_pool2d(x[None, None], 3, 1, 1)[0, 0], eager_differs=window_sums_differ
    ),
    "adaptive_avg_pool": Op(
        lambda x: F.adaptive_avg_pool2d(x[None], (1, 1))[0, 0], eager_differs=_whole(_sum)
    ),
    # windows of three and four rows, two and three columns (pooling.py's adaptive windows)
    "adaptive_avg_pool_uneven": Op(
        lambda x: F.adaptive_avg_pool2d(x[None], (6, 2))[0],
        eager_differs=adaptive_sums_differ((6, 2)),
    ),
    "adaptive_avg_pool_1d": Op(
        lambda x: F.adaptive_avg_pool1d(x[None], 3)[0], eager_differs=adaptive_sums_differ((3,))
    ),
    "adaptive_avg_pool_3d": Op(
        lambda x: F.adaptive_avg_pool3d(x[None, None], (1, 6, 2))[0, 0],
        eager_differs=adaptive_sums_differ((6, 2)),
    ),
    "adaptive_max_pool": Op(
        lambda x: F.adaptive_max_pool2d(x[None], (6, 2))[0],
        exact=True,
        eager_differs=adaptive_zeros_of_both_signs((6, 2)),
    ),
}

GROUPS = {
    "unary": (UNARY, [(N,)]),
    "binary": (BINARY, [(N, 1), (1, N)]),
    "reductions": (REDUCTIONS, [(ROWS, COLUMNS)]),
}

# Lowerings that only move values, never look at them: views, and bitwise ops (on bools).
MOVE_VALUES = {
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "broadcast_to", "chunk",
    "expand", "expand_as", "flatten", "narrow", "permute", "reshape", "reshape_as", "select",
    "split", "split_with_sizes", "squeeze", "swapaxes", "transpose", "unbind", "unflatten",
    "unsqueeze", "view", "view_as", "size",
}  # fmt: skip


def group_graph(group: str) -> torch.fx.GraphModule:
    """The group's ops as one FX graph that returns every op's result, in `GROUPS` order."""
    ops, shapes = GROUPS[group]

    def every_op(*inputs):
        return tuple(op.fn(*inputs) for op in ops.values())

    return torch.fx.symbolic_trace(as_python_function(every_op, len(shapes)))


def lowerings_not_reached() -> set[str]:
    """The lowerings registered by name that no group's graph calls, views aside."""
    reached = {
        LOWERINGS[node.target]
        for group in GROUPS
        for node in group_graph(group).graph.nodes
        if node.op in ("call_function", "call_method") and node.target in LOWERINGS
    }
    names = {key for key in LOWERINGS if isinstance(key, str)} - MOVE_VALUES
    return {name for name in names if LOWERINGS[name] not in reached}


# ----------------------------------------------------------------------------- running them


@functools.cache
def compiled_group(backend, group: str, dtype, device):
    """`group_graph` compiled by `backend`, once per session, dtype and device; it ran as
    kernels."""
    inputs = [torch.zeros(shape, dtype=dtype, device=device) for shape in GROUPS[group][1]]
    compiled = backend(group_graph(group), inputs)
    compiled(*inputs)
    assert_lowered(compiled, externs=("check_indices",))
    return compiled


def check_group(backend, group: str, inputs):
    """Every op of `group` on `inputs`: compiled equals eager, op by op."""
    ops = GROUPS[group][0]
    compiled = compiled_group(backend, group, inputs[0].dtype, inputs[0].device)
    ours = compiled(*[x.clone() for x in inputs])
    for (name, op), actual in zip(ops.items(), ours, strict=True):
        expected = op.fn(*[x.clone() for x in inputs])
        keep = torch.ones_like(expected, dtype=torch.bool)
        if op.eager_differs is not None:
            keep = keep & ~op.eager_differs(*inputs)
        assert_same_values(name, op, actual[keep], expected[keep], inputs)


def assert_same_values(name, op, actual, expected, inputs):
    close = {"rtol": 0, "atol": 0} if op.exact else {}

    def message(text):
        return f"{name} on {[x.tolist() for x in inputs]}:\n{text}"

    torch.testing.assert_close(actual, expected, equal_nan=True, msg=message, **close)
    if expected.dtype.is_floating_point and op.signed_zeros:
        zeros = (actual == 0) & (expected == 0)
        signs = torch.signbit(actual[zeros]) == torch.signbit(expected[zeros])
        assert signs.all(), message(
            f"signs of zero differ: {actual[zeros][~signs]} where eager has "
            f"{expected[zeros][~signs]}"
        )


def every_special_value(group: str, dtype) -> list[list[torch.Tensor]]:
    """Inputs for `check_group` that hold every special value: for binary ops every pair of
    them; for reductions rows that put each value beside every other, and three at random."""
    special = torch.tensor(SPECIAL[dtype], dtype=dtype)
    if group == "unary":
        return [[special]]
    if group == "binary":
        return [[special[:, None], special[None, :]]]
    generator = torch.Generator().manual_seed(0)
    matrices = []
    for first in range(N):
        picks = torch.randint(0, N, (ROWS, COLUMNS), generator=generator)
        picks[:, 0], picks[:, 1] = first, torch.arange(ROWS)
        matrices.append([special[picks]])
    return matrices
