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

`--train` times a training step: forward, a loss (the model's first output squared, times
fixed random weights, averaged), backward and an SGD step, on the nanoGPT block and ResNet-18
(CPU) or ResNet-50 and GPT-2 (GPU), each model in training mode with its dropout off
(compiled dropout draws other random numbers than eager's). Each system's first three
steps, from the same weights, are checked against eager's (loss and every gradient)
before anything is timed: the third is a replay under reduce-overhead. The run also
prints the memory autograd saves for the backward (`saved_tensors_hooks`), ours against
eager's. Targets: ours / torch.compile <= 1.15 on the CPU; on the GPU <= 1.25 and faster
than eager.

`--amp` runs every system's calls, inference or `--train`, under
`torch.autocast(device, dtype=torch.bfloat16)` (`--amp-dtype float16`: float16, whose
training steps go through `torch.amp.GradScaler`), on ResNet-18, BERT, GPT-2 and the
Llama-style model (CPU) or ResNet-50, BERT-base, GPT-2, the Llama-style model and ViT-B/16
(GPU). `--batch` and `--seq` replace the zoo's batch and sequence length, so one run can
be made where launch overhead shows (`--batch 8 --seq 128`) and one where it does not (the
zoo's). Targets: ours / torch.compile <= 1.10 on the CPU; on the GPU <= 1.00 for inference
and <= 1.05 for training.

    .venv/bin/python -m benchmarks.bench_models --amp --json docs/data/bench_models_amp_cpu.json
    python -m benchmarks.bench_models --amp --device cuda --size base --batch 8 --seq 128
    python -m benchmarks.bench_models --amp --device cuda --size base --train \\
        --json docs/data/bench_models_amp_train_gpu.json

Every run also prints and records the graphs and graph breaks of torch.compile
(`torch._dynamo.explain`) and of ours (`stage4_fx.explain`) per model, under the same
autocast and grad mode as the timed calls, with a target that ours makes no more of
either than torch.compile.
"""

import argparse
import contextlib
import copy
import time

import torch

import stage4_fx
from benchmarks import report
from benchmarks.zoo import ZOO, tensors_of

AMP_MODELS = {
    "cpu": ("resnet18", "bert", "gpt2", "llama"),
    "cuda": ("resnet50", "bert", "gpt2", "llama", "vit"),
}
RUNS = {  # (training?, --amp?, device): the models timed, and ours / torch.compile's target
    (False, False, "cpu"): (("resnet18", "bert", "gpt2", "nanogpt_block"), 1.10),
    (False, False, "cuda"): (("resnet50", "bert", "gpt2", "nanogpt_block"), 1.25),
    (True, False, "cpu"): (("nanogpt_block", "resnet18"), 1.15),
    (True, False, "cuda"): (("resnet50", "gpt2"), 1.25),
    (False, True, "cpu"): (AMP_MODELS["cpu"], 1.10),
    (False, True, "cuda"): (AMP_MODELS["cuda"], 1.00),
    (True, True, "cpu"): (AMP_MODELS["cpu"], 1.10),
    (True, True, "cuda"): (AMP_MODELS["cuda"], 1.05),
}
# Under autocast, compiled results are compared with eager's under the same autocast, to
# this tolerance relative to the largest element of each output or gradient (and as rtol).
# A fused kernel may keep in float32 a value eager rounds to 16 bits only where both give
# one rounding of the same value, and the matmuls' sums may run in another order (cuBLAS
# and Triton tile them differently): each such step moves a result by up to an ulp of its
# own size, and a model stacks many. torch.testing's own defaults allow 2 ulps of one op
# (rtol 1.6e-2 for bfloat16, 1e-3 for float16); a model's output is allowed about 4 ulps
# of its scale (bfloat16's ulp at 1.0 is 2**-7, float16's 2**-10), and torch.compile's own
# results must pass the same check, so that a failure of ours means a rounding eager does
# not make, not a tolerance too tight.
AMP_TOLERANCE = {torch.bfloat16: 3e-2, torch.float16: 4e-3}
AMP_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}
# A gradient's tolerance, relative to its largest element: ResNet's batch norms divide by
# batch statistics, so each order of the sums moves its first layers' gradients a little
# (tests/zoo/test_zoo_training.py says how much).
GRAD_TOLERANCE = {"resnet18": 3e-3, "resnet50": 3e-3}
# On the GPU, cuDNN runs float32 convolutions in TF32 by default (a 10-bit mantissa):
# torch.compile's own first-layer gradients of ResNet-50 then differ from eager's by far more
# than float32's rounding, and so may ours.
TF32_TOLERANCE = 5e-2
CHECKED_STEPS = 3  # training steps checked against eager's before timing
# Under autocast, a gradient whose terms cancel (a key projection's bias: softmax does not
# see a shift of all its inputs, so the gradient is 0 in exact arithmetic) is rounding noise
# only, and no tolerance relative to its own largest element holds for it: torch.compile's
# own BERT step misses one by a factor of 100 on an H100. Such a gradient is then judged as
# torch's accuracy checks judge every result (torch._dynamo.utils.same with an fp64_ref):
# against a float64 step without autocast, its error may be at most FP64_MULTIPLIER times
# eager's own.
FP64_MULTIPLIER = 3.0


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


def autocast(options, device):
    """The autocast every system's calls run under: `--amp`'s, or none."""
    if not options.amp:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=AMP_DTYPES[options.amp_dtype])


def graph_counts(model, args) -> dict:
    """The graphs and graph breaks torch.compile and ours make of `model` in the caller's
    autocast and grad mode. Both explains compile afresh with the eager backend (torch's
    resets Dynamo: call it after timing)."""
    theirs = torch._dynamo.explain(model)(*args)
    ours = stage4_fx.explain(model)(*args)
    torch._dynamo.reset()
    return {
        "graphs_torch_compile": theirs.graph_count,
        "breaks_torch_compile": theirs.graph_break_count,
        "graphs_ours": ours.graph_count,
        "breaks_ours": ours.graph_break_count,
        "break_reasons_ours": [str(b).splitlines()[0] for b in ours.break_reasons],
    }


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
    parser.add_argument("--amp", action="store_true", help="every call under torch.autocast")
    parser.add_argument("--amp-dtype", default="bfloat16", choices=tuple(AMP_DTYPES))
    parser.add_argument("--batch", type=int, help="batch size (default: the zoo's)")
    parser.add_argument("--seq", type=int, help="text models' sequence length (the zoo's)")
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
    names, limit = RUNS[False, options.amp, device.type]
    print(f"models ({describe(options)}) on {device.type}, torch {torch.__version__}")
    header = ["eager ms", "compile ms", "ours ms", "ours/compile", "eager/ours"]
    print(
        "model".ljust(16) + "".join(h.rjust(14) for h in header)
        + "   kernels externs in-torch  graphs/breaks torch.compile, ours"
    )  # fmt: skip
    rows, targets, reasons = [], [], {}
    for name in options.models.split(",") if options.models else names:
        model, args = built(name, options, device)
        model.eval()
        stage4_fx.reset()
        torch._dynamo.reset()
        candidates, made = systems(model, options.modes, device, copies=False)
        with torch.no_grad(), autocast(options, device):
            expected = tensors_of(model(*args))
            for label, fn in candidates.items():  # compiles, and checks against eager
                for _ in range(3):  # reduce-overhead: the third call is the first replay
                    found = tensors_of(fn(*args))
                for i, (a, e) in enumerate(zip(found, expected, strict=True)):
                    close(a, e, f"{name}, {label}, output {i}", options, 1e-3, 1e-3)
            best = best_of(candidates, args, device, options.rounds)
            graphs = graph_counts(model, args)
        lines, met, reasons[name] = model_results(
            name, options, best, made, None, limit, device, graphs
        )
        rows += lines
        targets += met
    what = f"models ({describe(options)}), inference under no_grad, best of {options.rounds} "
    what += f"rounds, modes {', '.join(options.modes)}"
    finish(options, device, "benchmarks/bench_models.py", what, rows, targets, reasons)
    return 0


def describe(options) -> str:
    """The run's size, batch and sequence length where given, and autocast: `base, batch 8,
    seq 128, bfloat16 autocast`."""
    parts = [options.size]
    parts += [f"{key} {value}" for key in ("batch", "seq") if (value := getattr(options, key))]
    parts += [f"{options.amp_dtype} autocast"] if options.amp else []
    return ", ".join(parts)


def built(name: str, options, device):
    """The zoo's model `name` and its arguments on `device`, from seed 0."""
    torch.manual_seed(0)
    model, args = ZOO[name](options.size, batch=options.batch, seq=options.seq)
    args = [a.to(device) if isinstance(a, torch.Tensor) else a for a in args]
    return model.to(device), args


def close(found, expected, what: str, options, rtol: float, atol: float):
    """`found` against eager's `expected`; under `--amp`, to AMP_TOLERANCE relative to the
    largest element of `expected` instead (the comment above it says why)."""
    if options.amp:
        rtol = AMP_TOLERANCE[AMP_DTYPES[options.amp_dtype]]
        atol = rtol * expected.abs().max().item() if expected.numel() else 0.0
    torch.testing.assert_close(found, expected, rtol=rtol, atol=atol, msg=lambda m: f"{what}: {m}")


def model_results(name: str, options, best: dict, made: dict, saved, limit, device, graphs):
    """One model's rows (one per mode, printed), its targets, and why some of its graphs
    ran in torch, some calls did not replay, or ours broke its graph."""
    summaries = {mode: kernel_summary(made[mode]) for mode in options.modes}
    why = [r for s in summaries.values() for r in s["in_torch"] + s["no_replay"]]
    why += [f"ours broke the graph: {reason}" for reason in graphs.pop("break_reasons_ours")]
    rows, targets = [], []
    for mode in options.modes:
        row, ratio, times = table_row(name, mode, best, summaries[mode], saved, graphs)
        rows.append(row)
        targets += model_targets(row["workload"], ratio, limit, times, device)
    targets.append(graph_target(name, graphs))
    return rows, targets, why


def graph_target(name: str, graphs: dict):
    """Ours makes no more graphs and no more breaks of the model than torch.compile."""
    text = f"{name}: ours' graphs and breaks <= torch.compile's "
    text += f"({graphs['graphs_torch_compile']} and {graphs['breaks_torch_compile']})"
    met = graphs["graphs_ours"] <= graphs["graphs_torch_compile"]
    return report.target(text, met and graphs["breaks_ours"] <= graphs["breaks_torch_compile"])


def table_row(name: str, mode: str, best: dict, summary: dict, saved, graphs: dict):
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
    print(f" {summary['kernels']:7d} {summary['externs']:7d} {len(summary['in_torch']):8d}", end="")
    counts = [graphs[k] for k in ("graphs_torch_compile", "breaks_torch_compile")]
    counts += [graphs[k] for k in ("graphs_ours", "breaks_ours")]
    print("  {}/{}, {}/{}".format(*counts))
    row = report.row(
        label, *(t * 1e3 for t in ms), kernels=summary["kernels"], externs=summary["externs"],
        graphs_in_torch=len(summary["in_torch"]), **graphs, **more,
    )  # fmt: skip
    return row, ratio, times


# --- training ------------------------------------------------------------------------------


def training_step(model, fn, options, device, dtype=torch.float32):
    """One step of `model` through `fn` (the model, or a compiled model): forward and loss
    (under `--amp`'s autocast), backward, SGD (through a GradScaler for float16, as torch's
    AMP recipe does; with bfloat16 or no autocast, one that does nothing). Returns the loss
    and the gradients (unscaled), before the SGD step.

    The loss is the first output's squares times fixed random weights in [0.5, 1.5),
    averaged: a sum of positive terms, so that it has no cancellation for a relative check,
    and not the plain mean square: BERT's first output leaves a layer norm with unit
    weights, whose mean square is a constant, so every gradient before it would be rounding
    noise."""
    sgd = torch.optim.SGD(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler(device.type, enabled=options.amp_dtype == "float16")
    weights = []  # made at the first call, when the output's shape is known

    def step(*args):
        with autocast(options, device):
            output = tensors_of(fn(*args))[0].to(dtype)
            if not weights:
                seeded = torch.Generator(device).manual_seed(1)
                weights.append(torch.rand(output.shape, generator=seeded, device=device) + 0.5)
            loss = (output.square() * weights[0]).mean()
        scaler.scale(loss).backward()
        scaler.unscale_(sgd)
        grads = [p.grad for p in model.parameters()]
        scaler.step(sgd)
        scaler.update()
        sgd.zero_grad()
        return loss, grads

    return step


def float64_steps(model, args, options, device) -> list:
    """Under `--amp`, CHECKED_STEPS steps of a float64 copy of `model` without autocast: the
    reference that a gradient made of rounding noise is judged against (FP64_MULTIPLIER)."""
    if not options.amp:
        return [None] * CHECKED_STEPS
    model = copy.deepcopy(model).double()
    plain = argparse.Namespace(**{**vars(options), "amp": False, "amp_dtype": "bfloat16"})
    step = training_step(model, model, plain, device, torch.float64)
    args = [
        a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args
    ]
    return [step(*args) for _ in range(CHECKED_STEPS)]


def within_float64_error(found, expected, reference) -> bool:
    """torch's check of a result against a float64 one: its root-mean-square error at most
    FP64_MULTIPLIER times eager's."""

    def rmse(tensor):
        return (tensor.double() - reference).square().mean().sqrt().item()

    return rmse(found) <= FP64_MULTIPLIER * rmse(expected)


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


def check_step(name: str, label: str, found, expected, options, reference=None):
    """A step's loss and gradients against eager's (and a gradient that misses, under
    `--amp`, against the float64 `reference` step's, as FP64_MULTIPLIER says)."""
    tolerance = GRAD_TOLERANCE.get(name, 1e-3)
    (loss, grads), (eager_loss, eager_grads) = found, expected
    close(loss, eager_loss, f"{name}, {label}, loss", options, 1e-3, 1e-3)
    if eager_loss.is_cuda and torch.backends.cudnn.allow_tf32:
        tolerance = max(tolerance, TF32_TOLERANCE)
    for i, (g, e) in enumerate(zip(grads, eager_grads, strict=True)):
        if e is None or g is None:  # a parameter the loss does not reach (BERT's pooler):
            # eager leaves its gradient None, torch.compile's backward may give zeros
            unreached = all(t is None or not t.any() for t in (g, e))
            assert unreached, f"{name}, {label}, gradient {i}: one is None, the other not 0"
            continue
        scale = max(e.abs().max().item(), 1.0)
        try:
            close(g, e, f"{name}, {label}, gradient {i}", options, tolerance, tolerance * scale)
        except AssertionError:
            if reference is None or not within_float64_error(g, e, reference[1][i]):
                raise


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
    names, limit = RUNS[True, options.amp, device.type]
    print(
        f"training step of models ({describe(options)}) on {device.type}, torch {torch.__version__}"
    )
    header = ["eager ms", "compile ms", "ours ms", "ours/compile", "eager/ours", "saved MB e/o"]
    print(
        "model".ljust(16)
        + "".join(h.rjust(14) for h in header)
        + "   saved ours/eager kernels externs in-torch  graphs/breaks torch.compile, ours"
    )
    rows, targets, reasons = [], [], {}
    for name in options.models.split(",") if options.models else names:
        model, args = built(name, options, device)
        model.train()
        for module in model.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
        stage4_fx.reset()
        torch._dynamo.reset()
        fns, made = systems(model, options.modes, device, copies=True)
        steps = {
            label: training_step(module_of(fn), fn, options, device) for label, fn in fns.items()
        }
        ours = next(label for label in fns if label.startswith("ours"))  # the first mode's
        with autocast(options, device):
            saved = {
                label: saved_activation_bytes(fns[key], args, module_of(fns[key]))
                for label, key in (("eager", "eager"), ("ours", ours))
            }
        # From the same weights, three steps each: the first compiles, a recompile happens
        # by the second, and with reduce-overhead the second records and the third replays.
        references = float64_steps(module_of(fns["eager"]), args, options, device)
        expected = [steps["eager"](*args) for _ in range(CHECKED_STEPS)]
        for label in list(steps)[1:]:
            for k, (eager_step, reference) in enumerate(zip(expected, references, strict=True), 1):
                found = steps[label](*args)
                check_step(name, f"{label}, step {k}", found, eager_step, options, reference)
        best = best_of(steps, args, device, options.rounds)
        with autocast(options, device):
            graphs = graph_counts(module_of(fns["eager"]), args)
        lines, met, reasons[name] = model_results(
            name, options, best, made, saved, limit, device, graphs
        )
        rows += lines
        targets += met
    what = f"models ({describe(options)}), a training step (forward, loss, backward, SGD), "
    what += f"best of {options.rounds} rounds, modes {', '.join(options.modes)}"
    finish(options, device, "benchmarks/bench_models.py --train", what, rows, targets, reasons)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
