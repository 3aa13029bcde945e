"""Many threads compiling and calling at once, with both inductors: no error, no wrong result.

Before, the ops handler of the IR was one global: a thread writing one kernel
while another wrote its own got the other's handler (`'NoneType' object has no
attribute 'truediv'`, or a wrong kernel).
"""

import threading

import torch

import stage4_fx
import stage5_inductor_cpp
import stage6_inductor_triton

BACKENDS = (stage5_inductor_cpp.compile_fx, stage6_inductor_triton.compile_fx)


def program(k):
    """A different function for each thread (its constants differ, so do its kernels)."""

    def f(x, y):
        return torch.softmax(x * k + y, dim=-1).sum(dim=0) / (k + 1)

    return f


def shared(x, y):
    return (x.sin() + y).relu().mean(dim=1)


def test_threads_compile_distinct_and_shared_functions():
    shared_compiled = [stage4_fx.compile(shared, backend=b) for b in BACKENDS]
    errors, wrong = [], []

    def worker(index):
        try:
            torch.manual_seed(index)
            backend = BACKENDS[index % 2]
            for step in range(3):
                x, y = torch.randn(6, 8 + index), torch.randn(6, 8 + index)
                fn = program(index + step)
                for compiled, eager in (
                    (stage4_fx.compile(fn, backend=backend), fn),
                    (shared_compiled[step % 2], shared),
                ):
                    result = compiled(x, y)
                    if not torch.allclose(result, eager(x, y), atol=1e-5):
                        wrong.append((index, step, eager.__name__))
        except Exception as error:  # the test reports every thread's error, not the first
            errors.append((index, repr(error)))

    run_threads(worker, 8)
    assert not errors and not wrong, (errors, wrong)


def run_threads(worker, count: int):
    """`worker(i)` in `count` threads at once, until all end."""
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_threads_share_one_recording():
    """mode="reduce-overhead" (the CPU's stand-in recorder): threads calling one compiled
    graph each keep every result, and every result is its own inputs'."""
    weight = torch.randn(8, 8)

    def fn(x):
        return (x @ weight).tanh()

    compiled = stage6_inductor_triton.compile_fx(
        torch.fx.symbolic_trace(fn), [torch.randn(4, 8)], mode="reduce-overhead"
    )
    results, errors = {}, []

    def worker(index):
        try:
            inputs = [torch.randn(4, 8) for _ in range(6)]
            results[index] = [(x, compiled(x)) for x in inputs]
        except Exception as error:
            errors.append((index, repr(error)))

    run_threads(worker, 4)
    assert not errors, errors
    for pairs in results.values():
        for x, result in pairs:
            torch.testing.assert_close(result, fn(x))
    assert compiled.last.call.replays >= 1
