"""The trace as a Mermaid picture, and the label escaping every stage's diagrams rely on."""

import torch

from stage2_symbolic_vm import trace
from stage2_symbolic_vm.tools.diagrams import assignment, label, node_id, trace_diagram


def test_label_escapes_what_mermaid_would_parse():
    text = 'print("a") <b> `c` #d; e & f\nsecond line'
    expected = '"print(#quot;a#quot;) #lt;b#gt; #96;c#96; #35;d; e #amp; f<br/>second line"'
    assert label(text) == expected


def test_node_ids_keep_clear_of_mermaid_keywords():
    assert node_id("end") == "n_end"
    assert node_id("before", "buf0") == "n_before_buf0"
    assert node_id("L['x']") == "n_L__x__"


def test_a_long_assignment_breaks_after_the_equals_sign():
    assert assignment("mul", "x * 2") == "mul = x * 2"
    assert assignment("truediv", "operator.truediv(sub, add)") == (
        "truediv =\noperator.truediv(sub, add)"
    )


def sin_twice(x, scale):
    return {"y": torch.sin(x) * scale, "scale": scale}


def test_trace_diagram_draws_inputs_ops_and_the_result():
    diagram = trace_diagram(trace(sin_twice, torch.ones(2, 3), 2.0))
    assert diagram == "\n".join(
        [
            "```mermaid",
            "flowchart TD",
            "    n_0([\"%0 = input L['x']<br/>float32[2, 3]\"])",
            '    n_1["%1 = torch.sin(%0)<br/>float32[2, 3]"]',
            "    n_0 --> n_1",
            '    n_2["%2 =<br/>operator.mul(%1, 2.0)<br/>float32[2, 3]"]',
            "    n_1 --> n_2",
            "    n_return[[\"return {'y': %2, 'scale': 2.0}\"]]",
            "    n_2 --> n_return",
            "```",
        ]
    )
