"""Autocast through our kernels: a call under autocast, or a graph that enters it, runs the
graphs of its ATen trace, where autocast's casts are `to` casts fused into the kernels
(stage5_inductor_cpp/like_eager/autocast.py).

Eager is the oracle for values and for the dtype of every output. Tolerances: eager
rounds each op's result to bfloat16 (2**-8 relative) and a fused kernel may keep a
pointwise chain in float32 between its stores, as torch's inductor does, so the two differ
by a few bfloat16 roundings; torch's own inductor tests compare bfloat16 at
atol=rtol=1e-2. Explicit casts are kept: a value eager stores in bfloat16 is rounded there
too, which the rounding tests check to float32's precision.
"""

import copy

import pytest
import torch
import torch.nn.functional as F
from hypothesis import example, given, note, settings
from hypothesis import strategies as st

import stage4_fx
import stage5_inductor_cpp
from stage5_inductor_cpp import compile_fx
from stage5_inductor_cpp.performance import attention_masks
from tests.oracle import assert_same_as_eager
from tests.stage5.helpers import KeepGraphs

ROWS, COLS = 8, 16

# Autocast's lower-precision ops, its float32 ops, and the ones that follow their inputs.
# The nested `enabled=False` region starts with `h.float()`: eager's lower-precision ops
# refuse a bfloat16 input with float32 weights there, as the Llama rotary embedding knows.
OPS = {
    "linear": "F.linear(h, w, b)",
    "matmul": "h @ w",
    "bmm": "torch.bmm(h.unsqueeze(0), w.unsqueeze(0)).squeeze(0)",
    "conv2d": "F.conv2d(h[None, None], k, padding=1)[0, 0]",
    "softmax": "h.softmax(-1)",
    "log_softmax": "F.log_softmax(h, -1)",
    "layer_norm": f"F.layer_norm(h, ({COLS},))",
    "sum": "h + h.sum(-1, keepdim=True)",
    "mean": "h - h.mean(-1, keepdim=True)",
    "exp": "h.clamp(max=4).exp()",
    "add": "h + x",
    "mul": "h * x",
    "relu": "h.relu()",
    "gelu": "F.gelu(h)",
    "silu": "F.silu(h)",
    "tanh": "h.tanh()",
    "cube": "h.clamp(-2, 2) ** 3",  # eager's half dtypes round the square first
    "gelu_tanh": "0.5 * h * (1 + torch.tanh(0.7978845608 * (h + 0.044715 * h**3)))",  # GPT-2's
    "cat": f"torch.cat([h[:, :{COLS // 2}], x[:, {COLS // 2}:]], -1)",
    "float": "h.float()",
    "to_bf16": "h.to(torch.bfloat16)",
}
LOWER_PRECISION = ["linear", "matmul", "bmm", "conv2d"]
IN_DISABLED = [op for op in OPS if op != "to_bf16"]
TOLERANCE = {torch.bfloat16: 1e-2, torch.float16: 1e-2}


pytestmark = pytest.mark.usefixtures("fresh_compiles")  # tests/conftest.py


def inputs():
    """x, a square weight scaled so that a chain of products stays near 1, a bias, a 3x3
    convolution kernel."""
    x = torch.randn(ROWS, COLS)
    w = torch.randn(COLS, COLS) / COLS**0.5
    return x, w, torch.randn(COLS), torch.randn(1, 1, 3, 3) / 3


def make_program(steps, region, device="cpu") -> tuple[str, object]:
    """The source of a program of `steps` (names in OPS); the steps in `region` (a range,
    or None) run in a nested `enabled=False` autocast region of `device`'s type."""
    lines = ["def program(x, w, b, k):", "    h = x"]
    for i, op in enumerate(steps):
        if region is not None and i == region.start:
            lines.append(f'    with torch.autocast("{device}", enabled=False):')
            lines.append("        h = h.float()")
        indent = "        " if region is not None and i in region else "    "
        lines.append(f"{indent}h = {OPS[op]}")
    lines.append("    return h")
    source = "\n".join(lines)
    namespace = {"torch": torch, "F": F}
    exec(compile(source, f"<autocast program {abs(hash(source))}>", "exec"), namespace)
    return source, namespace["program"]


