"""The model zoo (benchmarks/zoo.py), compiled: equal to eager, in one graph, compiled once.

Each model runs under `no_grad`, with the eager backend and with the C++
inductor. torch.compile captures each of them in one graph with no break,
so ours must too: a break or a frame run eagerly here is a gap in the VM.
"""

import pytest
import torch

import stage3_guards
import stage4_fx
from benchmarks.zoo import ZOO, tensors_of
from stage5_inductor_cpp import compile_fx

BACKENDS = {"eager": "eager", "inductor": compile_fx}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ZOO)
def test_model_equals_eager_in_one_graph(name, backend):
    model, args = ZOO[name]("tiny")
    with torch.no_grad():
        expected = model(*args)
        compiled = stage4_fx.compile(model, backend=BACKENDS[backend])
        stage3_guards.counters.reset()
        actual = compiled(*args)
        again = compiled(*args)
        compiles = stage3_guards.counters.compiled
        explained = stage4_fx.explain(model)(*args)
    assert type(actual) is type(expected)
    expected_tensors = tensors_of(expected)
    assert expected_tensors
    for result in (actual, again):
        found = tensors_of(result)
        assert len(found) == len(expected_tensors)
        for a, e in zip(found, expected_tensors, strict=True):
            torch.testing.assert_close(a, e, rtol=1e-4, atol=1e-4)
    assert compiles == 1, "the second call compiled again"
    assert explained.graph_break_count == 0, explained.break_reasons
    assert explained.graph_count == 1
