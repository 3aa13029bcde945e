"""`mode="reduce-overhead"`: recorded calls replay and still equal eager (cudagraphs.py).

On "cpu" the recording is the stand-in that runs the call again and writes the recorded
outputs in place (`Rerun`), so every rule of the runner is tested in CI; on "cuda" the
same tests record real CUDA graphs.
"""

import pytest
import torch
from hypothesis import assume, given, note, settings

import stage4_fx
import stage6_inductor_triton
from stage6_inductor_triton import compile_fx
from stage6_inductor_triton.performance.cudagraphs import CannotRecord, CudaGraphRunner
from tests.stage5.helpers import as_python_function
from tests.stage5.programs import programs, tolerances
from tests.stage6.helpers import DEVICES


def recording_backend():
    """The inductor in reduce-overhead mode, and the graphs it compiled."""
    made = []

    def backend(gm, example_inputs, mode):
        made.append(compile_fx(gm, example_inputs, mode=mode))
        return made[-1]

    backend.modes = ("default", "reduce-overhead")
    return backend, made


def runners(made) -> list[CudaGraphRunner]:
    graphs = [part for g in made for part in (g.parts or [g])]
    return [g.last.call for g in graphs if isinstance(g.last.call, CudaGraphRunner)]


def replays(made) -> int:
    return sum(r.replays for r in runners(made))


@pytest.mark.parametrize("device", DEVICES)
def test_outputs_kept_by_the_caller_are_never_written_over(device):
    """Every output kept in a list keeps its values: the call that finds one held records
    again into new memory, and that output is cloned after each later replay."""
    backend, made = recording_backend()
    weight = torch.randn(4, 3, device=device)
    compiled = stage4_fx.compile(
        lambda x: (x @ weight).relu() + 1, backend=backend, mode="reduce-overhead"
    )
    inputs = [torch.randn(5, 4, device=device) for _ in range(6)]
    kept = [compiled(x) for x in inputs[:3]]
    del kept[1]  # the recording's own output, dropped: the next calls may replay
    kept += [compiled(x) for x in inputs[3:]]
    expected = [(x @ weight).relu() + 1 for x in inputs]
    for actual, e in zip(kept, [expected[0], *expected[2:]], strict=True):
        torch.testing.assert_close(actual, e)
    (runner,) = runners(made)
    assert runner.replays == 5 and runner.recordings == 2
    assert made[0].cudagraph_reasons == [
        "recorded again: the caller holds an output of the last replay"
    ]


