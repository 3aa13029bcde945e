"""Graphs and graph breaks on many Hugging Face architectures: ours against torch.compile.

Each architecture is built from its default configuration cut to a tiny one (two layers,
width 32, random weights, dropout off), in eval mode under `no_grad`, and explained on the
same inputs in one process, as a user's program would run both: by `stage4_fx.explain`
and by `torch._dynamo.explain`, each with the eager backend, so that the counts are the
frontends' alone, after one eager call, so that both see the model as a program's later
calls do (BigBird replaces its attention modules at its first call). A row passes when
ours makes no more graphs and no more breaks than torch.compile. The sweep of
benchmarks/model_sweep.py checks the compiled answers (on the GPU); this one is about
what the frontends capture, on the CPU in minutes.

    .venv/bin/python -m benchmarks.graph_counts                    # every architecture
    .venv/bin/python -m benchmarks.graph_counts --models bert,ctrl
    ... --json docs/data/graph_counts.json                         # the book's record

tests/zoo/test_graph_counts.py runs a third of them in CI (`CI_THIRD`).
"""

import argparse
import platform
import sys
import warnings

import torch

import stage4_fx
from benchmarks import report

# Model types (transformers' names), by kind: text encoders, decoders, encoder-decoders,
# vision, speech.
ARCHITECTURES = (
    "bert", "roberta", "albert", "distilbert", "electra", "deberta", "xlm-roberta", "mpnet",
    "big_bird", "canine", "convbert", "data2vec-text", "ernie", "ibert", "layoutlm", "luke",
    "megatron-bert", "mobilebert", "mra", "nystromformer", "rembert", "roc_bert", "roformer",
    "yoso", "fnet", "flaubert", "xlm", "longformer",
    "gpt2", "gptj", "gpt_neox", "bloom", "opt", "llama", "mistral", "mixtral", "qwen2",
    "qwen2_moe", "qwen3", "phi", "phimoe", "gemma", "gemma2", "falcon", "stablelm",
    "starcoder2", "codegen", "mpt", "ctrl", "xlnet", "biogpt", "gpt_bigcode", "olmo", "olmo2",
    "persimmon", "xglm", "cohere", "granite", "nemotron", "helium", "rwkv", "mamba",
    "t5", "mt5", "bart", "mbart", "pegasus", "blenderbot", "m2m_100", "prophetnet", "led",
    "vit", "deit", "beit", "convnext", "convnextv2", "resnet", "regnet", "mobilevit",
    "mobilevitv2", "poolformer", "dinov2", "efficientnet", "mobilenet_v1", "mobilenet_v2",
    "yolos", "bit", "focalnet", "vit_mae", "vit_msn", "dpt", "swiftformer", "ijepa",
    "data2vec-vision", "textnet",
    "wav2vec2", "hubert", "wavlm", "sew", "unispeech", "data2vec-audio",
)  # fmt: skip
# A third, one of each kind and the ones that found bugs (CodeGen, CTRL): in CI.
CI_THIRD = (
    "bert", "albert", "deberta", "electra", "mobilebert", "roformer", "xlnet", "fnet",
    "gpt2", "llama", "mistral", "qwen2", "phi", "gemma2", "falcon", "codegen", "ctrl", "bloom",
    "opt", "biogpt", "t5", "bart", "pegasus", "m2m_100", "vit", "convnext", "resnet",
    "mobilevit", "dinov2", "efficientnet", "yolos", "wav2vec2", "hubert",
)  # fmt: skip
# The tiny configuration: these arguments, where the default configuration has them.
TINY = {
    "hidden_size": 32, "n_embd": 32, "d_model": 32, "word_embed_proj_dim": 32,
    "embed_dim": 32, "num_attention_heads": 4, "n_head": 4, "num_heads": 4,
    "encoder_attention_heads": 4, "decoder_attention_heads": 4, "num_key_value_heads": 2,
    "intermediate_size": 64, "n_inner": 64, "d_ff": 64, "ffn_dim": 64, "encoder_ffn_dim": 64,
    "decoder_ffn_dim": 64, "d_kv": 8, "head_dim": 8, "vocab_size": 300,
    "max_position_embeddings": 64, "n_positions": 64, "num_hidden_layers": 2, "n_layer": 2,
    "num_layers": 2, "encoder_layers": 2, "decoder_layers": 2, "num_decoder_layers": 2,
    "rotary_dim": 4,
}  # fmt: skip


