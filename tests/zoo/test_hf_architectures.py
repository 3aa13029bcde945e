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
# The graphs expected in torch, by a word of their reason: ConvNeXt's backward views a saved
# tensor that our forward stored channels-last (as_traced hands it the traced strides).
IN_TORCH = {"convnext": ["view"]}


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
