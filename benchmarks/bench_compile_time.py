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
Cold: MINIDYNAMO_CACHE_DIR, TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR name a new empty
directory. Warm: the next process, with the directory the cold one filled. The
interpreter's start and exit are in neither number. Runs alternate between the systems,
so that a busy neighbour slows both.

Before the runs, one untimed cold run of ours writes bytecode (even under
PYTHONDONTWRITEBYTECODE), so that our modules have their .pyc files, as an installed
package has; torch's come with its wheel.

The targets: ours' first call, cold, at most 0.2 of torch.compile's; ours' first
call, warm, at most 0.5 s. Medians are compared with the targets as they are (no tolerance).

`--models resnet18,bert,...` times bench_models' zoo instead (`--device`, `--size`,
`--train`, `--amp` as there): in each fresh process one system builds the model from seed
0 and its optimizer (untimed: a user makes it either way, and torch.optim imports
torch._dynamo, a second of its own), compiles the model and makes its first call
(inference under no_grad, or one training step: forward, loss, backward, SGD), timed
from before the compile to the result (on a GPU, after a synchronize). Cold and warm as
above, the systems in turns. The targets (issue 34): cold, ours / torch.compile <= 1.0
on a GPU and <= 0.25 on a CPU; warm, <= 0.5.
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


MODEL_SCRIPT = """
import argparse, time
import torch
import stage4_fx
from benchmarks import bench_models
options = argparse.Namespace(**{options!r})
device = torch.device(options.device)
model, args = bench_models.built({name!r}, options, device)
model.train(options.train)
compiled = [None]
step = bench_models.training_step(model, lambda *a: compiled[0](*a), options, device)
begin = time.perf_counter()
if {system!r} == "ours":
    compiled[0] = stage4_fx.compile(model, backend=bench_models.our_backend(device)[0])
else:
    compiled[0] = torch.compile(model)
if options.train:
    step(*args)
else:
    with torch.no_grad(), bench_models.autocast(options, device):
        compiled[0](*args)
if device.type == "cuda":
    torch.cuda.synchronize()
print(time.perf_counter() - begin)
"""
MODEL_TARGET_COLD = {"cpu": 0.25, "cuda": 1.0}  # ours / torch.compile, first call, cold
MODEL_TARGET_WARM = 0.5  # ours / torch.compile, first call, warm


def environment(cache: str | None = None) -> dict:
    """This environment, with the repository on the path and both caches in `cache`."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    if cache is not None:
        # and Triton's: inductor keeps its own under TORCHINDUCTOR_CACHE_DIR unless
        # TRITON_CACHE_DIR names one; ours is Triton's default (~/.triton/cache) otherwise
        env.update(MINIDYNAMO_CACHE_DIR=cache, TORCHINDUCTOR_CACHE_DIR=cache)
        env.update(TRITON_CACHE_DIR=os.path.join(cache, "triton"))
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


def in_fresh_process(source: str, cache: str, what: str) -> list[float]:
    """The numbers `python -c source` prints on its last line, run with its caches in `cache`."""
    out = subprocess.run(
        [sys.executable, "-c", source], env=environment(cache), capture_output=True, text=True
    )
    if out.returncode:
        raise RuntimeError(f"{what}: the process failed:\n{out.stderr[-3000:]}")
    return [float(word) for word in out.stdout.splitlines()[-1].split()]


def first_call(system: str, cache: str) -> tuple[float, float]:
    """(import torch, first call) in seconds, in a fresh process with its caches in `cache`."""
    *_, import_torch, call = in_fresh_process(script(system), cache, f"chain, {system}")
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


def model_first_call(name: str, system: str, options: dict, cache: str) -> float:
    """Seconds from compiling zoo model `name` to its first result, in a fresh process."""
    source = MODEL_SCRIPT.format(options=options, name=name, system=system)
    return in_fresh_process(source, cache, f"{name}, {system}")[-1]


def measure_models(names: list[str], options: dict, runs: int) -> list[dict]:
    """Per model, the median seconds of each system's first call, cold and warm."""
    write_bytecode()
    rows = []
    for name in names:
        samples = {(system, part): [] for system in SYSTEMS for part in ("cold", "warm")}
        for i in range(runs):
            for system in SYSTEMS:
                with tempfile.TemporaryDirectory() as cache:
                    for part in ("cold", "warm"):
                        seconds = model_first_call(name, system, options, cache)
                        samples[system, part].append(seconds)
                        said = f"{name}, run {i + 1}/{runs}, {system}, {part}: {seconds:.1f} s"
                        print(said, file=sys.stderr)
        medians = {key: statistics.median(times) for key, times in samples.items()}
        row = {"workload": name}
        for part in ("cold", "warm"):
            theirs, ours = medians["torch.compile", part], medians["ours", part]
            row |= {f"torch_compile_{part}_s": round(theirs, 2), f"ours_{part}_s": round(ours, 2)}
            row[f"ours_vs_torch_compile_{part}"] = round(ours / theirs, 2)
        rows.append(row)
    return rows


