"""Many real models through stage 6, each against eager: a crash or a wrong answer fails the run.

The zoo (benchmarks/zoo.py) is what the test suite checks on every change; this sweep
goes wider, as a user would: Hugging Face `transformers` and `timm` models, default
configurations cut to 2 layers, random weights, eval mode, float32, under `no_grad`.
Each model runs eagerly, under `torch.compile` (torch's inductor) and under ours
(stage 4's frontend with stage 6's `compile_fx`), on the same inputs. An error is the
largest difference from eager's output, relative to that output's largest value, over
every tensor the model returns. Ours passes when its error is at most `FACTOR` times
torch.compile's own, or below `FLOOR` (float32's rounding noise over a model: sums in
another order).

Each model runs in a process of its own, so that one crash stops nothing else; the run
prints one line per model (model, graphs, error of ours, error of torch.compile,
verdict) and exits 1 if any model crashed or answered wrongly. A crash's output (the
traceback, with the Triton kernel the compiler refused) goes to `--out`/failures.log.

    python -m benchmarks.model_sweep                     # CUDA: default configs, 2 layers
    python -m benchmarks.model_sweep --device cpu        # tiny configs, Triton interpreted
    python -m benchmarks.model_sweep --models bloom,t5 --jobs 4 --out /tmp/sweep

On the CPU, stage 6's kernels run under Triton's interpreter, each first typed by
Triton's compiler for the GPU (stage6_inductor_triton/checks/typecheck.py), and torch.compile
writes C++: the small form of the same sweep, minutes instead of a GPU. Models that need
`timm` are skipped where it is not installed.
"""

import argparse
import concurrent.futures
import copy
import json
import os
import pathlib
import subprocess
import sys
import time
import traceback

ROOT = pathlib.Path(__file__).resolve().parent.parent
FLOOR = 1e-4  # float32 over a small model: eager and a fused kernel differ by ~1e-6
FACTOR = 4  # ours may be this many times further from eager than torch.compile is

GPT_NEO_LAYERS = [[["global", "local"], 1]]  # its layers' kinds: one global, one local
# Hugging Face causal and masked language models: model class, and the config arguments
# that cut its default configuration to 2 layers.
TEXT = {
    "bert": ("BertModel", {"num_hidden_layers": 2}),
    "gpt2": ("GPT2LMHeadModel", {"n_layer": 2}),
    "bloom": ("BloomForCausalLM", {"n_layer": 2}),
    "gpt_neo": ("GPTNeoForCausalLM", {"num_layers": 2, "attention_types": GPT_NEO_LAYERS}),
    "gptj": ("GPTJForCausalLM", {"n_layer": 2}),
    "t5": ("T5ForConditionalGeneration", {"num_layers": 2, "num_decoder_layers": 2}),
    "t5_6_layers": ("T5ForConditionalGeneration", {}),  # T5's default: 6 layers, d_model 512
    "bart": ("BartForConditionalGeneration", {"encoder_layers": 2, "decoder_layers": 2}),
    "llama": ("LlamaForCausalLM", {"num_hidden_layers": 2}),
    "mistral": ("MistralForCausalLM", {"num_hidden_layers": 2}),
    "qwen2": ("Qwen2ForCausalLM", {"num_hidden_layers": 2}),
    "opt": ("OPTForCausalLM", {"num_hidden_layers": 2}),
    "falcon": ("FalconForCausalLM", {"num_hidden_layers": 2}),
}  # fmt: skip
ENCODER_DECODER = ("t5", "t5_6_layers", "bart")
# Hugging Face vision models: the stages' depths cut to at most 2 blocks each.
VISION = {
    "vit": ("ViTModel", {"num_hidden_layers": 2}),
    "deit": ("DeiTModel", {"num_hidden_layers": 2}),
    "convnext": ("ConvNextModel", {"depths": [2, 2, 2, 2]}),
    "swin": ("SwinModel", {"depths": [2, 2, 2, 2]}),
    "resnet": ("ResNetModel", {"depths": [2, 2, 2, 2]}),
    "regnet": ("RegNetModel", {"depths": [2, 2, 2, 2]}),
    "efficientnet": (  # B0 (the default is B7, 64 blocks)
        "EfficientNetModel",
        {"width_coefficient": 1.0, "depth_coefficient": 1.0, "hidden_dim": 1280},
    ),
    "mobilenet_v2": ("MobileNetV2Model", {}),
}
TIMM = ("mobilenetv3_large_100", "efficientnet_b0", "resnet50", "regnety_002")

