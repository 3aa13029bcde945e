"""Stage 4's pictures: an FX graph, and the graph-break story of an explain() run."""

import operator

import torch

import stage4_fx
from stage4_fx.tools.diagrams import breaks_diagram, graph_diagram


def small_graph() -> torch.fx.GraphModule:
    """A graph with a method call, a keyword argument, and a label Mermaid must not parse."""
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    total = graph.call_method("sum", (x,), {"dim": [0]})
    picked = graph.call_function(operator.getitem, (x, 'say "hi" <b>'))
    summed = graph.call_function(torch.add, (total, picked), {"alpha": 2})
    graph.output((summed,))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def test_graph_diagram_draws_placeholders_calls_and_the_output():
    assert graph_diagram(small_graph()) == "\n".join(
        [
            "```mermaid",
            "flowchart TD",
            '    n_x(["x"])',
            '    n_sum_1["sum_1 = x.sum(dim=[0])"]',
            "    n_x --> n_sum_1",
            "    n_getitem[\"getitem =<br/>operator.getitem(x, 'say #quot;hi#quot; #lt;b#gt;')\"]",
            "    n_x --> n_getitem",
            '    n_add["add =<br/>torch.add(sum_1, getitem, alpha=2)"]',
            "    n_sum_1 --> n_add",
            "    n_getitem --> n_add",
            '    n_output[["return (add,)"]]',
            "    n_add --> n_output",
            "```",
        ]
    )


def branchy(x):
    x = x * 2
    if x.sum() > 0:
        return x.relu()
    return -x


def test_breaks_diagram_follows_the_break_into_the_resume_function():
    report = stage4_fx.explain(branchy)(torch.ones(4))
    taken, other = (resume.name for resume in report.frames[0].resumes)
    line = branchy.__code__.co_firstlineno + 2
    assert breaks_diagram(report) == "\n".join(
        [
            "```mermaid",
            "flowchart TD",
            '    subgraph n_frame_0["branchy"]',
            '        n_graph_0["graph 1: mul, sum, gt"]',
            f'        n_break_0{{{{"graph break: data_dependent_branch<br/>line {line}: '
            'if x.sum() #gt; 0:"}}',
            "        n_graph_0 --> n_break_0",
            "    end",
            f'    n_break_0 -->|"{taken}"| n_frame_1',
            f'    n_resume_0_1["{other}<br/>not called in this run"]',
            "    n_break_0 -.-> n_resume_0_1",
            f'    subgraph n_frame_1["{taken}"]',
            '        n_graph_1["graph 2: relu"]',
            "    end",
            "```",
        ]
    )


def counted_rows(x):
    total = 0.0
    for row in x:
        total = total + row.max().item()
    return x * total


def test_breaks_diagram_chains_the_frames_of_a_loop():
    report = stage4_fx.explain(counted_rows)(torch.randn(2, 3))
    diagram = breaks_diagram(report)
    assert report.graph_count == 3
    for i in range(3):
        assert f'subgraph n_frame_{i}["' in diagram
    assert "n_break_0 -->|" in diagram and "n_break_1 -->|" in diagram
    assert "not called" not in diagram


def prints_in_try(x):
    try:
        print("inside try")
        return x + 1
    except ValueError:
        return x


def test_breaks_diagram_shows_a_frame_that_ran_eagerly():
    report = stage4_fx.explain(prints_in_try)(torch.ones(2))
    line = prints_in_try.__code__.co_firstlineno + 2
    assert breaks_diagram(report) == "\n".join(
        [
            "```mermaid",
            "flowchart TD",
            '    n_eager_0{{"prints_in_try runs eagerly<br/>graph break: break_in_block<br/>'
            f'line {line}: print(#quot;inside try#quot;)"' + "}}",
            "```",
        ]
    )