@pytest.mark.parametrize("device", DEVICES)
def test_training_steps_replay_both_graphs_and_equal_eager(device):
    """Forward and backward replay; losses, gradients and weights after SGD steps equal
    eager's, with the caller keeping each step's output as a training loop does."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(6, 8), torch.nn.LayerNorm(8), torch.nn.GELU(), torch.nn.Linear(8, 2)
    ).to(device)
    eager = torch.nn.Sequential(
        torch.nn.Linear(6, 8), torch.nn.LayerNorm(8), torch.nn.GELU(), torch.nn.Linear(8, 2)
    ).to(device)
    eager.load_state_dict(model.state_dict())
    backend, made = recording_backend()
    compiled = stage4_fx.compile(model, backend=backend, mode="reduce-overhead")
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, eager)]
    for _ in range(6):
        x = torch.randn(3, 6, device=device)
        out, expected = compiled(x), eager(x)
        torch.testing.assert_close(out, expected)
        out.square().sum().backward()
        expected.square().sum().backward()
        for p, e in zip(model.parameters(), eager.parameters(), strict=True):
            torch.testing.assert_close(p.grad, e.grad)
        for optimizer in optimizers:
            optimizer.step()
            optimizer.zero_grad()
    for p, e in zip(model.parameters(), eager.parameters(), strict=True):
        torch.testing.assert_close(p, e)
    assert made[0].torch_reasons == []
    assert len(runners(made)) == 2 and all(r.replays >= 3 for r in runners(made))


@pytest.mark.parametrize("device", DEVICES)
def test_gradients_accumulate_over_steps_without_zero_grad(device):
    """A gradient kept in `.grad` (AccumulateGrad may take the backward's output itself)
    is not written over by the next backward's replay."""
    torch.manual_seed(0)
    model, eager = (torch.nn.Linear(4, 4).to(device) for _ in range(2))
    eager.load_state_dict(model.state_dict())
    backend, made = recording_backend()
    compiled = stage4_fx.compile(model, backend=backend, mode="reduce-overhead")
    for _ in range(5):
        x = torch.randn(2, 4, device=device)
        compiled(x).tanh().sum().backward()
        eager(x).tanh().sum().backward()
    torch.testing.assert_close(model.weight.grad, eager.weight.grad)
    torch.testing.assert_close(model.bias.grad, eager.bias.grad)
    assert replays(made) >= 2


@pytest.mark.parametrize("device", DEVICES)
def test_two_forwards_before_their_backwards(device):
    """The first forward's saved tensors are still needed when the second runs: the second
    does not replay over them, and both backwards equal eager's."""
    torch.manual_seed(0)
    model, eager = (torch.nn.Linear(4, 4).to(device) for _ in range(2))
    eager.load_state_dict(model.state_dict())
    backend, _ = recording_backend()
    compiled = stage4_fx.compile(lambda x: model(x).sin(), backend=backend, mode="reduce-overhead")
    for _ in range(4):
        xs = [torch.randn(2, 4, device=device) for _ in range(2)]
        losses = [compiled(x).square().sum() for x in xs]
        for loss in reversed(losses):
            loss.backward()
        for x in xs:
            eager(x).sin().square().sum().backward()
        torch.testing.assert_close(model.weight.grad, eager.weight.grad)


@pytest.mark.parametrize("device", DEVICES)
def test_a_replaced_parameter_is_recorded_again(device):
    """`module.weight = nn.Parameter(...)` moves an input read in place: the next call
    records again rather than read the old weight's memory."""
    model = torch.nn.Linear(3, 2).to(device)
    backend, made = recording_backend()
    compiled = stage4_fx.compile(model, backend=backend, mode="reduce-overhead")
    x = torch.randn(4, 3, device=device)
    with torch.no_grad():
        for _ in range(3):
            compiled(x)
        model.weight = torch.nn.Parameter(torch.randn(2, 3, device=device))
        for _ in range(2):
            torch.testing.assert_close(compiled(x), model(x))
    (runner,) = runners(made)
    assert runner.recordings == 2 and runner.replays >= 3


@pytest.mark.parametrize("device", DEVICES)
def test_aliases_and_writes_of_copied_inputs_reach_the_callers_tensors(device):
    """An input that is copied into the recording's buffer: the graph's write into it
    lands in the caller's tensor (its version bumped), and an output that is a view of it
    is a view of the caller's tensor, as in eager."""

    def fn(x, y):
        x.add_(y)
        return x.t(), x * 2

    gm = torch.fx.symbolic_trace(fn)
    compiled = compile_fx(gm, [torch.zeros(2, 3, device=device)] * 2, mode="reduce-overhead")
    for _ in range(4):
        x, y = torch.randn(2, 3, device=device), torch.randn(2, 3, device=device)
        expected_x = x + y
        version = x._version
        view, doubled = compiled(x, y)
        torch.testing.assert_close(x, expected_x)
        assert x._version > version
        assert view.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
        torch.testing.assert_close(doubled, expected_x * 2)
    assert compiled.last.call.replays >= 2


def test_a_mode_the_inductor_does_not_have_is_refused_at_once():
    with pytest.raises(ValueError, match="has the modes"):
        stage4_fx.compile(lambda x: x.sin(), backend="inductor", mode="max-autotune")
    with pytest.raises(ValueError, match="has the modes"):
        stage6_inductor_triton.compile(lambda x: x.sin(), mode="max-autotune")


def test_cpu_tensors_through_inductor_run_their_cpp_kernels_and_say_why(caplog):
    compiled = stage6_inductor_triton.compile(lambda x: x.sin() * 2, mode="reduce-overhead")
    x = torch.randn(8)
    with caplog.at_level("INFO", logger="minidynamo.kernels"):
        for _ in range(3):
            torch.testing.assert_close(compiled(x), x.sin() * 2)
    assert "records CUDA graphs" in caplog.text


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=10)
@given(program=programs())
def test_random_programs_replay_as_eager(program, device):
    """Stage 5's random programs (writes into inputs included), called five times on new
    inputs: every result the caller keeps equals eager's on its inputs."""
    fn, inputs = program
    note(fn.__qualname__)
    flat = as_python_function(fn, len(inputs))
    calls = [[t.flatten().roll(k).view(t.shape).to(device) for t in inputs] for k in range(5)]
    expected = []
    for args in calls:
        mine = [t.clone() for t in args]
        try:
            expected.append((fn(*mine), mine))
        except Exception:  # eager rejects the program: nothing to compare
            assume(False)
    compiled = compile_fx(torch.fx.symbolic_trace(flat), calls[0], mode="reduce-overhead")
    results = [compiled(*calls[0]), compiled(*calls[1])]
    results.append(compiled(*calls[2]))  # the second call's outputs are kept: as it is
    results += [compiled(*args) for args in calls[3:]]
    close = tolerances(fn, inputs)
    for result, args, (eager_result, eager_args) in zip(results, calls, expected, strict=True):
        torch.testing.assert_close(result, eager_result, equal_nan=True, **close)
        torch.testing.assert_close(args, eager_args, equal_nan=True, **close)
    runner = getattr(compiled.last, "call", None)
    if isinstance(runner, CudaGraphRunner) and not compiled.torch_reasons:  # its kernels ran
        assert runner.replays >= 1


