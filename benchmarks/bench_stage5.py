"""Stage 5 benchmark: eager vs torch.compile (inductor) vs minidynamo's C++ backend, one run.

    python benchmarks/bench_stage5.py            # the table
    python benchmarks/bench_stage5.py --quick    # smaller sizes, for a smoke test
    python benchmarks/bench_stage5.py --json docs/data/bench_stage5.json   # and record them
    python benchmarks/bench_stage5.py --dynamic --json docs/data/bench_stage5_dynamic.json

Times are medians of repeated calls after warm-up, taken in turns (eager, inductor,
ours, eager, ...) so that a noisy neighbour slows all three alike. Compile times are
bench_compile_time.py's: the chain's first call through `stage5_inductor_cpp.compile`
and through `torch.compile`, in fresh processes, cold and warm (medians of 5 runs; 1
with --quick).

The targets: ours no slower than inductor on each case, at least 3x faster
than eager on the chain; and bench_compile_time.py's.

A second table (`--dynamic`) runs each case through the frontend twice: with
`dynamic=False` (kernels for these sizes) and `dynamic=True` (every size a symbol:
kernels that take the sizes as arguments, stage5_inductor_cpp/symbolic/sizes.py), with
torch.compile's `dynamic=True` beside them. Target: the symbolic kernels within
1.10x of the static ones. Its last cases have sizes that are floor divisions of the
symbols (`x[::2]`'s `(s0 + 1)//2` rows, a pooling's `(s0 - 1)//2 + 1`): kernels that take
those computed sizes as arguments (stage5_inductor_cpp/symbolic/computed.py).
"""

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

import stage4_fx
import stage5_inductor_cpp
from benchmarks import bench_compile_time, report
from benchmarks.rows import chain, row_cases

TARGET_VS_INDUCTOR = 1.0
TARGET_CHAIN_VS_EAGER = 3.0
TARGET_DYNAMIC_VS_STATIC = 1.10


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


def every_other_row(x):
    return x[::2] * 2 + 1


def stem_pool(x):
    """A ResNet stem's ReLU and 3x3 max pool of stride 2."""
    return F.max_pool2d(x.relu(), 3, 2, 1)


def pool_add(x):
    """A 2x2 average pool and a broadcast add: a downsampling shortcut's shape."""
    return F.avg_pool2d(x, 2) + x[:, :, ::2, ::2]


def floor_division_cases(quick: bool):
    """Cases whose sizes are floor divisions of the input's (the dynamic table's alone)."""
    rows, cols = (256, 1024) if quick else (2048, 4096)
    batch, side = (2, 56) if quick else (8, 112)
    r = torch.randn
    image = r(batch, 64, side, side)
    return [
        (f"x[::2]*2+1 {rows}x{cols}", every_other_row, [r(rows, cols)]),
        (f"relu+maxpool 3/2 {batch}x64x{side}^2", stem_pool, [image]),
        (f"avgpool 2+x[::2,::2] {batch}x64x{side}^2", pool_add, [image]),
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


class KeepGraphs:
    """Stage 5's backend, keeping the graphs it compiles (to ask them what they compiled)."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(stage5_inductor_cpp.compile_fx(gm, example_inputs))
        return self.graphs[-1]


def dynamic_table(quick: bool) -> tuple[list[dict], list[dict]]:
    """Symbolic kernels vs static ones (and torch.compile's dynamic=True), same sizes."""
    print("symbolic sizes (dynamic=True) vs static (dynamic=False), through the frontend:")
    print(f"{'case':<26}{'static':>9}{'symbolic':>10}{'ind dyn':>9}{'sym/static':>12}")
    rows, targets = [], []
    for name, fn, args in cases(quick) + floor_division_cases(quick):
        stage4_fx.reset()
        kept = KeepGraphs()
        static = stage4_fx.compile(fn, backend=stage5_inductor_cpp.compile_fx, dynamic=False)
        symbolic = stage4_fx.compile(fn, backend=kept, dynamic=True)
        inductor = torch.compile(fn, dynamic=True)
        torch.testing.assert_close(symbolic(*args), static(*args), rtol=1e-4, atol=1e-3)
        if not all(graph.symbolic is not None for graph in kept.graphs):
            reasons = [graph.per_size_reason for graph in kept.graphs]
            print(f"{name:<26}  not symbolic: {reasons}")
            targets.append(report.target(f"{name}: symbolic kernels", False))
            continue
        t_static, t_sym, t_ind = (t * 1e3 for t in timeit([static, symbolic, inductor], args))
        print(f"{name:<26}{t_static:>9.2f}{t_sym:>10.2f}{t_ind:>9.2f}{t_sym / t_static:>12.2f}")
        rows.append(
            {
                "workload": name,
                "static_ms": round(t_static, 3),
                "symbolic_ms": round(t_sym, 3),
                "torch_compile_dynamic_ms": round(t_ind, 3),
                "symbolic_over_static": round(t_sym / t_static, 3),
            }
        )
        targets.append(
            report.target(
                f"{name}: symbolic / static <= {TARGET_DYNAMIC_VS_STATIC}",
                t_sym / t_static <= TARGET_DYNAMIC_VS_STATIC,
            )
        )
    return rows, targets


def all_tables(quick: bool) -> tuple[list[dict], list[dict], dict]:
    """The main table, the symbolic one and the compile times: rows, targets, extra."""
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
    dynamic_rows, dynamic_targets = dynamic_table(quick)
    targets += dynamic_targets
    compile_times = bench_compile_time.measure(runs=1 if quick else 5)
    print(f"compile times of the chain, medians of {compile_times['runs']} fresh processes each:")
    print(bench_compile_time.table(compile_times))
    targets += bench_compile_time.targets(compile_times)
    return rows, targets, {"chain_compile_s": compile_times, "dynamic": dynamic_rows}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", metavar="PATH", help="also write the results to PATH")
    parser.add_argument("--dynamic", action="store_true", help="only the symbolic-sizes table")
    arguments = parser.parse_args()
    what = f"median of 21 calls taken in turns after warm-up, float32, {torch.get_num_threads()} "
    if arguments.dynamic:
        dynamic_rows, targets = dynamic_table(arguments.quick)
        rows, extra = [], {"dynamic": dynamic_rows}
        benchmark, label = "benchmarks/bench_stage5.py --dynamic", "inductor, dynamic=True"
        what += "threads; symbolic: dynamic=True, static: dynamic=False"
    else:
        rows, targets, extra = all_tables(arguments.quick)
        benchmark, label, what = "benchmarks/bench_stage5.py", "inductor", what + "threads"
    print(report.verdict(targets))
    if arguments.json:
        report.write(
            arguments.json,
            benchmark=benchmark,
            what=what,
            device=report.cpu_description(),
            labels={"torch_compile": f"torch.compile ({label})"},
            rows=rows,
            targets=targets,
            extra=extra,
        )


if __name__ == "__main__":
    main()
