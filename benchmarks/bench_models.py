"""Models, side by side in one run: eager vs torch.compile vs ours, inference, whole path.

Ours is stage 4's frontend with stage 5's C++ inductor on the CPU, or stage 6's Triton
inductor with `--device cuda`. The models come from benchmarks/zoo.py: ResNet-18, a
BERT and a GPT-2 of small config (Hugging Face `transformers`), the nanoGPT block; on the
GPU, ResNet-50 for ResNet-18 and base configs (`--size base`: BERT-base and GPT-2 widths).
For each model the run prints the times, the ratios, and what our inductor made of
its graphs: kernels generated, extern calls into torch, and graphs run whole in torch
(with their reasons). Results are checked against eager before anything is timed.

    .venv/bin/python -m benchmarks.bench_models                 # CPU, "small" models
    python -m benchmarks.bench_models --device cuda --size base   # the GPU machine
    ... --json docs/data/bench_models_cpu.json                    # also record the run

Targets (issue 12): ours / torch.compile <= 1.10 on each CPU model; on the GPU
<= 1.25 and faster than eager. Times are the best of `--rounds` rounds taken in
turns (eager, torch.compile, ours, again), after the calls that compile.
"""

import argparse
import time

import torch

import stage4_fx
from benchmarks import report
from benchmarks.zoo import ZOO, tensors_of

MODELS = {  # the models for each device
    "cpu": ("resnet18", "bert", "gpt2", "nanogpt_block"),
    "cuda": ("resnet50", "bert", "gpt2", "nanogpt_block"),
}
TARGETS = {"cpu": 1.10, "cuda": 1.25}


def per_call_s(fn, args, device, calls: int) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls


def our_backend(device):
    """Our inductor for `device`, and the list of CompiledGraphs it made."""
    if device.type == "cuda":
        from stage6_inductor_triton import compile_fx
    else:
        from stage5_inductor_cpp import compile_fx
    made = []

    def backend(gm, example_inputs):
        made.append(compile_fx(gm, example_inputs))
        return made[-1]

    return backend, made


def kernel_summary(made) -> dict:
    """Kernels, externs, and graphs run in torch, over every graph our inductor compiled."""
    kernels = sum(len(g.last.kernel_names) for g in made if g.last)
    externs = sum(len(g.last.extern_names) for g in made if g.last)
    in_torch = [reason for g in made for reason in g.torch_reasons]
    return {"graphs": len(made), "kernels": kernels, "externs": externs, "in_torch": in_torch}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--size", default="small", choices=("tiny", "small", "base"))
    parser.add_argument("--models", help="comma-separated zoo names (default: the device's)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", metavar="PATH", help="also write the results to PATH")
    options = parser.parse_args()
    device = torch.device(options.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("bench_models: skipped (no CUDA device)")
        return 0
    limit = TARGETS[device.type]
    print(f"models ({options.size}) on {device.type}, torch {torch.__version__}")
    header = ["eager ms", "compile ms", "ours ms", "ours/compile", "eager/ours"]
    print("model".ljust(16) + "".join(h.rjust(14) for h in header) + "   kernels externs in-torch")
    rows, targets, reasons = [], [], {}
    for name in (options.models or ",".join(MODELS[device.type])).split(","):
        torch.manual_seed(0)
        model, args = ZOO[name](options.size)
        model = model.to(device).eval()
        args = [a.to(device) if isinstance(a, torch.Tensor) else a for a in args]
        backend, made = our_backend(device)
        stage4_fx.reset()
        torch._dynamo.reset()
        candidates = {
            "eager": model,
            "torch.compile": torch.compile(model),
            "ours": stage4_fx.compile(model, backend=backend),
        }
        with torch.no_grad():
            expected = tensors_of(model(*args))
            for label, fn in candidates.items():  # compiles, and checks against eager
                for _ in range(2):
                    found = tensors_of(fn(*args))
                for a, e in zip(found, expected, strict=True):
                    torch.testing.assert_close(
                        a,
                        e,
                        atol=1e-3,
                        rtol=1e-3,
                        msg=lambda m, lb=f"{name}, {label}": f"{lb}: {m}",
                    )
            calls = max(1, int(0.2 / max(per_call_s(model, args, device, 1), 1e-6)))
            best = dict.fromkeys(candidates, float("inf"))
            for _ in range(options.rounds):
                for label, fn in candidates.items():
                    best[label] = min(best[label], per_call_s(fn, args, device, calls))
        summary = kernel_summary(made)
        reasons[name] = summary["in_torch"]
        ms = [best[k] * 1e3 for k in candidates]
        ratio = best["ours"] / best["torch.compile"]
        cells = [f"{t:.3f}" for t in ms] + [f"{ratio:.2f}", f"{best['eager'] / best['ours']:.2f}"]
        print(name.ljust(16) + "".join(c.rjust(14) for c in cells), end="")
        print(f"   {summary['kernels']:7d} {summary['externs']:7d} {len(summary['in_torch']):8d}")
        rows.append(
            report.row(
                name,
                *(t * 1e3 for t in ms),
                kernels=summary["kernels"],
                externs=summary["externs"],
                graphs_in_torch=len(summary["in_torch"]),
            )
        )
        targets.append(report.target(f"{name}: ours / torch.compile <= {limit}", ratio <= limit))
        if device.type == "cuda":
            faster = best["ours"] < best["eager"]
            targets.append(report.target(f"{name}: ours faster than eager", faster))
    for name, why in reasons.items():
        for reason in dict.fromkeys(why):
            print(f"{name}: a graph ran in torch: {reason}")
    print(report.verdict(targets))
    if options.json:
        device_name = (
            torch.cuda.get_device_name() if device.type == "cuda" else report.cpu_description()
        )
        report.write(
            options.json,
            benchmark="benchmarks/bench_models.py",
            what=f"models ({options.size}), inference under no_grad, best of "
            f"{options.rounds} rounds taken in turns, compiles not counted",
            device=device_name,
            rows=rows,
            targets=targets,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
