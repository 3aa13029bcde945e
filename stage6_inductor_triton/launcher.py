"""Launching a kernel: `kernel.run(*args, grid=grid(xnumel))` in the wrapper.

A kernel is generated with `XBLOCK` (and `RBLOCK`) as `tl.constexpr` parameters, so each
configuration (`Config`) is a separate compilation of the same source. `KernelLauncher`
launches the configuration chosen at the first launch (performance/autotune.py times a
few), and calls the binary Triton compiled for it directly, with as little Python per
launch as it can: the wrapper calls it hundreds of times a step. Kernels of CPU tensors
run under Triton's interpreter (runtime.py), typed for the GPU first
(checks/typecheck.py).
"""

import dataclasses
import functools
import hashlib
import warnings
from collections.abc import Callable
from math import gcd

import torch
import triton

from stage3_guards.generated import AST_LOCK
from stage4_fx.tools import progress

from .checks.typecheck import check_for_cuda, launch_types
from .performance import autotune, compile_pool
from .runtime import INTERPRETER_LOCK

# Compile options that keep torch's numerics on the GPU. No FMAs across ops: torch rounds
# each op's result (3e38 * 2 - 3e38 is inf), as stage 5's -ffp-contract=off (inductor lets
# Triton fuse unless it emulates eager's precision, `emulate_precision_casts`). And no
# flushing of denormals to zero in libdevice's functions (fma(1e-40, 2, 0) is 2e-40).
EAGER_NUMERICS = {"enable_fp_fusion": False, "enable_reflect_ftz": False}


@dataclasses.dataclass(frozen=True)
class Config:
    XBLOCK: int
    RBLOCK: int | None
    num_warps: int
    looped: bool = False  # launch the kernel's `_looped` variant (when a row also fits)

    @functools.cached_property  # read on every launch
    def meta(self) -> dict:
        """The kernel's `tl.constexpr` arguments."""
        return {"XBLOCK": self.XBLOCK} | ({"RBLOCK": self.RBLOCK} if self.RBLOCK else {})

    def __str__(self) -> str:
        items = [*self.meta.items(), ("num_warps", self.num_warps)]
        return ", ".join(f"{k}={v}" for k, v in items) + (" (looped)" if self.looped else "")