@st.composite
def programs(draw):
    # The first step is one that autocast lowers, so that every program has a graph.
    first = draw(st.sampled_from(LOWER_PRECISION))
    steps = [first, *draw(st.lists(st.sampled_from(list(OPS)), min_size=2, max_size=7))]
    region = None
    if draw(st.booleans()):
        start = draw(st.integers(0, len(steps) - 1))
        stop = draw(st.integers(start + 1, len(steps)))
        region = range(start, stop)
        for i in region:
            if steps[i] == "to_bf16":
                steps[i] = draw(st.sampled_from(IN_DISABLED))
    dtype = draw(st.sampled_from([torch.bfloat16, torch.bfloat16, torch.float16]))
    return steps, region, dtype


def raises_as_eager(fn, args, backend) -> bool:
    """Whether eager refuses the program (`cat` of bfloat16 and float32 values under float16
    autocast: "Unexpected floating ScalarType in at::autocast::prioritize"); if it does,
    the compiled function must raise the same. Not with fullgraph=True: there an error the
    code does not catch is a GraphBreakError, as torch's "Observed exception"."""
    try:
        fn(*args)
    except RuntimeError as error:
        with pytest.raises(type(error)):
            stage4_fx.compile(fn, backend=backend)(*args)
        return True
    return False


def assert_close_under(actual, expected, dtype):
    """Same dtype, and values within autocast's tolerance relative to the largest."""
    tol = TOLERANCE[dtype]
    scale = max(expected.detach().abs().max().item(), 1.0) if expected.numel() else 1.0
    torch.testing.assert_close(actual, expected, rtol=tol, atol=tol * scale)


def assert_kernels_ran(graphs, backward=False, kernels=True):
    """Each graph ran the compiled code of its ATen trace (with kernels of ours, unless
    `kernels` is False: `log_softmax` alone is a call into torch), never torch's run of it."""
    assert graphs, "nothing was compiled"
    for graph in graphs:
        assert graph.torch_reasons == [], graph.torch_reasons
        assert len(graph.parts) == (2 if backward else 1), "not run through the ATen trace"
        assert all("def call" in part.last.wrapper_source for part in graph.parts)
        assert not kernels or all(part.last.kernel_names for part in graph.parts)


@settings(max_examples=25)
@given(programs())
@example((["linear", "to_bf16", "cat"], None, torch.float16))  # eager raises (raises_as_eager)
def test_random_programs_under_autocast(program):
    check_program(program, "cpu", compile_fx)


def check_program(program, device: str, backend):
    """A random program under `device`'s autocast, compiled whole by `backend` (stage 5's or
    stage 6's inductor): eager's dtype and values within autocast's tolerance, or eager's
    error; its graph's kernels ran."""
    steps, region, dtype = program
    source, fn = make_program(steps, region, device)
    note(f"autocast {device} {dtype}\n{source}")
    args = [a.to(device) for a in inputs()]
    stage4_fx.reset()
    keep = KeepGraphs(backend)
    compiled = stage4_fx.compile(fn, backend=keep, fullgraph=True)
    with torch.autocast(device, dtype=dtype):
        if raises_as_eager(fn, args, keep):
            return
        expected = fn(*args)
        actual = compiled(*args)
    assert actual.dtype == expected.dtype
    assert_close_under(actual, expected, dtype)
    assert_kernels_ran(keep.graphs, kernels=False)


# --- explicit casts are never elided ----------------------------------------------------


def stored_in_bf16(x, w):
    y = x @ w  # bfloat16 under autocast: rounded when eager stores it
    return y.float() * 3 + 1, x.to(torch.bfloat16).to(torch.float32) * 2


def stored_in_bf16_entered(x, w):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = x @ w
    return y.float() * 3 + 1, x.to(torch.bfloat16).to(torch.float32) * 2


# A few float32 roundings (a fused multiply-add may skip one), far below one bfloat16 ulp.
EXACT = {"rtol": 2**-20, "atol": 0}


