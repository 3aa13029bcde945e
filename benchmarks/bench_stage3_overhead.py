"""How much a cache hit costs: stage 3's JIT vs eager vs torch.compile, in one run.

The function is tiny on purpose (`x + y` on two 8-element tensors), so that
the time of the op itself is small and what is measured is the per-call
overhead of the machinery: the frame hook, the cache lookup, the guards and
the call of the compiled code.

    .venv/bin/python -m benchmarks.bench_stage3_overhead     # from the repository root
"""

import platform
import time

import torch

import stage3_guards


def add(x, y):
    return x + y


def per_call_us(fn, x, y, calls=20_000, repeats=7) -> float:
    """The best of `repeats` runs of `calls` calls, in µs per call (the least disturbed run)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn(x, y)
        best = min(best, time.perf_counter() - start)
    return best / calls * 1e6


def main():
    x, y = torch.randn(8), torch.randn(8)
    ours = stage3_guards.jit(add)
    torch_eager_backend = torch.compile(add, backend="eager")
    torch_inductor = torch.compile(add)
    candidates = {
        "eager": add,
        "stage3_guards.jit": ours,
        'torch.compile(backend="eager")': torch_eager_backend,
        "torch.compile (inductor)": torch_inductor,
    }
    for fn in candidates.values():  # compile and warm up
        torch.testing.assert_close(fn(x, y), x + y)
    if stage3_guards.counters.compiled != 1:
        raise SystemExit("stage3_guards.jit did not compile `add`: nothing to measure")
    times = {name: per_call_us(fn, x, y) for name, fn in candidates.items()}
    assert stage3_guards.counters.recompiles == 0

    eager = times["eager"]
    print(f"per-call time of x + y on two 8-element tensors ({torch.__version__}, "
          f"Python {platform.python_version()}, {platform.machine()})")  # fmt: skip
    print(f"{'':32} {'µs/call':>8} {'overhead':>9}")
    for name, t in times.items():
        print(f"{name:32} {t:8.2f} {t - eager:+9.2f}")
    ours_overhead = times["stage3_guards.jit"] - eager
    torch_overhead = times['torch.compile(backend="eager")'] - eager
    print(f"ours / torch.compile overhead: {ours_overhead / torch_overhead:.2f}")


if __name__ == "__main__":
    main()
