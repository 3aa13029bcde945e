"""Stage 6 on a GPU: eager vs torch.compile (inductor) vs ours, in achieved bandwidth.

Memory-bound workloads, all float32 (benchmarks/rows.py):
  * chain: relu(sin(a) * cos(b) + a * 0.5 - b), a and b of 2**26 elements;
  * row patterns over an 8192 x 8192 matrix, each in its library spelling and by hand:
    softmax, log-softmax, layer norm and RMS norm.

Bandwidth is the bytes a perfect kernel must move (inputs read once, output written
once) divided by the time. The ceiling is the device's copy bandwidth, measured here
with a large `dst.copy_(src)` (bytes read + bytes written). The targets: ours no
slower than torch's inductor beyond a stated tolerance (time ratio <= 1.02: both run
at the bandwidth ceiling, where what is left between them is run-to-run noise), and at
least 85% of copy bandwidth.

Run: `python benchmarks/bench_stage6_gpu.py` (`make bench` runs it; `--json PATH`
also writes the results, as docs/data/bench_stage6_gpu.json). Without a CUDA
device it prints one line and exits 0. Times are medians of `triton.testing.do_bench`
(CUDA events, L2 flushed between runs); the first call of each compiled function,
which compiles and tunes, happens before timing.
"""

import argparse
import sys

import torch
import torch.fx

from benchmarks import report
from benchmarks.rows import chain, row_cases

TARGET_VS_INDUCTOR = 1.02
TARGET_OF_COPY = 0.85


def workloads(device):
    def randn(*shape):
        return torch.randn(*shape, device=device)

    n = 2**26
    yield "chain 2^26", chain, (randn(n), randn(n)), 3 * n * 4
    yield from row_cases(8192, 8192, randn)


def median_ms(fn) -> float:
    import triton.testing

    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")


def copy_bandwidth(device) -> float:
    """Bytes per second of a large device-to-device copy, counting reads and writes."""
    src = torch.empty(2**28, dtype=torch.float32, device=device)  # 1 GiB
    dst = torch.empty_like(src)
    ms = median_ms(lambda: dst.copy_(src))
    return 2 * src.nbytes / (ms / 1000)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="also write the results to PATH")
    json_path = parser.parse_args().json
    if not torch.cuda.is_available():
        print("bench_stage6_gpu: skipped (no CUDA device; this benchmark needs a GPU)")
        return 0
    import triton

    import stage6_inductor_triton

    device = torch.device("cuda")
    torch.manual_seed(0)
    copy = copy_bandwidth(device)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"copy bandwidth (dst.copy_(src), 1 GiB): {copy / 1e9:.0f} GB/s\n")
    columns = ["MB moved", "eager us", "GB/s", "compile us", "GB/s", "ours us", "GB/s"]
    print("workload".ljust(34) + "".join(c.rjust(11) for c in columns), end="")
    print("  ours/inductor  ours/copy")
    codes, rows, targets = [], [], []
    for name, fn, args, nbytes in workloads(device):
        ours = stage6_inductor_triton.compile_fx(torch.fx.symbolic_trace(fn), list(args))
        inductor = torch.compile(fn)
        expected = fn(*args)
        for label, compiled in (("torch.compile", inductor), ("ours", ours)):
            torch.testing.assert_close(
                compiled(*args),
                expected,
                atol=1e-4,
                rtol=1e-4,
                msg=lambda m, lb=f"{name}, {label}": f"{lb}: {m}",
            )
        codes.append(ours.code)
        times = [median_ms(lambda f=f, args=args: f(*args)) for f in (fn, inductor, ours)]
        cells = [f"{nbytes / 1e6:.0f}"]
        for ms in times:
            cells += [f"{ms * 1000:.0f}", f"{nbytes / (ms / 1000) / 1e9:.0f}"]
        ratio = times[2] / times[1]
        of_copy = nbytes / (times[2] / 1000) / copy
        print(name.ljust(34) + "".join(c.rjust(11) for c in cells), end="")
        print(f"{ratio:15.2f}{of_copy:11.0%}")
        eager_us, inductor_us, ours_us = (ms * 1000 for ms in times)
        more = {"bytes": nbytes, "ours_of_copy": round(of_copy, 2)}
        rows.append(report.row(name, eager_us, inductor_us, ours_us, **more))
        targets += [
            report.target(
                f"{name}: ours / torch.compile <= {TARGET_VS_INDUCTOR}",
                ratio <= TARGET_VS_INDUCTOR,
            ),
            report.target(
                f"{name}: ours >= {TARGET_OF_COPY:.0%} of copy bandwidth",
                of_copy >= TARGET_OF_COPY,
            ),
        ]
    print()
    print(report.verdict(targets))
    if json_path:
        report.write(
            json_path,
            benchmark="benchmarks/bench_stage6_gpu.py",
            what="float32, median times of `triton.testing.do_bench`; bandwidth is the bytes "
            "a perfect kernel moves over the time, against a 1 GiB `dst.copy_(src)`",
            device=torch.cuda.get_device_name(),
            labels={"torch_compile": "torch.compile (inductor)"},
            rows=rows,
            targets=targets,
            extra={"copy_gb_s": round(copy / 1e9), "target_of_copy": TARGET_OF_COPY},
            triton=triton.__version__,
        )
    print("\nour output code:")
    print("\n".join(codes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