def model_targets(rows: list[dict], device: str) -> list[dict]:
    limits = {"cold": MODEL_TARGET_COLD[device], "warm": MODEL_TARGET_WARM}
    return [
        report.target(
            f"{row['workload']}, {part}: ours / torch.compile <= {limit}",
            row[f"ours_vs_torch_compile_{part}"] <= limit,
        )
        for row in rows
        for part, limit in limits.items()
    ]


def model_table(rows: list[dict]) -> str:
    header = ["torch.compile cold", "ours cold", "ours / torch", "torch.compile warm"]
    header += ["ours warm", "ours / torch"]
    lines = [f"| first call (s) | {' | '.join(header)} |", "|---" + "|---:" * len(header) + "|"]
    for row in rows:
        cells = [
            row[f"{key}_{part}{unit}"]
            for part in ("cold", "warm")
            for key, unit in (
                ("torch_compile", "_s"),
                ("ours", "_s"),
                ("ours_vs_torch_compile", ""),
            )
        ]
        lines.append(f"| {row['workload']} | {' | '.join(f'{c:.2f}' for c in cells)} |")
    return "\n".join(lines)


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
    parser.add_argument("--runs", type=int, default=None, help="fresh processes per cell")
    parser.add_argument("--models", help="comma-separated zoo names: time their first calls")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--size", choices=["tiny", "small", "base"], default="small")
    parser.add_argument("--train", action="store_true", help="a training step, not inference")
    parser.add_argument("--amp", action="store_true", help="under torch.autocast (bfloat16)")
    parser.add_argument("--json", metavar="PATH", help="with --models: write the results")
    arguments = parser.parse_args()
    if arguments.models:
        main_models(arguments)
        return
    measured = measure(arguments.runs or 5)
    print(f"medians of {measured['runs']} fresh processes each, torch {torch.__version__}")
    print(table(measured))
    print(report.verdict(targets(measured)))


def main_models(arguments):
    options = {
        "size": arguments.size, "batch": None, "seq": None, "amp": arguments.amp,
        "amp_dtype": "bfloat16", "device": arguments.device, "train": arguments.train,
        "modes": ["default"],
    }  # fmt: skip
    runs, names = arguments.runs or 1, arguments.models.split(",")
    rows = measure_models(names, options, runs)
    found = model_targets(rows, arguments.device)
    what = "training step" if arguments.train else "inference"
    what += f" ({arguments.size}{', bfloat16 autocast' if arguments.amp else ''})"
    print(
        f"first call of a compiled {what} on {arguments.device}, medians of {runs} fresh "
        f"processes per cell, torch {torch.__version__}"
    )
    print(model_table(rows))
    print(report.verdict(found))
    if arguments.json:
        device = (
            torch.cuda.get_device_name() if arguments.device == "cuda" else report.cpu_description()
        )
        report.write(
            arguments.json,
            benchmark="benchmarks/bench_compile_time.py --models",
            what=f"first call of each model's compiled {what}, from compile to result, in "
            f"fresh processes: cold (empty caches), then warm (the caches the cold one "
            f"filled); medians of {runs}",
            device=device,
            rows=[],
            targets=found,
            extra={"models": rows},
        )


if __name__ == "__main__":
    main()
