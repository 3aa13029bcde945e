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
