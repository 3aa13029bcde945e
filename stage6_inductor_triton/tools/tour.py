"""`minidynamo tour`: one small function through the six stages, printing what each makes.

Each step calls a stage's public API on `toy_example` (TorchDynamo's classic example,
with one branch on a tensor's value) and prints the real objects it returns: the frames
the hook sees, the trace, the guards, the FX graphs and the break, the C++ kernels, the
Triton kernels (compiled for a GPU if there is one, interpreted otherwise), timings.
"""

import dis
import inspect
import textwrap
import time
from collections import defaultdict

import torch

import stage1_eval_frame
import stage2_symbolic_vm
import stage3_guards
import stage4_fx
import stage5_inductor_cpp

from .. import backend as triton_backend


def toy_example(a, b):
    x = a / (torch.abs(a) + 1)
    if b.sum() < 0:  # a branch on a tensor's value: the graph is cut here
        b = b * -1
    return x * b


def header(title: str):
    print(f"\n=== {title} {'=' * max(3, 84 - len(title))}")


def describe(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"{str(value.dtype).removeprefix('torch.')}{list(value.shape)} on {value.device}"
    return textwrap.shorten(repr(value), 200)


def tour_frames(a, b):
    header("1. stage1_eval_frame: the frames the hook sees")
    seen = []

    def callback(frame):
        args = ", ".join(f"{k}: {describe(v)}" for k, v in frame.arguments.items())
        seen.append(f"{frame.code.co_qualname}({args})")
        return None  # let the frame run as usual

    previous = stage1_eval_frame.set_eval_frame(callback)
    try:
        toy_example(a, b)
    finally:
        stage1_eval_frame.set_eval_frame(previous)
    print("toy_example(a, b), called with the hook on; the callback sees each new Python frame:")
    print("\n".join(f"  frame: {text}" for text in seen))
    print("(torch.abs, b.sum() and the operators are C functions: they make no Python frame)")


def tour_trace(a, b):
    header("2. stage2_symbolic_vm: the trace, line by line, next to the bytecode")
    try:
        stage2_symbolic_vm.trace(toy_example, a, b)
        raise AssertionError("toy_example has a data-dependent branch; the VM must stop there")
    except stage2_symbolic_vm.Unsupported as stop:
        source, first = inspect.getsourcelines(toy_example)
        by_line = defaultdict(list)
        for inst in dis.get_instructions(toy_example):
            if inst.positions.lineno is not None and inst.opname not in ("RESUME", "CACHE"):
                by_line[inst.positions.lineno].append(f"{inst.opname} {inst.argrepr}".strip())
        for lineno in range(first + 1, stop.lineno + 1):
            print(f"line {lineno}: {source[lineno - first].strip()}")
            ops = by_line[lineno]
            for i in range(0, len(ops), 5):  # five instructions a line
                print(f"  {'bytecode:' if i == 0 else '':9} {' · '.join(ops[i : i + 5])}")
            for node in stop.trace.nodes:
                if node.lineno == lineno:
                    print(f"  trace:    {node}")
        print(f"\nThe VM stops ({stop.kind}):\n{stop}")


def tour_guards(explained, a, b):
    header("3. stage3_guards: the guards that decide whether the compiled code may run")
    first = explained.frames[0]
    print(f"The guard function of {first.original.co_name} (generated Python, one `and` chain):")
    print(first.guards)
    bigger = torch.cat([a, a])
    reason = stage3_guards.failure_reason(
        first.guards.guards, {"a": bigger, "b": b}, toy_example.__globals__, toy_example
    )
    print(f"Called again with a: {describe(bigger)}, a guard fails: {reason}; stage 3 recompiles.")


def tour_graphs(explained):
    header("4. stage4_fx: FX graphs and the graph break (stage4_fx.explain)")
    print(explained)
    for frame in explained.frames:
        if frame.graph is not None:
            print(f"\nFX graph of {frame.original.co_name}, as Python:{frame.graph.gm.code}")


def recording(compile_fx, compiled: list):
    """A backend (torch.compile's protocol) that keeps what `compile_fx` returns."""

    def backend(gm, example_inputs):
        compiled.append(compile_fx(gm, example_inputs))
        return compiled[-1]

    return backend


def per_call_seconds(rows, rounds: int = 3) -> list[float]:
    """Seconds per call of each `(label, fn, args, calls)`, timed in turns, `rounds` times:
    the turns share whatever else the machine is doing, and each keeps its best round."""
    best = [float("inf")] * len(rows)
    for _ in range(rounds):
        for i, (_, fn, args, calls) in enumerate(rows):
            fn(*args)  # a warm-up call (the very first one compiles), not timed
            sync = torch.cuda.synchronize if args[0].is_cuda else lambda: None
            sync()
            start = time.perf_counter()
            for _ in range(calls):
                fn(*args)
            sync()
            best[i] = min(best[i], (time.perf_counter() - start) / calls)
    return best


def tour_kernels(a, b):
    header("5. stage5_inductor_cpp: the C++ kernels of the first graph")
    cpp_graphs = []
    cpp_backend = recording(stage5_inductor_cpp.compile_fx, cpp_graphs)
    cpp_fn = stage4_fx.compile(toy_example, backend=cpp_backend)
    cpp_fn(a, b)
    print(cpp_graphs[0].code)

    on_gpu = torch.cuda.is_available()
    where = f"compiled for {torch.cuda.get_device_name()}" if on_gpu else "interpreted on the CPU"
    header(f"6. stage6_inductor_triton: the Triton kernels of the first graph ({where})")
    if not on_gpu:
        print("No GPU here: Triton's interpreter runs the kernels that a GPU would compile.\n")
    device_args = (a.cuda(), b.cuda()) if on_gpu else (a, b)
    triton_graphs = []
    triton_backend_fn = recording(triton_backend.compile_fx, triton_graphs)
    triton_fn = stage4_fx.compile(toy_example, backend=triton_backend_fn)
    triton_fn(*device_args)
    print(triton_graphs[0].code)
    same = all(
        torch.allclose(fn(*args).cpu(), toy_example(a, b))
        for fn, args in [(cpp_fn, (a, b)), (triton_fn, device_args)]
    )

    header("Timings per call, side by side: a rough number (tiny inputs, overhead dominates)")
    rows = [("eager PyTorch (CPU)", toy_example, (a, b), 300)]
    if on_gpu:
        rows.append(("eager PyTorch (GPU)", toy_example, device_args, 300))
    rows.append(("stage 4 + stage 5: C++ kernels", cpp_fn, (a, b), 300))
    triton_calls = 300 if on_gpu else 20  # the interpreter takes milliseconds per kernel
    rows.append((f"stage 4 + stage 6: Triton, {where}", triton_fn, device_args, triton_calls))
    times = per_call_seconds(rows)
    width = max(len(label) for label, *_ in rows)
    for (label, _, _, calls), seconds in zip(rows, times, strict=True):
        ratio = seconds / times[0]
        print(
            f"  {label:<{width}} {seconds * 1e6:9.1f} µs {ratio:6.1f}x eager's time ({calls} calls)"
        )
    print("(each: the best of 3 rounds taken in turns; calls that compile are not counted)")
    print(f"Inputs: a, b: {describe(a)}. Results equal to eager: {same}.")


def tour() -> int:
    a, b = (torch.randn(64, generator=torch.Generator().manual_seed(seed)) for seed in (0, 1))
    print("minidynamo tour: one function through the six stages. The function:\n")
    print(inspect.getsource(toy_example))
    tour_frames(a, b)
    tour_trace(a, b)
    explained = stage4_fx.explain(toy_example)(a, b)
    tour_guards(explained, a, b)
    tour_graphs(explained)
    tour_kernels(a, b)
    return 0
