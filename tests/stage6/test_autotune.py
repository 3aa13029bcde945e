"""Autotuning: the configurations tried, the winner cached in memory and on disk."""

import json

import pytest
import torch

from stage6_inductor_triton import launcher as launcher_module
from stage6_inductor_triton.codegen_triton import KernelShape
from stage6_inductor_triton.launcher import Config, KernelLauncher, grid
from stage6_inductor_triton.performance import autotune
from stage6_inductor_triton.performance.autotune import configs_for
from stage6_inductor_triton.runtime import source_dir
from tests.stage5.helpers import kernel_logs


def test_configurations_fit_the_kernel():
    assert configs_for(KernelShape(2**26, None, False))[0] == Config(1024, None, 4)
    assert {c.XBLOCK for c in configs_for(KernelShape(10, None, False))} == {16}
    both = configs_for(KernelShape(8192, 8192, True), has_looped=True)
    assert all(c.RBLOCK == 8192 and c.XBLOCK <= 2 for c in both if not c.looped)
    assert all(c.RBLOCK < 8192 for c in both if c.looped) and not both[0].looped
    assert all(c.RBLOCK == 128 for c in configs_for(KernelShape(1000, 100, True)))
    looped = configs_for(KernelShape(4, 10**6, False))  # the kernel itself loops
    assert all(c.RBLOCK < 10**6 and c.XBLOCK <= 4 and not c.looped for c in looped)


def test_a_persistent_kernel_without_a_looped_variant_gets_whole_rows():
    """Launched with RBLOCK=512, the persistent kernel of a 768-long row normalized half of
    each row (BERT-base's layer norm on the GPU, which the tuner found fastest)."""
    configs = configs_for(KernelShape(8192, 768, True))
    assert configs and all(c.RBLOCK >= 768 and not c.looped for c in configs)


def test_every_configuration_gives_eagers_answer():
    """The interpreter runs only the first configuration; here every one the tuner may
    pick runs: a row that fits (768), and one with a looped variant too (2000)."""
    import torch
    import torch.fx
    import torch.nn.functional as F

    import stage6_inductor_triton

    def layer_norm(x, w, b):
        return F.layer_norm(x, (x.shape[-1],), w, b)

    for n in (768, 2000):
        args = [torch.randn(8, n), torch.randn(n), torch.randn(n)]
        compiled = stage6_inductor_triton.compile_fx(torch.fx.symbolic_trace(layer_norm), args)
        expected = layer_norm(*args)
        (name,) = compiled.last.kernel_names
        launcher = compiled.last.call.__globals__[name]
        assert any(c.looped for c in launcher.configs) == (n > 1024)
        for config in launcher.configs:
            launcher.config = config
            torch.testing.assert_close(
                compiled(*args), expected, msg=lambda m, c=config: f"{c}: {m}"
            )


def test_a_reduction_across_rows_in_memory_gets_blocks_wide_across_rows():
    """A channels-last image's per-channel sums load channel c at c + C * pixel: with one
    row (channel) per block, each lane reads 4 bytes of its own 32-byte sector. Blocks of
    16 to 128 neighbouring channels are tried instead, and give eager's answer. A sum
    along memory is not offered them, nor one that also reads an image along its rows."""
    import torch.fx

    import stage6_inductor_triton

    images = torch.randn(4, 64, 24, 24).to(memory_format=torch.channels_last)
    cases = [
        (lambda t: t.sum((0, 2, 3)), [images], True),
        (lambda t: t.sum(-1), [torch.randn(64, 20000)], False),
        (lambda t, u: (t + u).sum((0, 2, 3)), [images, images.contiguous()], False),
    ]
    for fn, args, across in cases:
        compiled = stage6_inductor_triton.compile_fx(torch.fx.symbolic_trace(fn), args)
        (name,) = compiled.last.kernel_names
        launcher = compiled.last.call.__globals__[name]
        assert any((c.XBLOCK, c.RBLOCK) == (64, 16) for c in launcher.configs) == across
        for config in [c for c in launcher.configs if c.looped and c.XBLOCK >= 16]:
            launcher.config = config
            close = dict(atol=1e-3, rtol=1e-4)  # sums of 2304 floats, in another order
            torch.testing.assert_close(
                compiled(*args), fn(*args), **close, msg=lambda m, c=config: f"{c}: {m}"
            )


