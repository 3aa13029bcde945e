"""Autocast through the frontend: around the compiled call, or entered inside it.

Eager is the oracle for the dtypes autocast picks and the values. Ambient autocast is
guarded (stage 3's AUTOCAST guard: enabled and dtype per device type) and leaves no trace in
the graph; `with torch.autocast(...)` inside the compiled code becomes
`_enter_autocast`/`_exit_autocast` nodes (stage2_symbolic_vm/torch_api/autocast.py), as in
torch/_dynamo's graphs. What the VM does not model (autocast on a device type it does not
follow) is a graph break with a reason, never a wrong answer.
"""

import warnings

import pytest
import torch
import torch.nn.functional as F
from torch.amp.autocast_mode import _enter_autocast, _exit_autocast

import stage4_fx
from stage3_guards import counters
from tests.oracle import assert_same_as_eager

BACKENDS = ["eager", "aot_eager"]
LOWER = [torch.bfloat16, torch.float16]  # the dtypes CPU autocast supports

X = torch.randn(4, 8)
W = torch.randn(8, 8)


pytestmark = pytest.mark.usefixtures("fresh_compiles")  # tests/conftest.py


class Block(torch.nn.Module):
    """A linear (autocast's lower precision), then a layer norm, a softmax and an add."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)
        self.norm = torch.nn.LayerNorm(8)

    def forward(self, x):
        h = self.fc(x)
        return self.norm(h).softmax(-1) + h, h.dtype


def capture_graphs(gms):
    def backend(gm, example_inputs):
        gms.append(gm)
        return gm

    return backend


def targets(gm) -> list:
    return [node.target for node in gm.graph.nodes]


# --- autocast around the call -----------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", LOWER)
def test_ambient_autocast_around_a_module_gives_eagers_dtypes_in_one_graph(backend, dtype):
    model = Block()
    with torch.autocast("cpu", dtype=dtype):
        expected = assert_same_as_eager(stage4_fx.compile(model, backend=backend), model, X)
        report = stage4_fx.explain(model)(X)
    assert expected[1] == dtype  # autocast really acted
    assert report.graph_count == 1 and report.graph_break_count == 0
    assert _enter_autocast not in targets(report.graphs[0])  # ambient: guarded, not recorded


def test_ambient_autocast_is_guarded_by_enabled_and_dtype_and_recompiles_once_per_state():
    def fn(x, w):
        return (x @ w).relu(), torch.is_autocast_enabled("cpu")

    compiled = stage4_fx.compile(fn, backend="eager", fullgraph=True)
    compiled(X, W)
    states = [torch.bfloat16, torch.float16, None]
    for dtype in states:
        enabled = dtype is not None
        with torch.autocast("cpu", dtype=dtype or torch.bfloat16, enabled=enabled):
            result = assert_same_as_eager(compiled, fn, X, W)
        assert result[0].dtype == (dtype or torch.float32)
    assert counters.compiled == 3 and counters.recompiles == 2  # none, bf16, fp16; none again hits
    for dtype in states:
        with torch.autocast("cpu", dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            assert_same_as_eager(compiled, fn, X, W)
    assert counters.compiled == 3  # every state seen before: no compile
    guards = [str(g) for f in compiled.options.frames for g in f.guards.guards]
    assert any("AUTOCAST" in g and "bfloat16" in g for g in guards)


# --- autocast entered inside the compiled function --------------------------------------


@torch.autocast("cpu", dtype=torch.bfloat16)
def matmul_in_bf16(a, b):
    return a @ b


def with_autocast(x, w):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = x @ w
    return y, y.float().softmax(-1), torch.mm(x, w)


def with_amp_autocast(x, w):
    with torch.amp.autocast("cpu", dtype=torch.float16):
        y = F.linear(x, w).relu()
        z = y.sum(-1)
    return y, z


def decorated_at_module_level(x, w):
    return matmul_in_bf16(x, w).relu() + 1


def decorated_inside(x, w):
    def scaled_mm(a, b):
        return (a @ b) * 2

    return torch.autocast("cpu", dtype=torch.bfloat16)(scaled_mm)(x, w).sum()


def cpu_amp_autocast(x, w):
    with torch.cpu.amp.autocast(dtype=torch.bfloat16):
        return x @ w


def cuda_amp_autocast(x, w):
    with torch.cuda.amp.autocast():  # no CUDA here: torch warns and leaves autocast off
        return x @ w, torch.is_autocast_enabled("cuda")


def rotary_in_float32(x, w):
    """The Llama rotary embedding: the frequencies in float32 inside a bfloat16 region."""
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h = x @ w
        with torch.autocast(device_type=x.device.type, enabled=False):
            freqs = x.float() @ w.float().T
            inner = torch.is_autocast_enabled("cpu")
        emb = torch.cat((freqs, freqs), dim=-1)
        return h, emb.cos(), h @ w, inner


def queries_inside_and_after(x, w):
    with torch.autocast("cpu", dtype=torch.float16):
        inside = torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")
        y = x @ w
    after = torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")
    return y, inside, after


def bound_manager(x, w):
    with torch.autocast("cpu", dtype=torch.bfloat16) as ac:
        y = x @ w
    return y, ac.fast_dtype, ac.device


DEPRECATED = pytest.mark.filterwarnings(
    "ignore:`torch.(cpu|cuda).amp.autocast:FutureWarning",
    "ignore:CUDA is not available:UserWarning",
)

ENTERED = [
    with_autocast,
    with_amp_autocast,
    decorated_at_module_level,
    decorated_inside,
    pytest.param(cpu_amp_autocast, marks=DEPRECATED),
    pytest.param(cuda_amp_autocast, marks=DEPRECATED),
    rotary_in_float32,
    queries_inside_and_after,
    bound_manager,
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", ENTERED)
def test_autocast_entered_inside_is_one_graph_with_enter_and_exit_nodes(fn, backend):
    gms = []
    compiled = stage4_fx.compile(fn, backend=capture_graphs(gms), fullgraph=True)
    assert_same_as_eager(compiled, fn, X, W)
    (gm,) = gms
    assert _enter_autocast in targets(gm) and _exit_autocast in targets(gm)
    assert targets(gm).count(_enter_autocast) == targets(gm).count(_exit_autocast)
    assert_same_as_eager(stage4_fx.compile(fn, backend=backend, fullgraph=True), fn, X, W)
    report = stage4_fx.explain(fn)(X, W)
    assert report.graph_count == 1 and report.graph_break_count == 0
    assert not torch.is_autocast_enabled("cpu")  # the compiled call left autocast as it was


def test_the_entered_regions_really_change_dtypes():
    """The table above is not comparing float32 with float32: eager's dtypes, checked."""
    assert with_autocast(X, W)[0].dtype == torch.bfloat16
    assert with_amp_autocast(X, W)[0].dtype == torch.float16
    h, emb, hw, inner = rotary_in_float32(X, W)
    assert (h.dtype, emb.dtype, hw.dtype, inner) == (
        torch.bfloat16,
        torch.float32,
        torch.bfloat16,
        False,
    )
    assert queries_inside_and_after(X, W)[1:] == ((True, torch.float16), (False, torch.bfloat16))


