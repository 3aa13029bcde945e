"""How much a cache hit costs: ours vs eager vs torch.compile, in one run.

Two workloads, both tiny on purpose, so that the time of the ops is small and
what is measured is the per-call overhead of the machinery: the frame hook,
the cache lookup, the guards and the call of the compiled code.

* `x + y` on two 8-element tensors: the smallest function there is.
* a module of two `nn.Linear` (8 -> 16 -> 4, ReLU between) on a 4 x 8 input,
  under `torch.no_grad()`: the guards now check a module, its submodules,
  their hooks and four parameters, and the frames of `nn.Module.__call__`
  start around the compiled one.

Each candidate runs `calls` calls, `repeats` times, the candidates taking turns
(so that a disturbance of the machine hits them all); the best run counts.

    .venv/bin/python -m benchmarks.bench_stage3_overhead     # from the repository root
    .venv/bin/python -m benchmarks.bench_stage3_overhead --json docs/data/bench_stage3.json

Targets, as ratios of overheads over eager (time - eager's time), from this run, without
rounding: `stage3_guards.jit` on `x + y` at most half of torch.compile's own frontend's
(`backend="eager"`, which runs the captured graph as it is); `stage4_fx.compile` on the
module at most torch.compile's (its default backend, inductor).
The module's overhead is also compared with `torch.compile(backend="eager")`, the same
frontend work as ours, and said, not targeted.
"""

import argparse
import platform
import time

import torch

import stage3_guards
import stage4_fx
from benchmarks import report

TARGET_JIT_VS_TORCH_EAGER = 0.5  # x + y, stage3_guards.jit
TARGET_MODULE_VS_TORCH = 1.0  # the module, stage4_fx.compile vs torch.compile
OURS = "stage4_fx.compile"
JIT = "stage3_guards.jit"
TORCH_EAGER = 'torch.compile(backend="eager")'
TORCH = "torch.compile (inductor)"


def add(x, y):
    return x + y


class TwoLinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def per_call_us(candidates: dict, args: tuple, calls=20_000, repeats=7) -> dict:
    """µs per call of each candidate: the best of `repeats` runs of `calls` calls, taking turns."""
    best = dict.fromkeys(candidates, float("inf"))
    for _ in range(repeats):
        for name, fn in candidates.items():
            start = time.perf_counter()
            for _ in range(calls):
                fn(*args)
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: t / calls * 1e6 for name, t in best.items()}


def candidates_for(fn) -> dict:
    return {
        "eager": fn,
        OURS: stage4_fx.compile(fn, backend="eager"),
        JIT: stage3_guards.jit(fn),
        TORCH_EAGER: torch.compile(fn, backend="eager"),
        TORCH: torch.compile(fn),
    }


def measure(fn, args: tuple) -> dict:
    """Compile every candidate (checking it agrees with eager), then time them."""
    candidates = candidates_for(fn)
    stage3_guards.counters.reset()
    for candidate in candidates.values():  # compile and warm up
        torch.testing.assert_close(candidate(*args), fn(*args))
        candidate(*args)
    if stage3_guards.counters.compiled != 2:  # stage4_fx.compile's frame and jit's
        raise SystemExit(f"{stage3_guards.counters}: nothing to measure")
    times = per_call_us(candidates, args)
    if stage3_guards.counters.recompiles:
        raise SystemExit(f"recompiled while timing: {stage3_guards.counters}")
    return times


def overhead_ratio(times: dict, ours: str, theirs: str) -> float:
    return (times[ours] - times["eager"]) / (times[theirs] - times["eager"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="also write the results to PATH")
    json_path = parser.parse_args().json
    x, y = torch.randn(8), torch.randn(8)
    workloads = {"x + y": measure(add, (x, y))}
    with torch.no_grad():
        workloads["two Linear (module)"] = measure(TwoLinear(), (torch.randn(4, 8),))

    print(f"per-call time ({torch.__version__}, Python {platform.python_version()}, "
          f"{report.cpu_description()})")  # fmt: skip
    for workload, times in workloads.items():
        print(f"\n{workload:32} {'µs/call':>8} {'overhead':>9}")
        for name, t in times.items():
            print(f"{name:32} {t:8.2f} {t - times['eager']:+9.2f}")
    add_times, module_times = workloads.values()
    ratios = {
        "x + y: jit vs torch.compile(eager)": overhead_ratio(add_times, JIT, TORCH_EAGER),
        "x + y: ours vs torch.compile(eager)": overhead_ratio(add_times, OURS, TORCH_EAGER),
        "module: ours vs torch.compile": overhead_ratio(module_times, OURS, TORCH),
        "module: ours vs torch.compile(eager)": overhead_ratio(module_times, OURS, TORCH_EAGER),
        "module: jit vs torch.compile(eager)": overhead_ratio(module_times, JIT, TORCH_EAGER),
    }
    print("\noverhead over eager, ours / theirs:")
    for name, ratio in ratios.items():
        print(f"  {name:40} {ratio:.3f}")
    targets = [
        report.target(
            f"x + y: {JIT}'s overhead / {TORCH_EAGER}'s <= {TARGET_JIT_VS_TORCH_EAGER}",
            ratios["x + y: jit vs torch.compile(eager)"] <= TARGET_JIT_VS_TORCH_EAGER,
        ),
        report.target(
            f"two Linear: {OURS}'s overhead / torch.compile's <= {TARGET_MODULE_VS_TORCH}",
            ratios["module: ours vs torch.compile"] <= TARGET_MODULE_VS_TORCH,
        ),
    ]
    print(report.verdict(targets))
    if json_path:
        report.write(
            json_path,
            benchmark="benchmarks/bench_stage3_overhead.py",
            what="time per call, best of 7 runs of 20,000 calls, the candidates taking turns; "
            "`x + y` on two 8-element tensors, and a module of two `nn.Linear` (8 -> 16 -> 4) "
            "on a 4 x 8 input under `torch.no_grad()`; ours and torch.compile with "
            'backend="eager" run the captured graph as it is',
            device=report.cpu_description(),
            labels={"torch_compile": TORCH_EAGER, "ours": OURS},
            rows=[
                report.row(
                    workload,
                    times["eager"],
                    times[TORCH_EAGER],
                    times[OURS],
                    extra_us={name: round(times[name], 2) for name in (JIT, TORCH)},
                )
                for workload, times in workloads.items()
            ],
            targets=targets,
            extra={"overhead_ratios": {name: round(r, 3) for name, r in ratios.items()}},
        )


if __name__ == "__main__":
    main()
