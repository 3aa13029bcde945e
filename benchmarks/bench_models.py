"""Models, side by side in one run: eager vs torch.compile vs ours, inference or training.

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
    ... --train                                                   # a training step instead

Targets: ours / torch.compile <= 1.10 on each CPU model; on the GPU
<= 1.25 and faster than eager. Times are the best of `--rounds` rounds taken in
turns (eager, torch.compile, ours, again), after the calls that compile.

`--train` times a training step: forward, a loss (the mean square of the
model's first output), backward and an SGD step, on the nanoGPT block and ResNet-18
(CPU) or ResNet-50 and GPT-2 (GPU), each model in training mode with its dropout off
(compiled dropout draws other random numbers than eager's). Each system's first three
steps, from the same weights, are checked against eager's (loss and every gradient)
before anything is timed: the third is a replay under reduce-overhead. The run also
prints the memory autograd saves for the backward (`saved_tensors_hooks`), ours against
eager's. Targets: ours / torch.compile <= 1.15 on the CPU; on the GPU <= 1.25 and faster
than eager.
"""

import argparse
import copy
import time

import torch

import stage4_fx
from benchmarks import report
from benchmarks.zoo import ZOO, tensors_of

MODELS = {  # the models timed on each device
    "cpu": ("resnet18", "bert", "gpt2", "nanogpt_block"),
    "cuda": ("resnet50", "bert", "gpt2", "nanogpt_block"),
}
TARGETS = {"cpu": 1.10, "cuda": 1.25}
TRAIN_MODELS = {"cpu": ("nanogpt_block", "resnet18"), "cuda": ("resnet50", "gpt2")}
TRAIN_TARGETS = {"cpu": 1.15, "cuda": 1.25}
# A gradient's tolerance, relative to its largest element: ResNet's batch norms divide by
# batch statistics, so each order of the sums moves its first layers' gradients a little
# (tests/zoo/test_zoo_training.py says how much).
GRAD_TOLERANCE = {"resnet18": 3e-3, "resnet50": 3e-3}
# On the GPU, cuDNN runs float32 convolutions in TF32 by default (a 10-bit mantissa):
# torch.compile's own first-layer gradients of ResNet-50 then differ from eager's by far more
# than float32's rounding, and so may ours.
TF32_TOLERANCE = 5e-2
CHECKED_STEPS = 3  # training steps checked against eager's before timing


def per_call_s(fn, args, device, calls: int) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls


def best_of(fns: dict, args, device, rounds: int) -> dict:
    """Each function's best time per call over `rounds` rounds taken in turns, each round
    about 0.2 s of calls of the first (eager)."""
    calls = max(1, int(0.2 / max(per_call_s(next(iter(fns.values())), args, device, 1), 1e-6)))
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for label, fn in fns.items():
            best[label] = min(best[label], per_call_s(fn, args, device, calls))
    return best


def our_backend(device):
    """Our inductor for `device`, and the list of CompiledGraphs it made. It takes torch's
    `mode=` (stage 6: "reduce-overhead" records CUDA graphs)."""
    if device.type == "cuda":
        from stage6_inductor_triton import compile_fx
    else:
        from stage5_inductor_cpp import compile_fx
    made = []

    def backend(gm, example_inputs, mode="default"):
        if device.type == "cuda":
            made.append(compile_fx(gm, example_inputs, mode=mode))
        else:  # CUDA graphs are for CUDA tensors: torch.compile records none on the CPU either
            made.append(compile_fx(gm, example_inputs))
        return made[-1]

    return backend, made


def kernel_summary(made) -> dict:
    """Kernels, externs, and graphs run in torch, over every graph our inductor compiled
    (a graph that trained: over its forward and backward graphs); calls that did not
    replay their CUDA graph (reduce-overhead), and why."""
    compiled = [part for g in made for part in (g.parts or [g])]
    kernels = sum(len(g.last.kernel_names) for g in compiled if g.last)
    externs = sum(len(g.last.extern_names) for g in compiled if g.last)
    in_torch = [f"a graph ran in torch: {reason}" for g in made for reason in g.torch_reasons]
    no_replay = [
        f"a call did not replay its CUDA graph: {reason}"
        for g in made
        for reason in getattr(g, "cudagraph_reasons", ())
    ]
    return {
        "graphs": len(made), "kernels": kernels, "externs": externs, "in_torch": in_torch,
        "no_replay": no_replay,
    }  # fmt: skip