def grid(xnumel: int):
    """The launch grid of a configuration: one program per XBLOCK outer elements.
    (Plain integer division: `triton.cdiv` is a `constexpr_function`, whose wrapper costs
    time on each of a model's launches.)"""
    return lambda meta: ((xnumel + meta["XBLOCK"] - 1) // meta["XBLOCK"],)


def specialisation(args) -> tuple:
    """What Triton specialises a binary on, of our kernels' arguments (tensors, integers):
    a pointer's 16-byte alignment, an integer's being 1 or a multiple of 16."""
    return tuple(map(_specialisation, args))


def _specialisation(arg):
    if isinstance(arg, torch.Tensor):
        return arg.data_ptr() % 16 == 0
    return (arg == 1, arg % 16 == 0) if isinstance(arg, int) else arg


def current_stream():
    """The current CUDA stream, as a number: torch's, which Triton's driver also returns
    (inductor's wrappers call the same `_cuda_getCurrentRawStream`, once per call)."""
    return torch._C._cuda_getCurrentRawStream(torch._C._cuda_getDevice())


DATA_PTR = torch.Tensor.data_ptr


def is_tensor(arg) -> bool:
    return isinstance(arg, torch.Tensor)


def fast_launch(binary, config: Config):
    """`launch(args, grid)` of a compiled binary, with as little Python per launch as we can:
    its launcher's C `launch`, unless the binary needs scratch memory, which Triton's
    Python `__call__` allocates (inductor's StaticCudaLauncher goes further, in C++).

    The profiler's hooks are chains of functions it adds to; an empty chain is passed as
    None, which tells the launcher to call nothing, and then no launch metadata is built
    for them (a dict per launch, which JITFunction.run builds anyway)."""
    launcher, function, packed = binary.run, binary.function, binary.packed_metadata
    meta, xblock = tuple(config.meta.values()), config.XBLOCK  # the constexprs, in order
    hooks = triton.knobs.runtime
    # Triton 3.6's launcher: `__call__` allocates the scratch memory a binary may need,
    # then calls `launch` with the launch flags and the scratch pointers inserted.
    names = ("launch", "launch_cooperative_grid", "launch_pdl")
    direct = all(hasattr(launcher, name) for name in names) and not (
        getattr(launcher, "global_scratch_size", 1) or getattr(launcher, "profile_scratch_size", 1)
    )
    if direct:
        call = launcher.launch
        inserted = (launcher.launch_cooperative_grid, launcher.launch_pdl, None, None)
    else:
        call, inserted = launcher, ()

    def launch(args, grid):
        programs = grid({"XBLOCK": xblock})[0]
        stream = current_stream()
        enter = hooks.launch_enter_hook if hooks.launch_enter_hook.calls else None
        leave = hooks.launch_exit_hook if hooks.launch_exit_hook.calls else None
        bound = (*args, *meta)
        metadata = binary.launch_metadata((programs,), stream, *bound) if enter else None
        call(programs, 1, 1, stream, function, *inserted, packed, metadata, enter, leave, *bound)

    return launch


class KernelLauncher:
    """`kernel.run(*args, grid=grid(xnumel))` in the wrapper: picks a configuration, launches."""

    def __init__(self, name, fns, source, configs: list[Config], device: str, written=()):
        """`fns[looped]`: the kernel (and its `_looped` variant); `device`: the GPU's name;
        `written`: the positions of the arguments the kernel stores into."""
        self.name, self.fns, self.configs, self.written = name, fns, configs, written
        self.interpreted = device == "interpreter"
        text = "\n".join([source, repr(configs), device, triton.__version__])
        self.key = hashlib.sha256(text.encode()).hexdigest()[:32]
        self.config: Config | None = None
        # (config, specialisation) -> launch(args, grid) of the binary Triton compiled for it
        self.compiled: dict[tuple[Config, tuple], Callable] = {}
        self.fast = None  # launch(args, grid) for the chosen configuration, all aligned
        # Interpreted: the kernels as the GPU compiles them, which Triton's front end types
        # before the interpreter runs them (`check_types`), and the argument types typed so far.
        self.cuda_fns: dict | None = None
        self.typed: set = set()
        self.graph_kernels = 1  # the kernels of its graph (backend.py), for the progress line
        self.pending: list = []  # its compiles in worker processes (compile_pool.py)

    def run(self, *args, grid):
        fast = self.fast
        # The common launch: every argument a tensor (static sizes), all 16-byte aligned;
        # the greatest common divisor of the addresses tells in one C call. The launcher
        # gets the addresses, not the tensors: for a tensor it calls `data_ptr()` again and
        # asks the driver whether the address is device memory (`cuPointerGetAttribute`),
        # for every argument of every launch. Every tensor here is on the graph's
        # device (the compiled graph's guards say so), so the question has one answer;
        # inductor's StaticCudaLauncher passes raw addresses too.
        if fast is not None:
            addresses = [*map(DATA_PTR, args)]
            if gcd(*addresses) % 16 == 0:
                fast(addresses, grid)
                return
        if self.config is None:  # the first launch: the configuration to keep (autotune.py)
            compile_pool.wait(self.pending)  # the binaries the workers put on disk
            self.config = autotune.choose(self, args, grid)
            progress.advance("Triton compiles and tunes the kernels", self.graph_kernels)
        self.launch(self.config, args, grid)

    def configs_to_compile(self) -> list[Config]:
        """The configurations its first launch will compile: the one chosen before, or all
        that the tuner times."""
        known = autotune.remembered(self)
        return self.configs if known is None else [known]

    def launch(self, config: Config, args, grid):
        kernel = self.fns[config.looped]
        if not self.interpreted:
            self.launch_compiled(kernel, config, args, grid)
            return
        if self.cuda_fns is not None and (types := launch_types(args)) not in self.typed:
            self.check_types(args)
            self.typed.add(types)
        with INTERPRETER_LOCK, AST_LOCK, warnings.catch_warnings():  # one interpreter per process
            # The interpreter's numpy warns about NaN and inf (log(0), 0/0), which are
            # results here as in torch, also in masked-off lanes that are never stored.
            warnings.simplefilter("ignore", RuntimeWarning)
            kernel[grid(config.meta)](*args, **config.meta, num_warps=config.num_warps)

    def check_types(self, args):
        """Type each variant that the GPU would compile for these arguments (the tuner
        compiles every configuration) by Triton's front end, as typecheck.py says, though
        the interpreter runs only the first configuration."""
        variants = {}
        for config in self.configs:
            variants.setdefault(config.looped, config)
        with AST_LOCK:  # Triton parses the kernel's source (stage 3's generated.py says why)
            for looped, config in variants.items():
                check_for_cuda(self.cuda_fns[looped], args, config.meta, config.num_warps)

    def launch_compiled(self, kernel, config: Config, args, grid):
        """Launch the binary Triton compiled for these arguments' specialisation, directly.

        `kernel[grid](...)` (`JITFunction.run`) binds the arguments, works out their
        specialisation (which pointers are 16-byte aligned, which integers are 1 or
        multiples of 16) and looks the binary up, on every launch: time that adds up over
        a model's kernels. Inductor's launchers (torch/_inductor/
        runtime/triton_heuristics.py) call the binary's launcher directly, as here, after
        checking only what could change the specialisation."""
        key = config, specialisation(args)  # a kernel may see both (aligned or not, by call)
        launch = self.compiled.get(key)
        if launch is None:
            with AST_LOCK:  # Triton parses the kernel's source (stage 3's generated.py says why)
                binary = kernel[grid(config.meta)](
                    *args, **config.meta, num_warps=config.num_warps, **EAGER_NUMERICS
                )
            if binary is None:  # Triton returns the binary it launched
                return
            launch = self.compiled[key] = fast_launch(binary, config)
        else:
            launch(args, grid)
        if config == self.config and all(key[1]) and all(map(is_tensor, args)):
            self.fast = launch  # the launches to come, when the check in `run` holds
