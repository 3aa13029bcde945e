"""Stage 5 benchmark: eager vs torch.compile (inductor) vs minidynamo's C++ backend, one run.

    python benchmarks/bench_stage5.py            # the table
    python benchmarks/bench_stage5.py --quick    # smaller sizes, for a smoke test
    python benchmarks/bench_stage5.py --json docs/data/bench_stage5.json   # and record them

Times are medians of repeated calls after warm-up, taken in turns (eager, inductor,
ours, eager, ...) so that a noisy neighbour slows all three alike. Compile times are
bench_compile_time.py's: the chain's first call through `stage5_inductor_cpp.compile`
and through `torch.compile`, in fresh processes, cold and warm (medians of 5 runs; 1
with --quick).

The targets (issue 6): ours no slower than inductor on each case, at least 3x faster
than eager on the chain; and bench_compile_time.py's (issue 12).
"""

import argparse
import statistics
import time

import torch

import stage5_inductor_cpp
from benchmarks import bench_compile_time, report
from benchmarks.rows import chain, row_cases

TARGET_VS_INDUCTOR = 1.0
TARGET_CHAIN_VS_EAGER = 3.0


def add_mul(a, b):
    return (a + b) * 2 - a


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
        *[(name, fn, list(args)) for name, fn, args, _ in row_cases(rows, cols, r)],
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
    compile_times = bench_compile_time.measure(runs=1 if quick else 5)
    print(f"compile times of the chain, medians of {compile_times['runs']} fresh processes each:")
    print(bench_compile_time.table(compile_times))
    targets += bench_compile_time.targets(compile_times)
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
            extra={"chain_compile_s": compile_times},
        )


if __name__ == "__main__":
    main()