@pytest.mark.parametrize("device", DEVICES)
def test_a_weight_changed_in_place_between_replays_is_read_anew(device):
    """Inference converts an unchanging convolution weight to channels-last once (stage 5's
    layouts.py); a recording must read the weight itself, or a replay would keep using the
    copy after `load_state_dict` wrote new weights in place."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU()).to(device).eval()
    model = model.to(memory_format=torch.channels_last)
    backend, made = recording_backend()
    compiled = stage4_fx.compile(model, backend=backend, mode="reduce-overhead")
    x = torch.randn(2, 3, 8, 8, device=device).to(memory_format=torch.channels_last)
    with torch.no_grad():
        for _ in range(4):
            torch.testing.assert_close(compiled(x), model(x))
        model[0].weight.mul_(-1)
        torch.testing.assert_close(compiled(x), model(x))
    assert replays(made) >= 3


def test_a_call_that_cannot_be_recorded_runs_as_it_is_and_says_why(monkeypatch):
    class Refuses:  # as CudaGraph says of a call that syncs
        def __init__(self, call, inputs):
            raise CannotRecord("the call waits for the GPU")

    monkeypatch.setattr(stage6_inductor_triton.backend, "Rerun", Refuses)
    x = torch.randn(8)
    compiled = compile_fx(
        torch.fx.symbolic_trace(lambda x: x.exp() + 1), [x], mode="reduce-overhead"
    )
    for _ in range(3):
        torch.testing.assert_close(compiled(x), x.exp() + 1)
    assert compiled.cudagraph_reasons == ["the call cannot be recorded: the call waits for the GPU"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA refuses to record a sync")
def test_a_call_that_syncs_is_not_recorded_and_says_why():
    """`torch.linalg.inv` reads its error flag on the host, which a CUDA graph cannot record:
    the warm-up finds the sync before any capture (a failed capture would leave the CUDA
    generator capturing), and the specialisation runs its kernels as they are."""

    def fn(x):
        return torch.linalg.inv(x) * 2

    x = torch.randn(8, 8, device="cuda") + 8 * torch.eye(8, device="cuda")
    compiled = compile_fx(torch.fx.symbolic_trace(fn), [x], mode="reduce-overhead")
    for _ in range(4):
        x = torch.randn(8, 8, device="cuda") + 8 * torch.eye(8, device="cuda")
        torch.testing.assert_close(compiled(x), fn(x))
    assert compiled.last.call.reason.startswith("the call cannot be recorded: the call waits")
    assert compiled.cudagraph_reasons == [compiled.last.call.reason]
    torch.randn(3, device="cuda")  # the CUDA generator is not left in a capture


@pytest.mark.parametrize("device", DEVICES)
def test_an_input_passed_again_is_read_in_place_until_it_moves(device):
    """The same tensor at the same address at the first two calls (a module's buffer, a
    fixed input) is read in place; once a call passes another, it is copied from the next
    recording on, and replays go on."""
    x = torch.randn(16, device=device)
    compiled = compile_fx(torch.fx.symbolic_trace(lambda x: x * 2 + 1), [x], mode="reduce-overhead")
    for _ in range(3):
        torch.testing.assert_close(compiled(x), x * 2 + 1)
    runner = compiled.last.call
    assert list(runner.recording.in_place) == [0] and runner.replays == 2
    for _ in range(3):
        x = torch.randn(16, device=device)
        torch.testing.assert_close(compiled(x), x * 2 + 1)
    assert runner.demoted == {0} and runner.recordings == 2 and runner.replays == 5


@pytest.mark.parametrize("device", DEVICES)
def test_batch_norm_training_replays_and_updates_its_statistics(device):
    """A training batch norm's running statistics (buffers, read in place) come back as
    eager leaves them after replayed steps; weights after SGD steps equal eager's."""
    torch.manual_seed(0)

    def make():
        return torch.nn.Sequential(
            torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU()
        ).to(device)

    model, eager = make(), make()
    eager.load_state_dict(model.state_dict())
    backend, made = recording_backend()
    compiled = stage4_fx.compile(model, backend=backend, mode="reduce-overhead")
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, eager)]
    for _ in range(5):
        x = torch.randn(2, 3, 8, 8, device=device)
        compiled(x).square().mean().backward()
        eager(x).square().mean().backward()
        for optimizer in optimizers:
            optimizer.step()
            optimizer.zero_grad()
    for (name, ours), theirs in zip(
        model.state_dict().items(), eager.state_dict().values(), strict=True
    ):
        torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-4, msg=name)
    assert all(r.replays >= 3 for r in runners(made)), [r.replays for r in runners(made)]
