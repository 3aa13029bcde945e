"""More Hugging Face architectures, nobody's here, trained one step through our kernels: the
loss and every gradient equal eager's, and each graph that runs in torch is one we expect.

Each found something: RoBERTa's casts with a device (`_to_copy(..., device=cpu)`) sent its
training graph to torch; ConvNeXt's channels-last convolutions came back NCHW from the meta
run, and its traced backward `view`s saved tensors in the traced strides.
"""

import copy

import pytest
import torch
import transformers as T

from tests.zoo.test_zoo_training import close, compiled_keeping_graphs, projected, same_gradients

IDS = torch.randint(0, 300, (2, 16), generator=torch.Generator().manual_seed(0))
IMAGES = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(0))
CASES = {
    "roberta": (lambda: T.RobertaModel(T.RobertaConfig(
        hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
        vocab_size=300, max_position_embeddings=40)), IDS, {}),
    "t5": (lambda: T.T5Model(T.T5Config(
        d_model=32, d_kv=16, d_ff=64, num_layers=1, num_heads=2, vocab_size=300)),
        IDS, {"decoder_input_ids": IDS}),
    "swin": (lambda: T.SwinModel(T.SwinConfig(
        image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 4],
        window_size=4)), IMAGES, {}),
    "convnext": (lambda: T.ConvNextModel(T.ConvNextConfig(
        hidden_sizes=[16, 32], depths=[1, 1], num_stages=2)), IMAGES, {}),
}  # fmt: skip
# The graphs expected in torch, by a word of their reason: none. (ConvNeXt's backward viewed
# a saved tensor that our forward stored channels-last, until the ATen trace's views became
# reshapes: training/aten.py.)
IN_TORCH: dict[str, list[str]] = {}


def without_dropout(config):
    """Functional dropouts read the config's probabilities (not `nn.Dropout` modules)."""
    for key, value in vars(config).items():
        if "drop" in key and isinstance(value, float):
            setattr(config, key, 0.0)
    return config


@pytest.mark.parametrize("name", CASES)
def test_a_training_step_equals_eager(name):
    make, inputs, kwargs = CASES[name]
    model = make()
    without_dropout(model.config)
    model = type(model)(model.config).train()  # built again, its dropouts off
    eager = copy.deepcopy(model)
    compiled, made = compiled_keeping_graphs(model)
    losses = [projected(m(inputs, **kwargs)[0]) for m in (compiled, eager)]
    close(*losses, "loss")
    for loss in losses:
        loss.backward()
    same_gradients(model, eager)
    reasons = [reason for g in made for reason in g.torch_reasons]
    assert len(reasons) == len(IN_TORCH.get(name, [])), reasons
    assert all(word in r for word, r in zip(IN_TORCH.get(name, []), reasons, strict=True))


def error_from(truth: torch.Tensor, value: torch.Tensor) -> float:
    """The largest difference from float64's value, relative to float64's largest element."""
    return ((value.double() - truth).abs().max() / truth.abs().max().clamp_min(1e-6)).item()


def test_mobilenet_v2_trains_as_close_to_float64_as_eager():
    """MobileNetV2 normalises 2 images of 1x1 pixels at its end: each batch variance is the
    square of a difference of two nearly equal numbers, and its running variances differ
    from eager's by up to 4e-4 of their size, beyond a float32 tolerance; its biases before
    a batch norm have gradients that are rounding noise around 0. Float64 decides: ours is
    no more than twice as far from it as eager's float32 is (here the worst gradient is
    5.1e-4 of its largest element off, eager's 3.2e-4; from other images, ours 6.3e-4 and
    eager's 1.5e-3)."""
    config = without_dropout(T.MobileNetV2Config(depth_multiplier=0.35, image_size=32))
    model = T.MobileNetV2Model(config).train()
    eager, truth = copy.deepcopy(model), copy.deepcopy(model).double()
    compiled, made = compiled_keeping_graphs(model)
    for fn, images in ((compiled, IMAGES), (eager, IMAGES), (truth, IMAGES.double())):
        projected(fn(images)[0]).backward()
    assert not [reason for g in made for reason in g.torch_reasons]
    models = (model, eager, truth)
    gradients = [[p.grad for p in m.parameters()] for m in models]
    for values in (gradients, [list(m.buffers()) for m in models]):
        worst = {"ours": 0.0, "eager": 0.0}  # the largest error: over gradients, over buffers
        for ours, theirs, exact in zip(*values, strict=True):
            if exact.is_floating_point() and exact.abs().max() > 1e-5:  # not rounding noise
                worst["ours"] = max(worst["ours"], error_from(exact, ours))
                worst["eager"] = max(worst["eager"], error_from(exact, theirs))
        assert worst["ours"] <= 2 * worst["eager"], worst


ENCODER_DECODERS = {
    "t5": CASES["t5"][0],
    "bart": lambda: T.BartModel(T.BartConfig(
        d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, vocab_size=300,
        max_position_embeddings=40)),
}  # fmt: skip


@pytest.mark.parametrize("name", ENCODER_DECODERS)
def test_an_encoder_decoder_is_one_graph_as_under_torch_compile(name):
    """Their forward deep-copies a config (T5) and looks validators up in a dict keyed by
    typing forms (huggingface_hub): each was a break, 10 to 21 of them a model."""
    import stage4_fx

    model = ENCODER_DECODERS[name]().eval()
    kwargs = {"input_ids": IDS, "decoder_input_ids": IDS}
    with torch.no_grad():
        expected = model(**kwargs).last_hidden_state
        report = stage4_fx.explain(model)(**kwargs)
        actual = stage4_fx.compile(model, backend="eager")(**kwargs).last_hidden_state
    assert (report.graph_count, report.graph_break_count) == (1, 0), report.break_reasons
    torch.testing.assert_close(actual, expected)
