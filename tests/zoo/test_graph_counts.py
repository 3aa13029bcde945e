"""A third of benchmarks/graph_counts.py's Hugging Face architectures, tiny, in CI: ours makes
no more graphs and no more graph breaks than torch.compile on each (both explained with the
eager backend, in one process, as a program would run them)."""

import pytest

from benchmarks.graph_counts import CI_THIRD, counts

pytest.importorskip("transformers")


@pytest.mark.parametrize("model_type", CI_THIRD)
def test_no_more_graphs_and_breaks_than_torch_compile(model_type):
    row = counts(model_type)
    assert row["passes"], row
