"""The zoo's transformers under changing batch sizes and sequence lengths.

BERT and GPT-2 (the zoo's small configs) are called with batch sizes 1 to 16
and sequence lengths 8 to 128: the first call compiles a static graph, the
second (both sizes changed) one graph with both dims symbolic, and every later
call runs that graph. torch.compile compiles them twice too. Batch size 1
comes first: after the symbolic graph, a size 1 would compile a third graph,
as in torch (sizes 0 and 1 are specialised). Through stage 5's inductor, the
symbolic graph's kernels take the two sizes as arguments: one C++ compile serves
every later size (stage5_inductor_cpp/sizes.py).
"""

import pytest
import torch

import stage3_guards
import stage4_fx
from benchmarks.zoo import ZOO, tensors_of
from tests.stage5.helpers import KeepGraphs

SIZES = [(1, 8), (2, 16), (16, 128), (5, 64), (8, 8), (3, 100)]  # (batch, sequence length)


@pytest.mark.parametrize("backend", ["eager", "inductor"])
@pytest.mark.parametrize("name", ["bert", "gpt2"])
def test_a_transformer_compiles_twice_over_batch_and_sequence_lengths(name, backend):
    model, _ = ZOO[name]("small")
    inductor = KeepGraphs()
    compiled = stage4_fx.compile(model, backend=inductor if backend == "inductor" else backend)
    with torch.no_grad():
        for batch, length in SIZES:
            ids = torch.randint(0, 1000, (batch, length))
            expected, actual = model(ids), compiled(ids)
            found, wanted = tensors_of(actual), tensors_of(expected)
            assert len(found) == len(wanted)
            for a, e in zip(found, wanted, strict=True):
                torch.testing.assert_close(a, e, rtol=1e-4, atol=1e-4)
    counters = stage3_guards.counters
    assert (counters.compiled, counters.eager) == (2, 0)
    assert not compiled.options.breaks
    [cache] = [c for c in compiled.options.caches.values() if c.entries]
    assert cache.recompile_reasons[0].endswith("dim 1 of item 0 of local 'args' is now dynamic")
    if backend == "inductor":
        static, symbolic = inductor.graphs
        assert static.symbolic is None and symbolic.symbolic is not None, symbolic.per_size_reason
        assert set(map(id, symbolic.specializations.values())) == {id(symbolic.symbolic)}


IMAGE_SIDES = (64, 72, 80, 96, 112)


@pytest.mark.parametrize("name", ["resnet18", "vit"])
def test_an_image_model_compiles_twice_over_five_image_sizes(name):
    """Convolutions, poolings and patches give sizes such as `(s0 - 1)//2 + 1`: computed
    sizes that the wrapper works out and the kernels take as arguments
    (stage5_inductor_cpp/symbolic/computed.py), so the second compile serves every size.
    The ViT resizes its position embeddings to the patch grid (`interpolate_pos_encoding`)."""
    model, _ = ZOO[name]("tiny")
    if name == "vit":
        forward = model

        def model(x):
            return forward(x, interpolate_pos_encoding=True).last_hidden_state

    inductor = KeepGraphs()
    compiled = stage4_fx.compile(model, backend=inductor)
    with torch.no_grad():
        for side in IMAGE_SIDES:
            x = torch.randn(2, 3, side, side)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    assert (stage3_guards.counters.compiled, stage3_guards.counters.eager) == (2, 0)
    static, symbolic = inductor.graphs
    assert static.symbolic is None  # the first call: kernels for its sizes
    assert symbolic.symbolic is not None, symbolic.per_size_reason
    assert set(map(id, symbolic.specializations.values())) == {id(symbolic.symbolic)}