def systems(model, modes: list[str], device, copies: bool) -> tuple[dict, dict]:
    """eager, then torch.compile and ours in each mode, labelled `torch.compile` and `ours`
    for "default" (`torch.compile[reduce-overhead]` for another), each on a copy of the
    model when `copies` (training changes the weights); and per mode, the graphs ours made."""
    found, made = {"eager": copy.deepcopy(model) if copies else model}, {}
    for mode in modes:
        suffix = "" if mode == "default" else f"[{mode}]"
        one = copy.deepcopy(model) if copies else model
        found[f"torch.compile{suffix}"] = torch.compile(one, mode=mode)
        backend, made[mode] = our_backend(device)
        mine = copy.deepcopy(model) if copies else model
        found[f"ours{suffix}"] = stage4_fx.compile(mine, backend=backend, mode=mode)
    return found, made


def module_of(fn) -> torch.nn.Module:
    """The model a system runs: itself (eager), or what it compiled."""
    return getattr(fn, "_orig_mod", fn)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--size", default="small", choices=("tiny", "small", "base"))
    parser.add_argument("--models", help="comma-separated zoo names (default: the device's)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", metavar="PATH", help="also write the results to PATH")
    parser.add_argument("--train", action="store_true", help="time a training step instead")
    parser.add_argument(
        "--modes", default="default",
        help="comma-separated torch.compile modes, each timed for torch.compile and ours "
        "(reduce-overhead: CUDA graphs)",
    )  # fmt: skip
    options = parser.parse_args()
    options.modes = options.modes.split(",")
    device = torch.device(options.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("bench_models: skipped (no CUDA device)")
        return 0
    if options.train:
        return train(options, device)
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
        stage4_fx.reset()
        torch._dynamo.reset()
        candidates, made = systems(model, options.modes, device, copies=False)
        with torch.no_grad():
            expected = tensors_of(model(*args))
            for label, fn in candidates.items():  # compiles, and checks against eager
                for _ in range(3):  # reduce-overhead: the third call is the first replay
                    found = tensors_of(fn(*args))
                for a, e in zip(found, expected, strict=True):
                    torch.testing.assert_close(
                        a,
                        e,
                        atol=1e-3,
                        rtol=1e-3,
                        msg=lambda m, lb=f"{name}, {label}": f"{lb}: {m}",
                    )
            best = best_of(candidates, args, device, options.rounds)
        lines, met, reasons[name] = model_results(name, options, best, made, None, limit, device)
        rows += lines
        targets += met
    what = f"models ({options.size}), inference under no_grad, best of {options.rounds} rounds"
    what += f", modes {', '.join(options.modes)}"
    finish(options, device, "benchmarks/bench_models.py", what, rows, targets, reasons)
    return 0


def model_results(name: str, options, best: dict, made: dict, saved, limit, device):
    """One model's rows (one per mode, printed), its targets, and why some of its graphs
    ran in torch or some calls did not replay."""
    summaries = {mode: kernel_summary(made[mode]) for mode in options.modes}
    why = [r for s in summaries.values() for r in s["in_torch"] + s["no_replay"]]
    rows, targets = [], []
    for mode in options.modes:
        row, ratio, times = table_row(name, mode, best, summaries[mode], saved)
        rows.append(row)
        targets += model_targets(row["workload"], ratio, limit, times, device)
    return rows, targets, why


def table_row(name: str, mode: str, best: dict, summary: dict, saved: dict | None):
    """Print one model's line for one mode; return its record, ratio and times."""
    suffix = "" if mode == "default" else f"[{mode}]"
    label = name if mode == "default" else f"{name} ({mode})"
    times = {"eager": best["eager"]}
    times |= {k: best[k + suffix] for k in ("torch.compile", "ours")}
    ms = [t * 1e3 for t in times.values()]
    ratio = times["ours"] / times["torch.compile"]
    digits = 3 if saved is None else 1
    cells = [f"{t:.{digits}f}" for t in ms]
    cells += [f"{ratio:.2f}", f"{times['eager'] / times['ours']:.2f}"]
    more = {}
    if saved is not None:
        cells.append(f"{saved['eager'] / 1e6:.1f}/{saved['ours'] / 1e6:.1f}")
        more = {"saved_bytes_eager": saved["eager"], "saved_bytes_ours": saved["ours"]}
    print(label.ljust(16) + "".join(c.rjust(14) for c in cells), end="")
    if saved is not None:
        print(f"   {saved['ours'] / saved['eager']:16.2f}", end="")
    print(f" {summary['kernels']:7d} {summary['externs']:7d} {len(summary['in_torch']):8d}")
    row = report.row(
        label, *(t * 1e3 for t in ms), kernels=summary["kernels"], externs=summary["externs"],
        graphs_in_torch=len(summary["in_torch"]), **more,
    )  # fmt: skip
    return row, ratio, times


# --- training ------------------------------------------------------------------------------


def training_step(model, fn):
    """One step of `model` through `fn` (the model, or a compiled model): forward, loss,
    backward, SGD. Returns the loss and the gradients, before the SGD step."""
    sgd = torch.optim.SGD(model.parameters(), lr=1e-4)

    def step(*args):
        loss = tensors_of(fn(*args))[0].float().square().mean()
        loss.backward()
        grads = [p.grad for p in model.parameters()]
        sgd.step()
        sgd.zero_grad()
        return loss, grads

    return step


def saved_activation_bytes(fn, args, model) -> int:
    """The bytes autograd keeps for the backward while `fn(*args)` runs forward: distinct
    saved tensors, less the parameters, buffers and inputs, which live anyway."""
    alive = {t.data_ptr() for t in [*model.parameters(), *model.buffers(), *args]}
    storages = {}

    def pack(tensor):
        if tensor.data_ptr() not in alive:
            storages[tensor.data_ptr()] = tensor.nelement() * tensor.element_size()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        tensors_of(fn(*args))[0].float().square().mean()
    return sum(storages.values())


def check_step(name: str, label: str, found, expected):
    """A first step's loss and gradients against eager's."""
    tolerance = GRAD_TOLERANCE.get(name, 1e-3)
    (loss, grads), (eager_loss, eager_grads) = found, expected
    torch.testing.assert_close(loss, eager_loss, atol=1e-3, rtol=1e-3)
    if eager_loss.is_cuda and torch.backends.cudnn.allow_tf32:
        tolerance = max(tolerance, TF32_TOLERANCE)
    for i, (g, e) in enumerate(zip(grads, eager_grads, strict=True)):
        scale = max(e.abs().max().item(), 1.0)
        torch.testing.assert_close(
            g, e, rtol=tolerance, atol=tolerance * scale,
            msg=lambda m, lb=f"{name}, {label}, gradient {i}": f"{lb}: {m}",
        )  # fmt: skip


def model_targets(name: str, ratio: float, limit: float, best: dict, device) -> list:
    """The targets for one model: the ratio to torch.compile, and on the GPU, eager."""
    targets = [report.target(f"{name}: ours / torch.compile <= {limit}", ratio <= limit)]
    if device.type == "cuda":
        faster = best["ours"] < best["eager"]
        targets.append(report.target(f"{name}: ours faster than eager", faster))
    return targets


def finish(options, device, benchmark: str, what: str, rows, targets, reasons):
    """The reasons graphs ran in torch, the verdict, and the record (`--json`)."""
    for name, why in reasons.items():
        for reason in dict.fromkeys(why):
            print(f"{name}: {reason}")
    print(report.verdict(targets))
    if options.json:
        device_name = (
            torch.cuda.get_device_name() if device.type == "cuda" else report.cpu_description()
        )
        what += " taken in turns, compiles not counted"
        report.write(
            options.json, benchmark=benchmark, what=what, device=device_name, rows=rows,
            targets=targets,
        )  # fmt: skip


def train(options, device) -> int:
    """The training table: a step of each model, eager vs torch.compile vs ours."""
    limit = TRAIN_TARGETS[device.type]
    print(f"training step of models ({options.size}) on {device.type}, torch {torch.__version__}")
    header = ["eager ms", "compile ms", "ours ms", "ours/compile", "eager/ours", "saved MB e/o"]
    print(
        "model".ljust(16)
        + "".join(h.rjust(14) for h in header)
        + "   saved ours/eager kernels externs in-torch"
    )
    rows, targets, reasons = [], [], {}
    for name in (options.models or ",".join(TRAIN_MODELS[device.type])).split(","):
        torch.manual_seed(0)
        model, args = ZOO[name](options.size)
        model = model.to(device).train()
        for module in model.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
        args = [a.to(device) if isinstance(a, torch.Tensor) else a for a in args]
        stage4_fx.reset()
        torch._dynamo.reset()
        fns, made = systems(model, options.modes, device, copies=True)
        steps = {label: training_step(module_of(fn), fn) for label, fn in fns.items()}
        ours = next(label for label in fns if label.startswith("ours"))  # the first mode's
        saved = {
            label: saved_activation_bytes(fns[key], args, module_of(fns[key]))
            for label, key in (("eager", "eager"), ("ours", ours))
        }
        # From the same weights, three steps each: the first compiles, a recompile happens
        # by the second, and with reduce-overhead the second records and the third replays.
        expected = [steps["eager"](*args) for _ in range(CHECKED_STEPS)]
        for label in list(steps)[1:]:
            for k, eager_step in enumerate(expected, 1):
                check_step(name, f"{label}, step {k}", steps[label](*args), eager_step)
        best = best_of(steps, args, device, options.rounds)
        lines, met, reasons[name] = model_results(name, options, best, made, saved, limit, device)
        rows += lines
        targets += met
    what = f"models ({options.size}), a training step (forward, loss, backward, SGD), "
    what += f"best of {options.rounds} rounds, modes {', '.join(options.modes)}"
    finish(options, device, "benchmarks/bench_models.py --train", what, rows, targets, reasons)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