def assert_rounded_as_eager(actual, expected, x, w):
    for ours, eager in zip(actual, expected, strict=True):
        torch.testing.assert_close(ours, eager, **EXACT)
    unrounded = ((x @ w) * 3 + 1, x * 2)  # what an elided cast would give
    for eager, wrong in zip(expected, unrounded, strict=True):
        assert not torch.allclose(eager, wrong, **EXACT)  # the test can tell the two apart


def test_a_value_stored_in_bf16_is_rounded_as_in_eager():
    x, w = torch.randn(ROWS, COLS), torch.randn(COLS, COLS)
    compiled = compile_fx(torch.fx.symbolic_trace(stored_in_bf16), [x, w])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        actual, expected = compiled(x, w), stored_in_bf16(x, w)
    assert_rounded_as_eager(actual, expected, x, w)
    (forward,) = compiled.parts
    assert forward.last.kernel_names and "bfloat16" in forward.last.source


def test_a_value_stored_in_bf16_inside_an_entered_region_is_rounded_as_in_eager():
    x, w = torch.randn(ROWS, COLS), torch.randn(COLS, COLS)
    keep = KeepGraphs()
    actual = stage4_fx.compile(stored_in_bf16_entered, backend=keep, fullgraph=True)(x, w)
    assert_rounded_as_eager(actual, stored_in_bf16_entered(x, w), x, w)
    assert_kernels_ran(keep.graphs)


def attention(q, k, v):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        scores = (q @ k.transpose(-1, -2)) / 4
        out = scores.softmax(-1) @ v
    return out, out.float().relu().sum(-1)


def test_autocast_entered_inside_compiles_bf16_kernels_with_eagers_answer():
    q, k, v = (torch.randn(2, ROWS, COLS) for _ in range(3))
    keep = KeepGraphs()
    compiled = stage4_fx.compile(attention, backend=keep, fullgraph=True)
    expected = assert_same_as_eager(compiled, attention, q, k, v, atol=1e-2, rtol=1e-2)
    assert expected[0].dtype == torch.bfloat16
    assert_kernels_ran(keep.graphs)
    assert any("bfloat16" in part.last.source for part in keep.graphs[0].parts)
    opt = stage5_inductor_cpp.compile(attention)  # the public spelling: the same answer
    assert_same_as_eager(opt, attention, q, k, v, atol=1e-2, rtol=1e-2)


# --- training under autocast ------------------------------------------------------------


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(COLS, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))


class ConvNet(torch.nn.Module):
    """A convolution, then a mean over the image (not `Flatten`: a view of the convolution's
    result runs its graphs in torch, with or without autocast), then a linear layer."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3, padding=1)
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(self.conv(x).relu().mean((2, 3)))


NETS = {"mlp": (mlp, (ROWS, COLS)), "conv": (ConvNet, (ROWS, 1, 6, 6))}


def train_steps(model, x, target, dtype, scaler=None, steps=3):
    """Three SGD steps under autocast on `x`'s device; the losses, and the gradients before
    each step."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses, grads = [], []
    for _ in range(steps):
        with torch.autocast(x.device.type, dtype=dtype):
            loss = F.cross_entropy(model(x), target)
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)  # unscales the gradients first
            scaler.update()
        losses.append(loss.detach())
        grads.append([p.grad.clone() for p in model.parameters()])
        opt.zero_grad()
    return losses, grads