# The CPU's tiny configurations: these arguments, where the default configuration has them.
TINY_TEXT = {
    "hidden_size": 32, "n_embd": 32, "d_model": 32, "word_embed_proj_dim": 32,
    "num_attention_heads": 4, "n_head": 4, "num_heads": 4, "num_kv_heads": 4,
    "encoder_attention_heads": 4, "decoder_attention_heads": 4, "num_key_value_heads": 2,
    "intermediate_size": 64, "n_inner": 64, "d_ff": 64, "ffn_dim": 64, "ffn_hidden_size": 64,
    "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "d_kv": 8, "head_dim": 8, "rotary_dim": 4,
    "vocab_size": 300, "max_position_embeddings": 64, "n_positions": 64, "window_size": 8,
}  # fmt: skip
TINY_VISION = {
    "vit": {"hidden_size": 32, "num_attention_heads": 4, "intermediate_size": 64, "patch_size": 8},
    "deit": {"hidden_size": 32, "num_attention_heads": 4, "intermediate_size": 64, "patch_size": 8},
    "convnext": {"hidden_sizes": [8, 16], "depths": [1, 1], "num_stages": 2},
    "swin": {"embed_dim": 16, "depths": [1, 1], "num_heads": [2, 4], "window_size": 4},
    "resnet": {"embedding_size": 8, "hidden_sizes": [16, 32], "depths": [1, 1]},
    "regnet": {"embedding_size": 8, "hidden_sizes": [8, 16], "depths": [1, 1], "groups_width": 8},
    "efficientnet": {"width_coefficient": 0.25, "depth_coefficient": 0.25, "hidden_dim": 320},
    "mobilenet_v2": {"depth_multiplier": 0.35},
}  # fmt: skip
# batch, sequence length, image side
INPUTS = {"cuda": (2, 32, 224), "cpu": (2, 16, 32)}
MODELS = [*TEXT, *VISION, *(f"timm_{name}" for name in TIMM)]


def build(name: str, device: str):
    """The model (eval, float32) and its inputs: `(model, args, kwargs)`."""
    import torch

    batch, seq, side = INPUTS[device]
    tiny = device == "cpu"
    if name.startswith("timm_"):
        import timm

        model = timm.create_model(name.removeprefix("timm_"), pretrained=False)
        return model.eval(), (torch.randn(batch, 3, side, side),), {}
    import transformers

    table = TEXT if name in TEXT else VISION
    class_name, cut = table[name]
    model_class = getattr(transformers, class_name)
    arguments = dict(cut)
    if tiny:
        defaults = model_class.config_class().to_dict()
        small = TINY_VISION.get(name, TINY_TEXT)
        arguments |= {key: value for key, value in small.items() if key in defaults}
    if name in VISION and "image_size" in model_class.config_class().to_dict():
        arguments["image_size"] = side
    model = model_class(model_class.config_class(**arguments)).eval()
    if name in VISION:
        return model, (torch.randn(batch, 3, side, side),), {}
    vocab = min(model.config.vocab_size, 300)
    ids = torch.randint(0, vocab, (batch, seq))
    kwargs = {"decoder_input_ids": ids} if name in ENCODER_DECODER else {}
    return model, (ids,), kwargs


def error(actual, expected) -> float:
    """The largest difference over every tensor of the outputs, relative to each tensor's
    largest value (inf: a tensor missing, or of another shape)."""
    from benchmarks.zoo import tensors_of

    found, wanted = tensors_of(actual), tensors_of(expected)
    if len(found) != len(wanted):
        return float("inf")
    worst = 0.0
    for a, e in zip(found, wanted, strict=True):
        if a.shape != e.shape:
            return float("inf")
        if e.numel() == 0 or not e.is_floating_point():
            worst = max(worst, float((a != e).any()))
            continue
        scale = e.abs().max().clamp_min(1e-6)
        worst = max(worst, ((a.double() - e.double()).abs().max() / scale).item())
    return worst


def run_one(name: str, device: str, float64: bool = False) -> dict:
    """Eager, torch.compile and ours on one model, in this process. `float64`: also each
    one's error from the model run in float64 (which of them is nearer the truth)."""
    import torch

    import stage4_fx
    from stage6_inductor_triton import compile_fx

    torch.manual_seed(0)
    model, args, kwargs = build(name, device)
    truth = copy.deepcopy(model).double().to(device) if float64 else None
    model = model.to(device)
    args = tuple(a.to(device) for a in args)
    kwargs = {k: v.to(device) for k, v in kwargs.items()}
    result = {"model": name}
    outputs = {}
    with torch.no_grad():
        expected = outputs["eager"] = model(*args, **kwargs)
        try:
            start = time.perf_counter()
            compiled = torch.compile(model)
            outputs["torch_compile"] = compiled(*args, **kwargs)
            result["torch_compile"] = error(outputs["torch_compile"], expected)
            result["torch_compile_s"] = time.perf_counter() - start
        except Exception as failure:  # torch's own failure is not ours: noted, not counted
            result["torch_compile_failed"] = f"{type(failure).__name__}: {failure}"[:300]
        torch._dynamo.reset()
        made = []

        def backend(gm, example_inputs):
            made.append(compile_fx(gm, example_inputs))
            return made[-1]

        start = time.perf_counter()
        ours = stage4_fx.compile(model, backend=backend)
        try:
            outputs["ours"] = ours(*args, **kwargs)
            result["ours_again"] = error(ours(*args, **kwargs), expected)
        except Exception as failure:
            traceback.print_exc()  # for failures.log: Triton's error shows the kernel
            result["crash"] = f"{type(failure).__name__}: {failure}".splitlines()[0][:300]
            return result
        result["ours"] = error(outputs["ours"], expected)
        result["ours_s"] = time.perf_counter() - start
        if truth is not None:
            wide = [a.double() if a.is_floating_point() else a for a in args]
            exact = truth(*wide, **kwargs)
            result["vs_float64"] = {k: error(v, exact) for k, v in outputs.items()}
    result["graphs"] = len(made)
    result["in_torch"] = [reason for g in made for reason in g.torch_reasons]
    return result


