"""Stage 5 benchmark: eager vs torch.compile (inductor) vs minidynamo's C++ backend, one run.

    python benchmarks/bench_stage5.py            # the table
    python benchmarks/bench_stage5.py --quick    # smaller sizes, for a smoke test
    python benchmarks/bench_stage5.py --json docs/data/bench_stage5.json   # and record them

Times are medians of repeated calls after warm-up, taken in turns (eager, inductor,
ours, eager, ...) so that a noisy neighbour slows all three alike. Compile times are
measured in fresh processes with empty caches (cold) and with the warm cache (ours only).

The targets (issue 6): ours no slower than inductor on each case, at least 3x faster
than eager on the chain, a cold compile at most 1/10 of torch.compile's, and a warm
start under 0.2 s.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

import stage5_inductor_cpp
from benchmarks import report

TARGET_VS_INDUCTOR = 1.0
TARGET_CHAIN_VS_EAGER = 3.0
TARGET_COLD_VS_TORCH = 0.1
TARGET_WARM_S = 0.2


def chain(a, b):
    return torch.relu(torch.sin(a) * torch.cos(b) + a * 0.5 - b)


def add_mul(a, b):
    return (a + b) * 2 - a


def softmax(x):
    return torch.softmax(x, dim=-1)


def layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


def mlp(x, w1, b1, w2, b2):
    return torch.relu(x @ w1 + b1) @ w2 + b2


def cases(quick: bool):
    power = 20 if quick else 24
    n = 2**power
    rows, cols = (256, 1024) if quick else (2048, 4096)
    r = torch.randn
    return [
        (f"chain 2^{power}", chain, [r(n), r(n)]),
        (f"(a+b)*2-a 2^{power}", add_mul, [r(n), r(n)]),
        (f"softmax {rows}x{cols}", softmax, [r(rows, cols)]),
        (f"layer_norm {rows}x{cols}", layer_norm, [r(rows, cols), r(cols), r(cols)]),
        ("mlp 512x1024x1024", mlp, [r(512, 1024), r(1024, 1024), r(1024), r(1024, 1024), r(1024)]),
    ]


def timeit(fns, args, repeat=21) -> list[float]:
    """Median seconds per call of each of `fns`, calling them in turns."""
    for fn in fns:
        for _ in range(3):
            fn(*args)
    times = [[] for _ in fns]
    for _ in range(repeat):
        for fn, samples in zip(fns, times, strict=True):
            start = time.perf_counter()
            fn(*args)
            samples.append(time.perf_counter() - start)
    return [statistics.median(samples) for samples in times]


COLD = """
import os, sys, time, torch
sys.path.insert(0, {root!r})
import stage5_inductor_cpp
from benchmarks.bench_stage5 import chain
a, b = torch.randn(1024), torch.randn(1024)
start = time.perf_counter()
if {which!r} == "inductor":
    torch.compile(chain)(a, b)
else:
    gm = torch.fx.symbolic_trace(chain)
    stage5_inductor_cpp.compile_fx(gm, [a, b])(a, b)
print(time.perf_counter() - start)
"""


def compile_time(which: str, cache: str) -> float:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, MINIDYNAMO_CACHE_DIR=cache, TORCHINDUCTOR_CACHE_DIR=cache)
    code = COLD.format(root=root, which=which)
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", metavar="PATH", help="also write the results to PATH")
    arguments = parser.parse_args()
    quick = arguments.quick
    rows, targets = [], []
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, times in ms (median)")
    print(f"{'case':<26}{'eager':>9}{'inductor':>10}{'ours':>9}{'ours/ind':>10}{'eager/ours':>12}")
    for name, fn, args in cases(quick):
        ours = stage5_inductor_cpp.compile_fx(torch.fx.symbolic_trace(fn), args)
        inductor = torch.compile(fn)
        expected = fn(*args)
        # A GEMM's rounding error grows with the size of its sums, not of each element.
        atol = 1e-5 * expected.abs().max().item()
        torch.testing.assert_close(ours(*args), expected, rtol=1e-4, atol=atol)
        t_eager, t_ind, t_ours = (t * 1e3 for t in timeit([fn, inductor, ours], args))
        print(
            f"{name:<26}{t_eager:>9.2f}{t_ind:>10.2f}{t_ours:>9.2f}"
            f"{t_ours / t_ind:>10.2f}{t_eager / t_ours:>12.2f}"
        )
        rows.append(report.row(name, t_eager * 1e3, t_ind * 1e3, t_ours * 1e3))
        targets.append(
            report.target(
                f"{name}: ours / torch.compile <= {TARGET_VS_INDUCTOR}",
                t_ours / t_ind <= TARGET_VS_INDUCTOR,
            )
        )
        if fn is chain:
            speedup = t_eager / t_ours
            targets.append(
                report.target(
                    f"{name}: eager / ours >= {TARGET_CHAIN_VS_EAGER}",
                    speedup >= TARGET_CHAIN_VS_EAGER,
                )
            )
    with tempfile.TemporaryDirectory() as cache:
        ours_cold = compile_time("ours", cache)
        ours_warm = compile_time("ours", cache)
    with tempfile.TemporaryDirectory() as cache:
        inductor_cold = compile_time("inductor", cache)
    print(
        f"cold compile of the chain (fresh process, empty cache): ours {ours_cold:.3f} s, "
        f"torch.compile {inductor_cold:.3f} s, ratio {ours_cold / inductor_cold:.3f}"
    )
    print(f"warm start of the chain (fresh process, disk cache): ours {ours_warm:.3f} s")
    targets += [
        report.target(
            f"cold compile: ours / torch.compile <= {TARGET_COLD_VS_TORCH}",
            ours_cold / inductor_cold <= TARGET_COLD_VS_TORCH,
        ),
        report.target(f"warm start < {TARGET_WARM_S} s", ours_warm < TARGET_WARM_S),
    ]
    print(report.verdict(targets))
    if arguments.json:
        report.write(
            arguments.json,
            benchmark="benchmarks/bench_stage5.py",
            what=f"median of 21 calls taken in turns after warm-up, float32, "
            f"{torch.get_num_threads()} threads",
            device=report.cpu_description(),
            labels={"torch_compile": "torch.compile (inductor)"},
            rows=rows,
            targets=targets,
            extra={
                "chain_cold_compile_s": {
                    "ours": round(ours_cold, 3),
                    "torch.compile": round(inductor_cold, 2),
                },
                "chain_warm_start_s": {"ours": round(ours_warm, 3)},
            },
        )


if __name__ == "__main__":
    main()