def check_training(name, dtype, scaled, device="cpu", backend=compile_fx):
    make, shape = NETS[name]
    eager = make().to(device)
    ours = copy.deepcopy(eager)
    x, target = torch.randn(shape, device=device), torch.randint(0, 4, (ROWS,), device=device)
    keep = KeepGraphs(backend)
    compiled = stage4_fx.compile(ours, backend=keep)
    # A scale at which no float16 gradient overflows: a step skipped by one run and not the
    # other would be a near-tie of the overflow check, not a difference of the compiler.
    scalers = [torch.amp.GradScaler(device, init_scale=2.0**8) if scaled else None for _ in "ab"]
    expected = train_steps(eager, x, target, dtype, scalers[0])
    actual = train_steps(compiled, x, target, dtype, scalers[1])
    for ours_loss, eager_loss in zip(actual[0], expected[0], strict=True):
        assert ours_loss.dtype == eager_loss.dtype
        assert_close_under(ours_loss, eager_loss, dtype)
    for ours_grads, eager_grads in zip(actual[1], expected[1], strict=True):
        for a, e in zip(ours_grads, eager_grads, strict=True):
            assert_close_under(a, e, dtype)
    for a, e in zip(ours.parameters(), eager.parameters(), strict=True):
        assert_close_under(a.detach(), e.detach(), dtype)
    if scaled:
        assert scalers[0].get_scale() == scalers[1].get_scale()
    assert_kernels_ran(keep.graphs, backward=True)


@pytest.mark.parametrize("name", list(NETS))
def test_training_under_bf16_autocast_matches_eager(name):
    check_training(name, torch.bfloat16, scaled=False)


@pytest.mark.parametrize("name", list(NETS))
def test_training_under_fp16_autocast_with_a_grad_scaler_matches_eager(name):
    check_training(name, torch.float16, scaled=True)


# --- what the casts of weights are written as -------------------------------------------------


def linear_and_pool(x, w, conv_w):
    """A linear layer's weight cast, then transposed for the product; a convolution's weight
    cast; a max-pool whose indices no one reads."""
    h = F.max_pool2d(F.conv2d(x, conv_w, padding=1).relu(), 2)
    return F.linear(h.flatten(1), w)


def lowered_under_autocast(fn, *args):
    keep = KeepGraphs()
    compiled = stage4_fx.compile(fn, backend=keep, fullgraph=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert_same_as_eager(compiled, fn, *args, atol=1e-2, rtol=1e-2)
    assert_kernels_ran(keep.graphs)
    ((graph,),) = [g.parts for g in keep.graphs]
    return graph.last


def test_cast_weights_are_written_in_the_order_the_libraries_read_them():
    """autocast casts each weight on every call. The cast of a weight that the product reads
    transposed is written as the weight lies, and the product takes a transposed view (as
    inductor's ReinterpretView): written transposed, it read the weight across rows, and
    BERT's casts took twice as long. A convolution's cast weight is written channels-last,
    as its images are: given an NCHW weight, oneDNN converted it on every call."""
    x, w, conv_w = torch.randn(2, 3, 8, 8), torch.randn(5, 64), torch.randn(4, 3, 3, 3)
    code = lowered_under_autocast(linear_and_pool, x, w, conv_w).wrapper_source
    assert "empty_strided((64, 5), (1, 64), dtype=torch.bfloat16)" in code  # w's own order
    assert "empty_strided((4, 3, 3, 3), (27, 1, 9, 3), dtype=torch.bfloat16)" in code
    assert "max_pool2d" not in code  # values only: a reduction of the kernels (training/aten.py)


def test_a_convolution_of_a_cast_weight_is_torchs_own_call():
    """A cast weight is new memory at each call, written channels-last already: the wrapper
    calls torch.conv2d itself, not channels_last.conv2d_with_channels_last_weights, whose
    copies serve only a weight the graph is given (a Python call per convolution)."""
    x, w, conv_w = torch.randn(2, 3, 8, 8), torch.randn(5, 64), torch.randn(4, 3, 3, 3)
    namespace = lowered_under_autocast(linear_and_pool, x, w, conv_w).call.__globals__
    calls = [f for name, f in namespace.items() if name.startswith("extern_")]
    assert torch.conv2d in calls
    assert not [f for f in calls if f.__name__ == "conv2d" and f is not torch.conv2d]


def test_a_cast_weight_saved_for_the_backward_stays_as_the_convolution_reads_it():
    """The forward hands the backward a convolution's cast weight through an alias (a
    convolution without a bias, before a batch norm). The alias is its source in our graph,
    and the source is returned as only the backward reads it: channels-last, as the
    convolution read it, not copied into eager's layout as an output a caller sees (each
    of ResNet-18's weights was copied so in every training step)."""
    torch.manual_seed(0)
    eager = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1, bias=False),
        torch.nn.BatchNorm2d(8),
        torch.nn.ReLU(),
        torch.nn.Conv2d(8, 8, 3, padding=1, bias=False),
        torch.nn.BatchNorm2d(8),
    )
    ours, x, g = copy.deepcopy(eager), torch.randn(2, 3, 8, 8), torch.randn(2, 8, 8, 8)
    keep = KeepGraphs(compile_fx)
    compiled = stage4_fx.compile(ours, backend=keep)
    for model in (compiled, eager):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(x)
        (out.float() * g).sum().backward()  # (a normalized output's squares sum to a constant)
    for a, e in zip(ours.parameters(), eager.parameters(), strict=True):
        assert_close_under(a.grad, e.grad, torch.bfloat16)
    assert_kernels_ran(keep.graphs, backward=True)
    forward = keep.graphs[0].parts[0].last.wrapper_source
    assert forward.count("empty_strided((8, 8, 3, 3)") == 1, forward


