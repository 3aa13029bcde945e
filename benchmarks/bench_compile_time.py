"""Compile time of the chain, the whole path, in fresh processes: cold and warm, ours and torch's.

    python benchmarks/bench_compile_time.py             # the table: medians of 5 runs
    python benchmarks/bench_compile_time.py --runs 3

Each run is a new `python -c` process (SCRIPT) that times two things:
  * `import torch`, the same for both systems, shown on its own;
  * the first call: from after `import torch` (and the two 2^24-element inputs) to the
    first result. Ours: `import stage5_inductor_cpp`, `stage5_inductor_cpp.compile(chain)`
    and its first call, which traces the bytecode with our VM, builds the FX graph, lowers,
    compiles the C++ (or finds it in the disk cache), loads and runs it. torch.compile:
    `torch.compile(chain)` and its first call, which imports torch._dynamo and
    torch._inductor, traces, lowers, compiles (or finds it in the cache), loads and runs.
Cold: MINIDYNAMO_CACHE_DIR and TORCHINDUCTOR_CACHE_DIR name a new empty directory. Warm: the
next process, with the directory the cold one filled. The interpreter's start and exit are
in neither number. Runs alternate between the systems, so that a busy neighbour slows both.

Before the runs, one untimed cold run of ours writes bytecode (even under
PYTHONDONTWRITEBYTECODE), so that our modules have their .pyc files, as an installed
package has; torch's come with its wheel.

The targets: ours' first call, cold, at most 0.2 of torch.compile's; ours' first
call, warm, at most 0.5 s. Medians are compared with the targets as they are (no tolerance).
"""

import argparse
import inspect
import os
import statistics
import subprocess
import sys
import tempfile

import torch

from benchmarks import report
from benchmarks.rows import chain

TARGET_COLD_VS_TORCH = 0.2
TARGET_WARM_S = 0.5
SYSTEMS = ("ours", "torch.compile")
PARTS = ("import torch", "cold", "warm")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


SCRIPT = """
import time
start = time.perf_counter()
import torch
imported = time.perf_counter()

{chain}
a, b = torch.randn(2**24), torch.randn(2**24)
begin = time.perf_counter()
if {system!r} == "ours":
    import stage5_inductor_cpp
    compiled = stage5_inductor_cpp.compile(chain)
else:
    compiled = torch.compile(chain)
compiled(a, b)
print(imported - start, time.perf_counter() - begin)
"""


def environment(cache: str | None = None) -> dict:
    """This environment, with the repository on the path and both caches in `cache`."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    if cache is not None:
        env.update(MINIDYNAMO_CACHE_DIR=cache, TORCHINDUCTOR_CACHE_DIR=cache)
    return env


def write_bytecode():
    """Compile the .pyc files of every module our path imports, as `pip install` does: one
    untimed cold run of ours, with bytecode writing on."""
    env = environment()
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory() as cache:
        env.update(MINIDYNAMO_CACHE_DIR=cache, TORCHINDUCTOR_CACHE_DIR=cache)
        subprocess.run(
            [sys.executable, "-c", script("ours")], env=env, check=True, capture_output=True
        )


def script(system: str) -> str:
    return SCRIPT.format(chain=inspect.getsource(chain), system=system)


def first_call(system: str, cache: str) -> tuple[float, float]:
    """(import torch, first call) in seconds, in a fresh process with its caches in `cache`."""
    out = subprocess.run(
        [sys.executable, "-c", script(system)],
        env=environment(cache),
        capture_output=True,
        text=True,
        check=True,
    )
    import_torch, call = map(float, out.stdout.split()[-2:])
    return import_torch, call


def measure(runs: int = 5) -> dict:
    """{"runs": runs, part: {system: median seconds}} for each of PARTS; the median of
    `import torch` is over the cold and the warm processes."""
    write_bytecode()
    samples = {part: {system: [] for system in SYSTEMS} for part in PARTS}
    for i in range(runs):
        for system in SYSTEMS:
            with tempfile.TemporaryDirectory() as cache:
                for part in ("cold", "warm"):
                    import_torch, call = first_call(system, cache)
                    samples["import torch"][system].append(import_torch)
                    samples[part][system].append(call)
                    print(f"run {i + 1}/{runs}, {system}, {part}: {call:.3f} s", file=sys.stderr)
    medians = {
        part: {system: round(statistics.median(times), 4) for system, times in by_system.items()}
        for part, by_system in samples.items()
    }
    return {"runs": runs, **medians}


def targets(measured: dict) -> list[dict]:
    """The targets, on the medians as they are."""
    cold, warm = measured["cold"], measured["warm"]
    return [
        report.target(
            f"chain, first call after import torch, cold: ours / torch.compile "
            f"<= {TARGET_COLD_VS_TORCH}",
            cold["ours"] / cold["torch.compile"] <= TARGET_COLD_VS_TORCH,
        ),
        report.target(
            f"chain, first call after import torch, warm: ours <= {TARGET_WARM_S} s",
            warm["ours"] <= TARGET_WARM_S,
        ),
    ]


def table(measured: dict) -> str:
    """The medians as a markdown table, with the totals that include `import torch`."""
    header = ["import torch", "first call, cold", "first call, warm", "total, cold", "total, warm"]
    lines = [f"| chain, fresh process (s) | {' | '.join(header)} |"]
    lines.append("|---" + "|---:" * len(header) + "|")
    cells = {}
    for system in SYSTEMS:
        imported, cold, warm = (measured[part][system] for part in PARTS)
        cells[system] = [imported, cold, warm, imported + cold, imported + warm]
        lines.append(f"| {system} | {' | '.join(f'{c:.2f}' for c in cells[system])} |")
    ratios = [ours / theirs for ours, theirs in zip(*cells.values(), strict=True)]
    lines.append(f"| ours / torch.compile | {' | '.join(f'{r:.3f}' for r in ratios)} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per cell")
    arguments = parser.parse_args()
    measured = measure(arguments.runs)
    print(f"medians of {measured['runs']} fresh processes each, torch {torch.__version__}")
    print(table(measured))
    print(report.verdict(targets(measured)))


if __name__ == "__main__":
    main()