def test_the_nested_disabled_region_is_recorded_as_its_own_enter_and_exit():
    gms = []
    stage4_fx.compile(rotary_in_float32, backend=capture_graphs(gms), fullgraph=True)(X, W)
    enters = [n.args for n in gms[0].graph.nodes if n.target is _enter_autocast]
    assert [(device, enabled) for device, _, enabled, _ in enters] == [
        ("cpu", True),
        ("cpu", False),
    ]


class Stop(Exception):
    pass


def raises_inside(x, w):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        if (x @ w).dtype == torch.bfloat16:
            raise Stop


def caught_outside(x, w):
    """The exception leaves a region entered in an inlined call."""
    try:
        raises_inside(x, w)
    except Stop:
        caught = torch.is_autocast_enabled("cpu")
    return x @ w, caught, torch.is_autocast_enabled("cpu")


def caught_in_the_same_frame(x, w):
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = x @ w
            if y.dtype == torch.bfloat16:
                raise Stop
    except Stop:
        caught = torch.is_autocast_enabled("cpu")
    return x @ w, caught


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [caught_outside, caught_in_the_same_frame])
def test_an_exception_leaving_the_region_restores_autocast_as_in_eager(fn, backend):
    result = assert_same_as_eager(stage4_fx.compile(fn, backend=backend), fn, X, W)
    assert result[0].dtype == torch.float32 and result[1] is False
    assert not torch.is_autocast_enabled("cpu")
    report = stage4_fx.explain(fn)(X, W)  # traced, the raise and the handler included
    assert report.graph_count == 1 and report.graph_break_count == 0


def test_an_exception_out_of_the_compiled_region_leaves_autocast_off():
    assert_same_as_eager(stage4_fx.compile(raises_inside), raises_inside, X, W)
    assert not torch.is_autocast_enabled("cpu")
    assert torch.get_autocast_dtype("cpu") == torch.bfloat16


# --- bad input and what the VM does not model -------------------------------------------


def bad_device_type(x):
    with torch.autocast(device_type=3):
        return x @ x


def test_a_bad_device_type_raises_eagers_exception():
    with pytest.raises(ValueError):
        bad_device_type(W)
    assert_same_as_eager(stage4_fx.compile(bad_device_type), bad_device_type, W)


def float64_autocast(x, w):
    with torch.autocast("cpu", dtype=torch.float64):  # not supported: torch warns, disables
        return x @ w, torch.is_autocast_enabled("cpu")


def test_an_unsupported_dtype_disables_autocast_as_in_eager():
    with pytest.warns(UserWarning, match="target dtype is not supported"):
        result = assert_same_as_eager(
            stage4_fx.compile(float64_autocast, fullgraph=True), float64_autocast, X, W
        )
    assert result[0].dtype == torch.float32 and result[1] is False


@pytest.mark.parametrize("device", ["mps", "xpu"])
def test_autocast_on_a_device_type_the_vm_does_not_follow_is_a_break_with_a_reason(device):
    def fn(x, w):
        y = x.sin()
        with torch.autocast(device):  # on CPU tensors eager computes in float32
            return y @ w

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a device type not built in, on some builds
        assert_same_as_eager(stage4_fx.compile(fn), fn, X, W)
        report = stage4_fx.explain(fn)(X, W)
    assert report.graph_break_count == 1
    assert f"autocast on {device!r} is not traced" in report.break_reasons[0].reason


def break_inside_region(x, w):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = x @ w
        print("", end="")
        return y + (x @ w), torch.is_autocast_enabled("cpu")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_graph_break_inside_the_region_gives_eagers_answer_and_a_reason(backend):
    result = assert_same_as_eager(
        stage4_fx.compile(break_inside_region, backend=backend), break_inside_region, X, W
    )
    assert result[0].dtype == torch.bfloat16
    report = stage4_fx.explain(break_inside_region)(X, W)
    assert report.graph_break_count >= 1
    assert any("print" in b.reason for b in report.break_reasons)
    assert not torch.is_autocast_enabled("cpu")
