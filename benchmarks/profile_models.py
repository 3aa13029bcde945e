"""Where a compiled model's call goes: the host or the GPU, inside our wrapper or around it.

For each model of the zoo, eager, torch.compile and ours (stage 6, or stage 5 with
`--device cpu`), inference under `no_grad` (and `--amp`'s autocast), this prints:

- host ms: a call's time on the CPU that issues it, the loop not waiting for the GPU;
- wall ms: the same calls until the GPU has finished them. Host close to wall: bound by
  the host (launches, wrappers, guards); host well below wall: bound by the GPU;
- kernels and GPU busy ms: the GPU kernels one call launches, and their summed time
  (torch's profiler);
- for ours, the host time outside its generated wrappers (frame hook, guards, the layers
  that call the wrapper), measured with each wrapper replaced by one that returns its
  last outputs.

Models compile side by side in `--jobs` processes and are timed one at a time (a file
lock), so that a run over five models takes the time of the slowest compile, not the sum.

    python -m benchmarks.profile_models --device cuda --amp --batch 8 --seq 128
    .venv/bin/python -m benchmarks.profile_models --models bert --size small

It records nothing: the numbers move with the machine. Compare rows of one run, and take
the records with bench_models.py.
"""

import argparse
import contextlib
import fcntl
import pathlib
import subprocess
import sys
import tempfile
import time

import torch

import stage4_fx
from benchmarks.bench_models import AMP_MODELS, our_backend
from benchmarks.zoo import ZOO


def host_and_wall_ms(fn, args, device, calls: int = 50) -> tuple[float, float]:
    """Best of 5 rounds: a call's host time (the loop alone) and wall time (until done)."""
    sync = torch.cuda.synchronize if device.type == "cuda" else lambda: None
    best = (float("inf"), float("inf"))
    for _ in range(5):
        sync()
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        issued = time.perf_counter()
        sync()
        done = time.perf_counter()
        best = min(best, ((issued - start) / calls * 1e3, (done - start) / calls * 1e3), key=max)
    return best


def gpu_kernels(fn, args, device) -> tuple[int, float]:
    """The GPU kernels of one call, and their summed time in ms (0, 0 on the CPU)."""
    if device.type != "cuda":
        return 0, 0.0
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as run:
        fn(*args)
        torch.cuda.synchronize()
    kernels = [e for e in run.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return len(kernels), sum(e.device_time for e in kernels) / 1e3


def outside_wrappers_ms(ours, args, device, made) -> float:
    """Ours' host time with every generated wrapper answering its last outputs at once."""
    codes = [part.last for graph in made for part in (graph.parts or [graph]) if part.last]
    for code in codes:
        real, memo = code.call, {}

        def answer(call_args, real=real, memo=memo):
            if "outputs" not in memo:
                memo["outputs"] = real(call_args)
            return list(memo["outputs"])

        code.call = answer
    return host_and_wall_ms(ours, args, device)[0]


def profile_one(name: str, options, lock_path: str | None):
    device = torch.device(options.device)
    torch.manual_seed(0)
    model, args = ZOO[name](options.size, batch=options.batch, seq=options.seq)
    model = model.to(device).eval()
    args = [a.to(device) if isinstance(a, torch.Tensor) else a for a in args]
    backend, made = our_backend(device)
    systems = {
        "eager": model,
        "torch.compile": torch.compile(model),
        "ours": stage4_fx.compile(model, backend=backend),
    }
    amp = torch.autocast(device.type, dtype=torch.bfloat16) if options.amp else None
    with torch.no_grad(), amp or contextlib.nullcontext():
        for fn in systems.values():  # compile, side by side with the other processes
            for _ in range(3):
                fn(*args)
        with open(lock_path, "w") if lock_path else contextlib.nullcontext() as lock:
            if lock is not None:
                fcntl.flock(lock, fcntl.LOCK_EX)  # time one model at a time
            given = [f"{k} {v}" for k in ("batch", "seq") if (v := getattr(options, k))]
            lines = [f"== {name} ({', '.join([options.size, *given])})"]
            for label, fn in systems.items():
                host, wall = host_and_wall_ms(fn, args, device)
                count, busy = gpu_kernels(fn, args, device)
                lines.append(
                    f"{label:14s} host {host:8.3f} ms  wall {wall:8.3f} ms"
                    f"  GPU kernels {count:4d}  busy {busy:7.3f} ms"
                )
            outside = outside_wrappers_ms(systems["ours"], args, device, made)
            lines.append(f"{'':14s} ours outside its wrappers: host {outside:.3f} ms")
            print("\n".join(lines), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--size", default="base", choices=("tiny", "small", "base"))
    parser.add_argument("--models", help="comma-separated zoo names (default: --amp's)")
    parser.add_argument("--amp", action="store_true", help="every call under bf16 autocast")
    parser.add_argument("--batch", type=int)
    parser.add_argument("--seq", type=int)
    parser.add_argument("--jobs", type=int, default=5, help="models compiled at once")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a worker: this model only
    parser.add_argument("--lock", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.device == "cuda" and not torch.cuda.is_available():
        print("profile_models: skipped (no CUDA device)")
        return 0
    if options.one:
        profile_one(options.one, options, options.lock)
        return 0
    names = options.models.split(",") if options.models else AMP_MODELS[options.device]
    worker = ["--device", options.device, "--size", options.size] + ["--amp"] * options.amp
    worker += [f"--{key}={value}" for key in ("batch", "seq") if (value := getattr(options, key))]
    with tempfile.TemporaryDirectory() as scratch:
        lock = str(pathlib.Path(scratch) / "lock")
        running = []
        for name in names:
            command = [sys.executable, "-m", "benchmarks.profile_models", *worker]
            running.append(subprocess.Popen([*command, "--one", name, "--lock", lock]))
            while len([p for p in running if p.poll() is None]) >= options.jobs:
                time.sleep(0.5)
        return max(p.wait() for p in running)


if __name__ == "__main__":
    sys.exit(main())
