"""Stage 6 on a GPU: eager vs torch.compile (inductor) vs ours, in achieved bandwidth.

Three memory-bound workloads, all float32:
  * chain:      relu(sin(a) * cos(b) + a * 0.5 - b), a and b of 2**26 elements
  * softmax:    softmax(x, -1), x of 8192 x 8192
  * layer_norm: layer_norm(x, (8192,), w, b), x of 8192 x 8192

Bandwidth is the bytes a perfect kernel must move (inputs read once, output written
once) divided by the time. The ceiling is the device's copy bandwidth, measured here
with a large `dst.copy_(src)` (bytes read + bytes written). The targets: ours no
slower than torch's inductor (time ratio <= 1.0), and at least 85% of copy bandwidth.

Run: `python benchmarks/bench_stage6_gpu.py` (`make bench` runs it). Without a CUDA
device it prints one line and exits 0. Times are medians of `triton.testing.do_bench`
(CUDA events, L2 flushed between runs); the first call of each compiled function,
which compiles and tunes, happens before timing.
"""

import sys

import torch
import torch.fx
import torch.nn.functional as F

TARGET_VS_INDUCTOR = 1.0
TARGET_OF_COPY = 0.85


def chain(a, b):
    return torch.relu(torch.sin(a) * torch.cos(b) + a * 0.5 - b)


def softmax(x):
    return torch.softmax(x, -1)


def layer_norm(x, w, b):
    return F.layer_norm(x, (8192,), w, b)


def workloads(device):
    def randn(*shape):
        return torch.randn(*shape, device=device)

    n, rows, cols = 2**26, 8192, 8192
    yield "chain", chain, (randn(n), randn(n)), 3 * n * 4
    yield "softmax", softmax, (randn(rows, cols),), 2 * rows * cols * 4
    ln_args = (randn(rows, cols), randn(cols), randn(cols))
    yield "layer_norm", layer_norm, ln_args, (2 * rows * cols + 2 * cols) * 4


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
    if not torch.cuda.is_available():
        print("bench_stage6_gpu: skipped (no CUDA device; this benchmark needs a GPU)")
        return 0
    import stage6_inductor_triton

    device = torch.device("cuda")
    torch.manual_seed(0)
    copy = copy_bandwidth(device)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"copy bandwidth (dst.copy_(src), 1 GiB): {copy / 1e9:.0f} GB/s\n")
    columns = ["workload", "MB moved", "eager us", "GB/s", "compile us", "GB/s", "ours us", "GB/s"]
    print("".join(c.rjust(11) for c in columns) + "  ours/inductor  ours/copy")
    missed, codes = [], []
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
        cells = [name, f"{nbytes / 1e6:.0f}"]
        for ms in times:
            cells += [f"{ms * 1000:.0f}", f"{nbytes / (ms / 1000) / 1e9:.0f}"]
        ratio = round(times[2] / times[1], 2)  # both at the bandwidth ceiling: 1% is noise
        of_copy = nbytes / (times[2] / 1000) / copy
        print("".join(c.rjust(11) for c in cells) + f"{ratio:15.2f}{of_copy:11.0%}")
        if ratio > TARGET_VS_INDUCTOR:
            missed.append(
                f"{name}: ours takes {ratio:.2f}x inductor's time (target <= {TARGET_VS_INDUCTOR})"
            )
        if of_copy < TARGET_OF_COPY:
            target = f"target >= {TARGET_OF_COPY:.0%}"
            missed.append(f"{name}: ours reaches {of_copy:.0%} of copy bandwidth ({target})")
    print()
    print("\n".join(f"target missed: {m}" for m in missed) or "all targets met")
    print("\nour output code:")
    print("\n".join(codes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
