"""Hypothesis strategies for random tensor programs: inputs, and a list of steps to run on them.

A program is data (a list of `(op, operand indices)`), turned into a Python function
that both eager and the compilers run, so a failing example prints as a readable list.
An in-place step writes into an earlier step's result or into an input (which the
caller sees changed), or into a view of one (which its base and its other views see):
later steps read the written value, earlier ones the old one.
"""

import contextlib

import torch
import torch.nn.functional as F
from hypothesis import strategies as st

DTYPES = [torch.float32, torch.float64, torch.int64, torch.bool]

# Values of few significant bits: sums are exact in float32 and float64 alike, so the
# double accumulators of our reductions and torch's float ones agree to the last bit.
FLOATS = st.one_of(
    st.integers(-64, 64).map(lambda k: k / 8),
    st.sampled_from([float("nan"), float("inf"), float("-inf"), 0.0, -0.0]),
)

# `exp` is clamped so that no step gets large arguments from it: sin(exp(6)) turns the few
# ulp that a GPU's fast exp may differ by (inductor's Triton uses it too) into 2e-5 of error.
UNARY = {
    "sin": torch.sin, "exp": lambda a: torch.exp(a).clamp(max=20), "abs": torch.abs,
    "neg": torch.neg, "relu": torch.relu,
    "sigmoid": torch.sigmoid, "tanh": torch.tanh, "sqrt_abs": lambda a: a.abs().sqrt(),
    "isnan": torch.isnan, "floor": torch.floor, "to_float": lambda a: a.float(),
    "t": lambda a: a.transpose(0, -1), "unsqueeze": lambda a: a.unsqueeze(0),
    "flip_slice": lambda a: a[..., ::2], "reshape": lambda a: a.reshape(-1),
    "t_reshape": lambda a: a.transpose(0, -1).reshape(-1),
    # gelu(+inf) is nan or inf in eager by path (oneDNN for several elements, special_values.py
    # `huge_positive_gelu`): the programs keep to the values where eager has one answer
    "gelu": lambda a: torch.nn.functional.gelu(a.float().clamp(max=1e30)),
}  # fmt: skip
BINARY = {
    "add": torch.add, "sub": lambda a, b: a - b, "mul": torch.mul, "div": torch.div,
    "maximum": torch.maximum, "minimum": torch.minimum, "lt": torch.lt, "eq": torch.eq,
    "where": lambda a, b: torch.where(a > b, a, b), "add_scalar": lambda a, b: a + 0.5,
}  # fmt: skip
REDUCE = {
    "sum": lambda a: a.sum(-1), "sum_all": lambda a: a.sum(),
    "amax": lambda a: a.amax(0, keepdim=True),
    "mean": lambda a: a.float().mean(-1), "softmax": lambda a: a.float().softmax(-1),
    "argmax": lambda a: a.argmax(-1), "prod": lambda a: a.prod(0),
    "var": lambda a: a.double().var(-1),
}  # fmt: skip
# (No `a += b`: symbolic_trace records it as `a + b`, as FX proxies have no `__iadd__`.)
INPLACE = {
    "relu_": lambda a: a.relu_(), "relu_inplace": lambda a: F.relu(a, inplace=True),
    "clamp_": lambda a: a.clamp_(-1, 1), "add_": lambda a, b: a.add_(b),
    "mul_": lambda a, b: a.mul_(b),
    # into a view: eager writes through to its base (an input, or an earlier step's result)
    "slice_mul_": lambda a: a[..., 1::2].mul_(2), "row_add_": lambda a, b: a[:1].add_(b),
    "t_sub_": lambda a, b: a.transpose(0, -1).sub_(b),
    "flat_fill_": lambda a: a.view(-1)[::3].fill_(0.5),
    "copy_into_slice_": lambda a, b: a[..., :1].copy_(b[..., -1:]),
}  # fmt: skip
TABLES = {"unary": UNARY, "binary": BINARY, "reduce": REDUCE, "inplace": INPLACE}


@st.composite
def tensors(draw, shape, dtype):
    """A tensor of `shape` and `dtype`, sometimes laid out transposed or strided."""
    layout = (
        draw(st.sampled_from(["contiguous", "transposed", "strided"]))
        if len(shape) >= 2
        else "contiguous"
    )
    full = list(shape)
    if layout == "transposed":
        full[0], full[-1] = full[-1], full[0]
    if layout == "strided":
        full[-1] *= 2
    n = 1
    for s in full:
        n *= s
    if dtype.is_floating_point:
        values = draw(st.lists(FLOATS, min_size=n, max_size=n))
    elif dtype == torch.bool:
        values = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    else:
        values = draw(st.lists(st.integers(-8, 8), min_size=n, max_size=n))
    base = torch.tensor(values, dtype=dtype).reshape(full)
    if layout == "transposed":
        return base.transpose(0, -1)
    if layout == "strided":
        return base[..., ::2]
    return base


@st.composite
def programs(draw, ops=("unary", "binary", "reduce", "inplace")):
    """(function, inputs): 1-3 inputs broadcastable to one shape, then 1-5 random steps."""
    shape = draw(st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple))
    n_inputs = draw(st.integers(1, 3))
    inputs = []
    for _ in range(n_inputs):
        keep = draw(st.integers(0, len(shape)))  # trailing dims kept, some set to 1: broadcasting
        sub = tuple(s if draw(st.booleans()) else 1 for s in shape[len(shape) - keep :])
        inputs.append(draw(tensors(sub, draw(st.sampled_from(DTYPES)))))
    steps = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(ops))
        name = draw(st.sampled_from(sorted(TABLES[kind])))
        arity = TABLES[kind][name].__code__.co_argcount if kind == "inplace" else None
        n_operands = arity or (2 if kind == "binary" else 1)
        operands = [draw(st.integers(0, 10)) for _ in range(n_operands)]
        steps.append((kind, name, operands))
    return make_program(steps, n_inputs), inputs


def make_program(steps, n_inputs):
    def program(*args):
        values = list(args)
        for kind, name, operands in steps:
            picked = [values[i % len(values)] for i in operands]
            values.append(TABLES[kind][name](*picked))
        fn.computes_in_float32 |= any(
            isinstance(v, torch.Tensor) and v.dtype == torch.float32 for v in values
        )
        return tuple(values[n_inputs:])

    params = ", ".join(f"a{i}" for i in range(n_inputs))
    namespace = {"program": program}
    exec(f"def fn({params}):\n    return program({params})", namespace)
    fn = namespace["fn"]
    fn.__qualname__ = f"program{steps}"
    fn.computes_in_float32 = False  # set by each eager run
    return fn


def tolerances(fn, inputs) -> dict:
    """`assert_close`'s tolerances for what `fn` computes: a float32 value promoted to
    float64 keeps float32's error (one ulp of a float32 erf is 1.2e-7 relative, more than
    float64's rtol), so a program that goes through float32 is held to float32's."""
    with contextlib.suppress(Exception):  # eager's error is the oracle's business
        fn(*[t.clone() for t in inputs])
    return {"rtol": 1.3e-6, "atol": 1e-5} if fn.computes_in_float32 else {}