def verdict(result: dict) -> str:
    if "failed" in result:
        return f"FAILED before ours ran: {result['failed']}"
    if "crash" in result:
        return f"CRASH {result['crash']}"
    ours = max(result["ours"], result["ours_again"])
    allowed = max(FLOOR, FACTOR * result.get("torch_compile", 0.0))
    if not ours <= allowed:  # NaN fails too
        return f"WRONG (allowed {allowed:.1e})"
    return "ok"


def line(result: dict) -> str:
    theirs = result.get("torch_compile")
    theirs = f"{theirs:.1e}" if theirs is not None else "-"
    ours = result.get("ours")
    ours = f"{max(ours, result['ours_again']):.1e}" if ours is not None else "-"
    if "torch_compile_failed" in result:
        theirs = "failed"
    graphs = result.get("graphs", "-")
    in_torch = len(result.get("in_torch", []))
    graphs = f"{graphs}" + (f" ({in_torch} in torch)" if in_torch else "")
    text = f"{result['model']:<26} {graphs:<16} {ours:>9} {theirs:>13}  {verdict(result)}"
    if "vs_float64" in result:
        text += (
            "  (from float64: "
            + ", ".join(f"{k} {v:.1e}" for k, v in result["vs_float64"].items())
            + ")"
        )
    return text


def in_subprocess(name: str, flags: list[str], timeout: float) -> tuple[dict, str]:
    """`run_one` in a process of its own: its result, and its output (for a crash)."""
    command = [sys.executable, "-m", "benchmarks.model_sweep", "--one", name, *flags]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    env.setdefault("MINIDYNAMO_STRICT", "1")  # an internal error raises, never falls back
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT
        )
    except subprocess.TimeoutExpired as expired:
        output = (expired.stdout or b"").decode() if isinstance(expired.stdout, bytes) else ""
        return {"model": name, "crash": f"timed out after {timeout:.0f} s"}, output
    output = done.stdout + done.stderr
    for text in reversed(done.stdout.splitlines()):
        if text.startswith("RESULT "):
            return json.loads(text.removeprefix("RESULT ")), output
    last = [t for t in done.stderr.splitlines() if t.strip()][-1:] or [f"exit {done.returncode}"]
    return {"model": name, "crash": last[0][:300]}, output


def available(name: str) -> bool:
    if not name.startswith("timm_"):
        return True
    try:
        import timm  # noqa: F401
    except ImportError:
        return False
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", choices=sorted(INPUTS))
    parser.add_argument("--models", help="comma-separated names (default: all)")
    parser.add_argument("--jobs", type=int, default=4, help="models compiled at once")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per model")
    parser.add_argument("--out", default="build/model_sweep", help="failures.log, results.json")
    parser.add_argument(
        "--float64", action="store_true", help="also each error from the model in float64"
    )
    parser.add_argument(
        "--no-tf32", action="store_true", help="cuDNN's float32 convolutions in full float32"
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)  # the child process: one model
    options = parser.parse_args()
    if options.one:
        if options.no_tf32:  # eager's default on the GPU rounds convolutions' inputs to TF32
            import torch

            torch.backends.cudnn.allow_tf32 = False
        try:
            result = run_one(options.one, options.device, options.float64)
        except Exception as failure:  # building the model, or eager: the sweep's own fault
            traceback.print_exc()
            result = {"model": options.one, "failed": f"{type(failure).__name__}: {failure}"}
            result["failed"] = result["failed"].splitlines()[0][:300]
        print("RESULT " + json.dumps(result), flush=True)
        return 0
    names = options.models.split(",") if options.models else MODELS
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown models {unknown}; known: {', '.join(MODELS)}")
    out = pathlib.Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"{'model':<26} {'graphs':<16} {'ours':>9} {'torch.compile':>13}  verdict", flush=True)
    results, failed = [], False
    flags = ["--device", options.device]
    flags += ["--float64"] * options.float64 + ["--no-tf32"] * options.no_tf32
    with concurrent.futures.ThreadPoolExecutor(options.jobs) as pool:
        futures = {
            pool.submit(in_subprocess, n, flags, options.timeout): n for n in names if available(n)
        }
        for name in names:
            if not available(name):
                print(f"{name:<26} skipped: timm is not installed", flush=True)
        with open(out / "failures.log", "w") as log:
            for future in concurrent.futures.as_completed(futures):
                result, output = future.result()
                results.append(result)
                print(line(result), flush=True)
                if verdict(result) != "ok":
                    failed = True
                    log.write(f"===== {result['model']}: {verdict(result)}\n{output}\n")
                    log.flush()
    (out / "results.json").write_text(json.dumps(results, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