def test_timing_runs_on_copies_of_what_the_kernel_writes(fake_timer):
    """A write-back kernel reads and writes a graph input: a hundred timed runs on the input
    itself would add one a hundred times (`a.add_(1)` gave 4333 on the GPU)."""
    import torch

    kernel, calls = fake_timer
    seen = []

    class Recording(FakeKernel):
        def __getitem__(self, grid):
            def launch(*args, **meta):
                seen.append(args)
                kernel.launches.append((grid, meta))

            return launch

    written, read = torch.zeros(4), torch.ones(4)
    configs = [*configs_for(KernelShape(4, None, False)), Config(2048, None, 4)]
    launcher = KernelLauncher("k", {False: Recording()}, "src", configs, "GPU", written=(0,))
    launcher.run(written, read, grid=grid(4))
    timed, real = seen[:-1], seen[-1]
    assert calls and all(args[0] is not written and args[1] is read for args in timed)
    assert real[0] is written


def test_grid_has_one_program_per_block():
    assert grid(1000)({"XBLOCK": 256}) == (4,)


class FakeKernel:
    """Records launches; `fn[grid](*args, XBLOCK=..., num_warps=...)` as Triton's."""

    def __init__(self):
        self.launches = []

    def __getitem__(self, grid):
        return lambda *args, **meta: self.launches.append((grid, meta))


@pytest.fixture
def fake_timer(monkeypatch):
    """do_bench that reports XBLOCK=2048 as the fastest, and counts its calls."""
    calls = []

    def do_bench(fn, **kwargs):
        fn()
        calls.append(1)
        return 1.0 if kernel.launches[-1][1]["XBLOCK"] == 2048 else 2.0

    kernel = FakeKernel()
    monkeypatch.setattr(autotune.triton.testing, "do_bench", do_bench)
    monkeypatch.setattr(autotune, "BEST", {})
    return kernel, calls


def test_tunes_once_then_remembers_in_memory_and_on_disk(fake_timer):
    kernel, calls = fake_timer
    configs = configs_for(KernelShape(2**20, None, False))
    launcher = KernelLauncher("k", {False: kernel}, "source", configs, "Some GPU")
    launcher.run("a", "b", grid=grid(2**20))
    assert launcher.config.XBLOCK == 2048 and len(calls) == len(configs)
    assert kernel.launches[-1] == (
        (512,),
        {"XBLOCK": 2048, "num_warps": 8, **launcher_module.EAGER_NUMERICS},
    )
    again = KernelLauncher("k", {False: kernel}, "source", configs, "Some GPU")
    again.run("a", "b", grid=grid(2**20))
    assert len(calls) == len(configs)  # the memory cache answered
    autotune.BEST.clear()
    before = autotune.stats["from_disk"]
    KernelLauncher("k", {False: kernel}, "source", configs, "Some GPU").run("a", grid=grid(2**20))
    assert autotune.stats["from_disk"] == before + 1 and len(calls) == len(configs)
    other_gpu = KernelLauncher("k", {False: kernel}, "source", configs, "Another GPU")
    other_gpu.run("a", grid=grid(2**20))
    assert len(calls) == 2 * len(configs)  # another GPU tunes again


def test_the_interpreter_takes_the_first_configuration(fake_timer):
    kernel, calls = fake_timer
    configs = configs_for(KernelShape(2**20, None, False))
    launcher = KernelLauncher("k", {False: kernel}, "source", configs, "interpreter")
    launcher.run("a", grid=grid(2**20))
    assert launcher.config == configs[0] and not calls


@pytest.mark.parametrize(
    "damage", ['{"XBLOCK": 2048, "RBL', "[]", '{"XBLOCK": 3, "RBLOCK": null, "num_warps": 1}']
)
def test_a_damaged_choice_on_disk_is_tuned_again(damage, fake_timer):
    """A file cut short, or not a configuration of this kernel, raised from json or launched
    a configuration the kernel was never meant for."""
    kernel, calls = fake_timer
    configs = configs_for(KernelShape(2**20, None, False))
    launcher = KernelLauncher("k", {False: kernel}, f"source {damage}", configs, "Some GPU")
    path = source_dir() / "autotune" / f"{launcher.key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(damage)
    with kernel_logs() as messages:
        launcher.run("a", grid=grid(2**20))
    assert launcher.config.XBLOCK == 2048 and len(calls) == len(configs)
    assert any("is damaged" in m for m in messages)
    assert json.loads(path.read_text())["XBLOCK"] == 2048


class FakeBinary:
    """What `kernel[grid](...)` returns on a GPU: a compiled kernel with its launcher."""

    function, packed_metadata = "function", "metadata"

    def __init__(self):
        self.runs = []

    def launch_metadata(self, grid, stream, *args):
        return ("metadata for", grid, stream)

    def run(self, *arguments):
        self.runs.append(arguments)


class Pointer:
    def __init__(self, address):
        self.address = address

    def data_ptr(self):
        return self.address