def safe_attention_scores(x, w, masked):
    """The softmax of the math attention path (torch's `_safe_softmax`, which attention's
    decomposition calls when no fused kernel takes the mask): a row masked whole is zeros,
    not NaN."""
    scores = (x @ w).float().masked_fill(masked, float("-inf"))
    return torch.ops.aten._safe_softmax(scores, -1)


def test_the_softmax_of_the_math_attention_path_is_one_kernel():
    """`_safe_softmax` decomposes into the softmax, an `any` over the row and a `full_like`
    of zeros. Taken as calls into torch, the `any` read the scores once more and the zeros
    were written whole: 200 MB a layer for BERT-base at 16 x 512 on a GPU, where torch's
    inductor, given the same math path, made one kernel. `any` and `full_like` are now
    lowered (training/aten.py), and the row's check fuses into the softmax's kernel."""
    x, w = torch.randn(4, 8, 16), torch.randn(16, 16)
    masked = torch.rand(4, 8, 16) > 0.7
    masked[1, 2] = True  # a row with nothing left: zeros in eager
    graph = lowered_under_autocast(safe_attention_scores, x, w, masked)
    assert graph.extern_names == ("mm",)
    assert len([k for k in graph.kernel_names if "exp" in k]) == 1


def attention_with_a_traced_mask(q, keep):
    """Attention under a bool mask broadcast along the keys, as Hugging Face builds it when
    traced (BERT's has strides (0, T, 1, 0))."""
    b, _, t, _ = q.shape
    mask = keep[None, None, :, None].expand(b, 1, t, t)
    return F.scaled_dot_product_attention(q, q, q, attn_mask=mask)


def test_a_mask_broadcast_along_the_keys_is_copied_where_fused_attention_needs_rows(
    monkeypatch,
):
    """On the GPU, cuDNN's and the memory-efficient attention refuse a mask whose last
    stride is 0, and torch's choice falls to the math path (performance/attention_masks.py):
    the mask is copied first there. The CPU's flash attention takes the broadcast mask, so
    the copy is made only on the devices that need it; here the CPU is made one of them,
    and the ATen trace copies the mask before torch's attention."""
    q, keep = torch.randn(2, 4, 8, 16), torch.arange(8) % 3 > 0  # queries 0, 3, 6 see nothing

    def copies(devices) -> list:
        monkeypatch.setattr(attention_masks, "ROWS_IN_MEMORY", devices)
        keep_graphs = KeepGraphs()
        compiled = stage4_fx.compile(attention_with_a_traced_mask, backend=keep_graphs)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            assert_same_as_eager(
                compiled, attention_with_a_traced_mask, q, keep, atol=1e-2, rtol=1e-2
            )
        assert_kernels_ran(keep_graphs.graphs)
        ((part,),) = [g.parts for g in keep_graphs.graphs]
        return [n.args[0].target for n in part.gm.graph.nodes if n.target == "clone"]

    assert copies(set()) == []
    assert copies({"cpu"}) == ["expand"]
