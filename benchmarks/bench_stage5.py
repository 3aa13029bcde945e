"""Stage 5 benchmark: eager vs torch.compile (inductor) vs minidynamo's C++ backend, one run.

    python benchmarks/bench_stage5.py            # the table
    python benchmarks/bench_stage5.py --quick    # smaller sizes, for a smoke test

Times are medians of repeated calls after warm-up. Compile times are measured in
fresh processes with empty caches (cold) and with the warm cache (ours only).
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
    n = 2**20 if quick else 2**24
    rows, cols = (256, 1024) if quick else (2048, 4096)
    r = torch.randn
    return [
        ("chain 2^24" if not quick else "chain 2^20", chain, [r(n), r(n)]),
        ("(a+b)*2-a", add_mul, [r(n), r(n)]),
        (f"softmax {rows}x{cols}", softmax, [r(rows, cols)]),
        (f"layer_norm {rows}x{cols}", layer_norm, [r(rows, cols), r(cols), r(cols)]),
        ("mlp 512x1024x1024", mlp, [r(512, 1024), r(1024, 1024), r(1024), r(1024, 1024), r(1024)]),
    ]


def timeit(fn, args, repeat=15):
    for _ in range(3):
        fn(*args)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


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
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    quick = parser.parse_args().quick
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, times in ms (median)")
    print(f"{'case':<26}{'eager':>9}{'inductor':>10}{'ours':>9}{'ours/ind':>10}{'eager/ours':>12}")
    for name, fn, args in cases(quick):
        ours = stage5_inductor_cpp.compile_fx(torch.fx.symbolic_trace(fn), args)
        inductor = torch.compile(fn)
        expected = fn(*args)
        torch.testing.assert_close(ours(*args), expected, rtol=1e-4, atol=1e-4)
        t_eager, t_ind, t_ours = (timeit(f, args) * 1e3 for f in (fn, inductor, ours))
        print(
            f"{name:<26}{t_eager:>9.2f}{t_ind:>10.2f}{t_ours:>9.2f}"
            f"{t_ours / t_ind:>10.2f}{t_eager / t_ours:>12.2f}"
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


if __name__ == "__main__":
    main()