def build(model_type: str):
    """The architecture, tiny, and its inputs (seed 0): `(model, kwargs)`."""
    import transformers

    torch.manual_seed(0)
    defaults = transformers.AutoConfig.for_model(model_type).to_dict()
    config = transformers.AutoConfig.for_model(
        model_type, **{key: value for key, value in TINY.items() if key in defaults}
    )
    for key, value in vars(config).items():
        if "dropout" in key and isinstance(value, float):
            setattr(config, key, 0.0)
    model = transformers.AutoModel.from_config(config).eval()
    generator = torch.Generator().manual_seed(0)
    kind = model.main_input_name
    if kind == "pixel_values":
        side = getattr(config, "image_size", 32)
        side = side if isinstance(side, int) else side[0]
        channels = getattr(config, "num_channels", 3)
        return model, {kind: torch.randn(2, channels, side, side, generator=generator)}
    if kind == "input_values":
        return model, {kind: torch.randn(2, 4000, generator=generator)}
    ids = torch.randint(0, 200, (2, 16), generator=generator)
    inputs = {"input_ids": ids}
    if getattr(config, "is_encoder_decoder", False):
        inputs["decoder_input_ids"] = ids
    return model, inputs


def counts(model_type: str, built=None) -> dict:
    """One row: the graphs and breaks of ours and of torch.compile, ours' break reasons.
    `built`: what `build(model_type)` returned, if the caller built it already."""
    model, inputs = built or build(model_type)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model(**inputs)  # BigBird replaces its attention modules at its first call
        ours = stage4_fx.explain(model)(**inputs)
        stage4_fx.reset()
        theirs = torch._dynamo.explain(model)(**inputs)
        torch._dynamo.reset()
    row = {
        "model": model_type,
        "graphs_ours": ours.graph_count, "breaks_ours": ours.graph_break_count,
        "graphs_torch_compile": theirs.graph_count,
        "breaks_torch_compile": theirs.graph_break_count,
        "reasons_ours": sorted({str(b).splitlines()[0][:160] for b in ours.break_reasons}),
    }  # fmt: skip
    row["passes"] = (
        row["graphs_ours"] <= row["graphs_torch_compile"]
        and row["breaks_ours"] <= row["breaks_torch_compile"]
    )
    return row


def table(rows: list[dict]) -> str:
    """The rows as a markdown table."""
    lines = ["| model | graphs/breaks, ours | torch.compile | no more than torch.compile |"]
    lines.append("|---|---|---|---|")
    for r in rows:
        ours = f"{r['graphs_ours']}/{r['breaks_ours']}"
        theirs = f"{r['graphs_torch_compile']}/{r['breaks_torch_compile']}"
        lines.append(f"| {r['model']} | {ours} | {theirs} | {'yes' if r['passes'] else 'no'} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated model types (default: all)")
    parser.add_argument("--json", help="write the rows to this file")
    options = parser.parse_args()
    names = options.models.split(",") if options.models else ARCHITECTURES
    rows = []
    for name in names:
        rows.append(counts(name))
        r = rows[-1]
        shown = f"ours {r['graphs_ours']}/{r['breaks_ours']}, "
        shown += f"torch.compile {r['graphs_torch_compile']}/{r['breaks_torch_compile']}"
        print(
            f"{name:24s} {shown}{'' if r['passes'] else '   MORE: ' + str(r['reasons_ours'][:2])}"
        )
    passed = sum(r["passes"] for r in rows)
    print(f"{passed} of {len(rows)} architectures: no more graphs and breaks than torch.compile")
    if options.json:
        import transformers

        record = {
            "benchmark": "benchmarks/graph_counts.py",
            "date": report.utc_now(),
            "python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__, "rows": rows,
        }  # fmt: skip
        report.dump(options.json, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
