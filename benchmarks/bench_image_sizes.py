"""Image models at five image sizes: how many compiles, and the answers equal to eager.

    .venv/bin/python -m benchmarks.bench_image_sizes                        # CPU, "small"
    python -m benchmarks.bench_image_sizes --device cuda --size base         # the GPU machine
    ... --json docs/data/bench_image_sizes_cpu.json                          # also record

ResNet-50 (as torchvision writes it) and ViT (Hugging Face, with
`interpolate_pos_encoding`, as timm's `dynamic_img_size`) from benchmarks/zoo.py, and a
segmentation net in PSPNet's shape (`pspnet`, below: pyramid pooling and a second,
smaller scale) are called through stage 4's frontend and our inductor (stage 5's C++ on
the CPU, stage 6's Triton with `--device cuda`) at five image sizes. The first call
compiles kernels for its size; the second sees the height and width change, marks them
dynamic and compiles kernels that take the sizes as arguments, floor divisions included
(a convolution's `(s0 - 1)//2 + 1` rows: stage5_inductor_cpp/symbolic/computed.py), and
sizes computed in floats (the smaller scale's `int(0.75*float(s0))` rows: float_sizes.py);
the other three run them. Targets: at most two compiles per model, every call equal to
eager, and the symbolic graph serving the later sizes. Each row also gives the seconds of
each call (the two compiles show) and of eager's.
"""

import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import stage3_guards
import stage4_fx
from benchmarks import report
from benchmarks.zoo import IMAGES, ZOO, BasicBlock, ResNet, _randomize_batch_norm

# The ViT's own side (224 at "small" and "base") is left out: there Hugging Face's
# `interpolate_pos_encoding` returns the embeddings as they are, a branch on the sizes
# that compiles a third graph, in torch.compile as in ours.
SIDES = {"tiny": (64, 72, 80, 96, 112), "small": (128, 160, 176, 192, 256)}
SIDES["base"] = (160, 192, 256, 288, 320)


class PyramidSegmenter(nn.Module):
    """PSPNet's shape on a ResNet-18 trunk: the features pooled to 1, 2, 3 and 6 bins a side
    (adaptive pools, of features smaller than 6 too) and brought back to their size, classes
    per pixel upsampled to the image's; run at a second scale, 0.75 (multi-scale inference),
    whose sides are computed in floats, and the two averaged."""

    def __init__(self, width: int, classes: int = 8):
        super().__init__()
        trunk = ResNet((2, 2, 2, 2), classes, width, BasicBlock)
        stem = (trunk.conv1, trunk.bn1, trunk.relu, trunk.maxpool)
        self.trunk = nn.Sequential(*stem, trunk.layer1, trunk.layer2, trunk.layer3, trunk.layer4)
        self.bins = (1, 2, 3, 6)
        self.reduce = nn.ModuleList(nn.Conv2d(width * 8, width * 2, 1) for _ in self.bins)
        self.classify = nn.Conv2d(width * 16, classes, 3, padding=1)

    def segment(self, x, size):
        features = self.trunk(x)
        pyramid = [features] + [
            F.interpolate(conv(F.adaptive_avg_pool2d(features, bins)), features.shape[-2:],
                          mode="bilinear", align_corners=False)
            for bins, conv in zip(self.bins, self.reduce, strict=True)
        ]  # fmt: skip
        logits = self.classify(torch.cat(pyramid, 1))
        return F.interpolate(logits, size, mode="bilinear", align_corners=False)

    def forward(self, x):
        smaller = F.interpolate(x, scale_factor=0.75, mode="bilinear", align_corners=False)
        return (self.segment(x, x.shape[-2:]) + self.segment(smaller, x.shape[-2:])) / 2


def pspnet(size: str, batch: int | None = None):
    model = PyramidSegmenter(16 if size == "tiny" else 64)
    _randomize_batch_norm(model)
    size_batch, side = IMAGES[size]
    return model.eval(), (torch.randn(batch or size_batch, 3, side, side),)


def image_model(name: str, size: str, device: str, batch: int | None):
    """The model in eval mode on `device`, as a function of an image batch."""
    model, (example,) = (pspnet if name == "pspnet" else ZOO[name])(size, batch=batch)
    model = model.to(device)
    if name == "vit":
        return lambda x: model(x, interpolate_pos_encoding=True).last_hidden_state, example
    return model, example


def our_backend(device: str, graphs: list):
    if device == "cuda":
        from stage6_inductor_triton import compile_fx
    else:
        from stage5_inductor_cpp import compile_fx

    def backend(gm, example_inputs):
        graphs.append(compile_fx(gm, example_inputs))
        return graphs[-1]

    return backend


def seconds(fn, x) -> float:
    if x.is_cuda:
        torch.cuda.synchronize()
    start = time.perf_counter()
    fn(x)
    if x.is_cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - start


def run_model(name: str, options) -> tuple[dict, list[dict]]:
    stage4_fx.reset()
    fn, example = image_model(name, options.size, options.device, options.batch)
    graphs = []
    compiled = stage4_fx.compile(fn, backend=our_backend(options.device, graphs))
    calls, equal = [], True
    with torch.no_grad():
        for side in SIDES[options.size]:
            x = torch.randn(example.shape[0], 3, side, side, device=options.device)
            ours_s, eager_s = seconds(compiled, x), seconds(fn, x)
            try:
                torch.testing.assert_close(compiled(x), fn(x), rtol=1e-3, atol=1e-3)
            except AssertionError as error:
                print(f"{name} at {side}: {error}")
                equal = False
            calls.append({"side": side, "ours_s": round(ours_s, 4), "eager_s": round(eager_s, 4)})
    compiles = stage3_guards.counters.compiled
    served = len(graphs) == 2 and graphs[1].symbolic is not None
    reasons = [g.per_size_reason for g in graphs if g.per_size_reason]
    print(f"{name}: {compiles} compiles, equal to eager: {equal}, symbolic: {served} {reasons}")
    for call in calls:
        print(f"  {call['side']:>4} px: ours {call['ours_s']:.3f} s, eager {call['eager_s']:.3f} s")
    targets = [
        report.target(f"{name}: at most 2 compiles over 5 image sizes", compiles <= 2),
        report.target(f"{name}: equal to eager at every size", equal),
        report.target(f"{name}: one symbolic graph serves the later sizes", served),
    ]
    return {"model": name, "compiles": compiles, "calls": calls, "reasons": reasons}, targets


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--size", default="small", choices=tuple(SIDES))
    parser.add_argument("--models", default="resnet50,vit,pspnet")
    parser.add_argument("--batch", type=int, help="images a call (default: the zoo's)")
    parser.add_argument("--json", metavar="PATH", help="also write the results to PATH")
    options = parser.parse_args()
    results, targets = [], []
    for name in options.models.split(","):
        result, model_targets = run_model(name, options)
        results.append(result)
        targets += model_targets
    if options.json:
        cuda = options.device == "cuda"
        device = torch.cuda.get_device_name() if cuda else report.cpu_description()
        report.write(
            options.json, benchmark="benchmarks/bench_image_sizes.py",
            what=f"{options.size} models, seconds of each call (compiles included)",
            device=device, rows=[], targets=targets, extra={"models": results},
        )  # fmt: skip
    print(report.verdict(targets))
    return 0 if all(t["met"] for t in targets) else 1


if __name__ == "__main__":
    raise SystemExit(main())