def launcher_of(binary, through_triton: list, monkeypatch) -> KernelLauncher:
    """A launcher of one configuration whose kernel, launched through Triton, records its
    arguments in `through_triton` and returns `binary`."""

    class Kernel:
        def __getitem__(self, grid):
            return lambda *args, **meta: through_triton.append(args) or binary

    monkeypatch.setattr(launcher_module, "current_stream", lambda: "stream")
    config = Config(XBLOCK=1024, RBLOCK=None, num_warps=4)
    return KernelLauncher("k", {False: Kernel()}, "source", [config], "Some GPU")


def test_later_launches_call_the_binary_until_the_specialisation_changes(monkeypatch):
    """The first launch goes through Triton (which compiles and returns the binary); later
    ones call the binary's launcher directly, with the constexprs after the arguments; a
    pointer that is no longer 16-byte aligned needs another binary: through Triton again."""
    binary, through_triton = FakeBinary(), []
    launcher = launcher_of(binary, through_triton, monkeypatch)
    aligned, odd = Pointer(4096), Pointer(4100)
    for args in ((aligned, aligned), (aligned, aligned), (aligned, odd), (aligned, odd)):
        launcher.run(*args, grid=grid(2**20))
    assert through_triton == [(aligned, aligned), (aligned, odd)]
    launch = (1024, 1, 1, "stream", "function", "metadata", None, None, None)  # no hooks
    assert binary.runs == [(*launch, aligned, aligned, 1024), (*launch, aligned, odd, 1024)]
    # a profiler's hook is passed on, with the launch metadata it is called with
    hooks = launcher_module.triton.knobs.runtime
    hooks.launch_enter_hook.add(hook := lambda metadata: None)
    try:
        launcher.run(aligned, odd, grid=grid(2**20))
    finally:
        hooks.launch_enter_hook.remove(hook)
    assert binary.runs[-1][7:9] == (hooks.launch_enter_hook, None)
    assert binary.runs[-1][6] == ("metadata for", (1024,), "stream")


class FakeLauncher:
    """A compiled binary's launcher as Triton 3.6 makes it: its C `launch`, and what the
    Python `__call__` around it passes (no scratch memory, no cooperative grid)."""

    global_scratch_size = profile_scratch_size = 0
    launch_cooperative_grid = launch_pdl = False

    def __init__(self):
        self.launches = []

    def launch(self, *arguments):
        self.launches.append(arguments)


def test_aligned_tensor_launches_call_the_c_launcher_directly(monkeypatch):
    """Once a configuration is chosen, a launch whose arguments are all tensors at 16-byte
    aligned addresses skips the specialisation key and Triton's Python `__call__`: the C
    launch gets what `__call__` would have passed it, with each tensor's address for the
    tensor (so the launcher neither calls `data_ptr()` again nor asks the driver about it).
    A misaligned tensor still needs its own binary, and later aligned launches keep the
    direct path."""
    launcher_of_binary = FakeLauncher()
    binary, through_triton = FakeBinary(), []
    binary.run = launcher_of_binary  # `CompiledKernel.run` is its launcher
    launcher = launcher_of(binary, through_triton, monkeypatch)
    a, b = torch.zeros(64), torch.zeros(64)
    odd = b[1:]  # 4 bytes past an aligned address
    for args in ((a, b), (a, b), (a, odd), (a, b), (a, odd)):
        launcher.run(*args, grid=grid(3000))
    assert through_triton == [(a, b), (a, odd)]
    fixed = (3, 1, 1, "stream", "function", False, False, None, None, "metadata", None, None, None)
    assert [call[13:] for call in launcher_of_binary.launches] == [
        (a.data_ptr(), b.data_ptr(), 1024),
        (a.data_ptr(), b.data_ptr(), 1024),
        (a, odd, 1024),  # the misaligned binary's launch, through `launch_compiled`
    ]
    assert all(call[:13] == fixed for call in launcher_of_binary.launches)


def test_a_binary_that_needs_scratch_memory_launches_through_tritons_call(monkeypatch):
    """Triton's Python `__call__` allocates a binary's scratch memory: such a binary's
    launches keep going through it, with the arguments `__call__` takes."""

    class ScratchLauncher(FakeLauncher):
        global_scratch_size = 64

        def __call__(self, *arguments):
            self.calls.append(arguments)

    launcher_of_binary = ScratchLauncher()
    launcher_of_binary.calls = []
    binary = FakeBinary()
    binary.run = launcher_of_binary
    launcher = launcher_of(binary, [], monkeypatch)
    a = torch.zeros(64)
    for _ in range(3):
        launcher.run(a, grid=grid(3000))
    fixed = (3, 1, 1, "stream", "function", "metadata", None, None, None, a.data_ptr(), 1024)
    assert launcher_of_binary.calls == [fixed, fixed] and launcher_of_binary.launches == []
