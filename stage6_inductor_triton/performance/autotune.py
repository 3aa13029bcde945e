"""Block sizes and warps: a few configurations per kernel, timed once, the winner remembered.

torch/_inductor/runtime/triton_heuristics.py is the original (`CachingAutotuner`).
A kernel is generated with `XBLOCK` (and `RBLOCK`) as `tl.constexpr` parameters, so
each configuration is a separate compilation of the same source (launcher.py). On its
first call, a `KernelLauncher` compiles and times every configuration on the real arguments
(`triton.testing.do_bench`), keeps the fastest, and writes it to the cache directory
(`$MINIDYNAMO_CACHE_DIR/triton/autotune/<hash>.json`), keyed by the kernel's source,
the configurations, the GPU and Triton's version: later calls and later processes
launch it straight away. Timing runs each kernel many times, so it runs on copies of
the buffers the kernel writes: a kernel that writes a graph input in place reads it too.
"""

import dataclasses
import json

import triton
import triton.testing
from triton.runtime.errors import OutOfResources, PTXASError

from stage1_eval_frame.logs import get_logger
from stage5_inductor_cpp import kernel_cache
from stage5_inductor_cpp.symbolic.sizes import hint

from .. import launcher as launcher_module
from ..codegen_triton import KernelShape, triton_next_power_of_2
from ..runtime import source_dir

log = get_logger("kernels")

# Each configuration is timed for about 10 ms after 2 ms of warm-up: for kernels of a few
# to a few hundred microseconds that is tens to thousands of runs, and over a model's
# hundreds of configurations it stays a few seconds of the first call (inductor bounds its
# timings too, `max_benchmark_duration`).
TIMING_MS = {"warmup": 2, "rep": 10}
BEST: dict[str, "launcher_module.Config"] = {}  # the memory cache: key -> best configuration
stats = {"tuned": 0, "from_disk": 0}  # what the tests count: a warm cache tunes nothing


def configs_for(shape: KernelShape, has_looped: bool = False) -> list:
    """The configurations to try, the usual best first (the one used when nothing is timed).

    (elements per program, warps): a warp is 32 threads, and 8-32 elements per thread
    keep enough loads in flight to saturate memory without running out of registers.
    A reduction across rows (`KernelShape.across_rows`) loops over blocks wide across its
    rows, as inductor's "outer" reductions do (`ReductionHint.OUTER`).
    A persistent kernel also gets looped configurations when it has a `_looped` variant
    (`has_looped`): launched with an RBLOCK shorter than its row, the persistent kernel
    itself would read and write only the row's first RBLOCK elements.
    """
    xcap = triton_next_power_of_2(hint(shape.xnumel))  # a symbol: this call's value (sizes.py)
    if shape.rnumel is None:
        wanted = [(1024, None, 4, False), (2048, None, 8, False), (512, None, 4, False)]
        wanted.append((4096, None, 8, False))
    else:
        rcap = triton_next_power_of_2(hint(shape.rnumel))
        looped = [(1, 2048, 16), (1, 1024, 16), (1, 4096, 16), (1, 2048, 8), (4, 512, 8)]
        if shape.across_rows:  # rows side by side in memory: blocks wide across them (a
            # block one row wide would read 4 bytes of each 32-byte sector it fetches)
            looped = [(64, 16, 4), (128, 8, 8), (16, 64, 4)]
        wanted = [(x, min(r, rcap), w, shape.persistent) for x, r, w in looped]
        if shape.persistent:
            sizes = ((4096, 8), (8192, 16), (8192, 32), (16384, 16), (2048, 4))
            persistent = [(max(n // rcap, 1), rcap, w, False) for n, w in sizes]
            wanted = persistent + [c for c in wanted if c[1] < rcap and has_looped]
    configs = []
    for xblock, rblock, warps, use_looped in wanted:
        xblock = min(xblock, xcap)
        elements = xblock * (rblock or 1)
        config = launcher_module.Config(
            xblock, rblock, max(1, min(warps, elements // 32)), use_looped
        )
        if config not in configs:
            configs.append(config)
    return configs


def from_disk(launcher: "launcher_module.KernelLauncher", path):
    """The configuration a process chose before, or None (never tuned, or a damaged file,
    which is tuned again and rewritten)."""
    if not path.exists():
        return None
    try:
        config = launcher_module.Config(**json.loads(path.read_text()))
    except (ValueError, TypeError) as error:  # cut short, or not a configuration at all
        problem = str(error)
    else:
        if config in launcher.configs:
            return config
        problem = f"{config} is not one of this kernel's configurations"
    log.warning("the autotune cache's %s is damaged (%s): tuning again", path, problem)
    return None


def remembered(launcher: "launcher_module.KernelLauncher"):
    """The configuration `launcher` keeps without timing any: its only one (or the first,
    under the interpreter), or the one chosen before (in memory, then on disk); None when
    its configurations are to be timed."""
    if launcher.interpreted or len(launcher.configs) == 1:
        # The interpreter runs numpy on the CPU: timing it says nothing about a GPU.
        return launcher.configs[0]
    if launcher.key in BEST:
        return BEST[launcher.key]
    if (known := from_disk(launcher, path_of(launcher))) is not None:
        stats["from_disk"] += 1
        BEST[launcher.key] = known
    return known


def path_of(launcher: "launcher_module.KernelLauncher"):
    return source_dir() / "autotune" / f"{launcher.key}.json"


def choose(launcher: "launcher_module.KernelLauncher", args, grid):
    """The configuration `launcher` keeps for good: remembered (in memory, then on disk), or
    the fastest of its configurations on these arguments, timed now."""
    if (known := remembered(launcher)) is not None:
        return known
    # Timing runs the kernel a hundred times: on copies of what it writes, since a kernel
    # that writes a graph input in place (functionalize.WriteBack) also reads it.
    copies = [a.clone() if i in launcher.written else a for i, a in enumerate(args)]
    timings = {}
    for config in launcher.configs:
        try:
            timings[config] = triton.testing.do_bench(
                lambda config=config: launcher.launch(config, copies, grid), **TIMING_MS
            )
        except (OutOfResources, PTXASError) as error:  # too big for this GPU: not a candidate
            log.info("autotune %s: %s does not fit: %s", launcher.name, config, error)
    best = min(timings, key=timings.get)
    report = ", ".join(f"{c}: {t * 1000:.1f} us" for c, t in timings.items())
    log.info("autotune %s: %s -> %s", launcher.name, report, best)
    stats["tuned"] += 1
    BEST[launcher.key] = best
    path = path_of(launcher)
    path.parent.mkdir(parents=True, exist_ok=True)
    kernel_cache.write_atomically(path, json.dumps(dataclasses.asdict(best)).encode())
    return best
