"""Stage 5's picture: which buffers went into which kernel, before and after fusion."""

import torch

from stage5_inductor_cpp.graph_lowering import GraphLowering
from stage5_inductor_cpp.tools.diagrams import fusion_diagram


def lowered(fn, *args) -> GraphLowering:
    return GraphLowering(torch.fx.symbolic_trace(fn), list(args)).run()


def softmax(x):
    return torch.softmax(x, dim=-1)


def test_softmax_goes_from_three_kernels_to_one_with_two_values_in_registers():
    def half(side, kernels, steps, arrow):
        return [
            f'    subgraph n_{side}["{side} fusion: {kernels}"]',
            "        direction TB",
            f'        n_{side}_arg0(["arg0<br/>float32[4, 8]"])',
            *steps,
            f'        n_{side}_output[["output"]]',
            f"        n_{side}_arg0 --> n_{side}_buf0",
            f"        n_{side}_arg0 --> n_{side}_buf1",
            f"        n_{side}_buf0 {arrow} n_{side}_buf1",
            f"        n_{side}_arg0 --> n_{side}_buf2",
            f"        n_{side}_buf0 {arrow} n_{side}_buf2",
            f"        n_{side}_buf1 {arrow} n_{side}_buf2",
            f"        n_{side}_buf2 --> n_{side}_output",
            "    end",
        ]

    before = [
        '        subgraph n_before_cpp_fused_max_0["cpp_fused_max_0"]',
        '            n_before_buf0["buf0 = max<br/>float32[4]"]',
        "        end",
        '        subgraph n_before_cpp_fused_sub_exp_sum_1["cpp_fused_sub_exp_sum_1"]',
        '            n_before_buf1["buf1 = sub, exp, sum<br/>float32[4]"]',
        "        end",
        '        subgraph n_before_cpp_fused_sub_exp_truediv_2["cpp_fused_sub_exp_truediv_2"]',
        '            n_before_buf2["buf2 = sub, exp, truediv<br/>float32[4, 8]"]',
        "        end",
    ]
    after = [
        '        subgraph n_after_cpp_fused_max_sub_exp_sum_truediv_0["'
        'cpp_fused_max_sub_exp_sum_truediv_0"]',
        '            n_after_buf0("buf0 = max<br/>float32[4], in a register")',
        '            n_after_buf1("buf1 = sub, exp, sum<br/>float32[4], in a register")',
        '            n_after_buf2["buf2 = sub, exp, truediv<br/>float32[4, 8]"]',
        "        end",
    ]
    assert fusion_diagram(lowered(softmax, torch.randn(4, 8))) == "\n".join(
        [
            "```mermaid",
            "flowchart LR",
            *half("before", "3 kernels", before, "-->"),
            *half("after", "1 kernel", after, "-.->"),
            "    n_before ~~~ n_after",
            "```",
        ]
    )


def matmul_relu_sum(x, w):
    return torch.relu(x @ w).sum(1)


def test_an_extern_call_is_a_step_of_its_own_and_the_prefix_names_the_kernels():
    diagram = fusion_diagram(
        lowered(matmul_relu_sum, torch.randn(4, 4), torch.randn(4, 4)), "triton"
    )
    assert '        n_after_buf0[/"buf0 = extern matmul"/]' in diagram.splitlines()
    assert 'subgraph n_after_triton_fused_relu_sum_1["triton_fused_relu_sum_1"]' in diagram
    assert "        n_after_buf0 --> n_after_buf1" in diagram.splitlines()
    assert "cpp_" not in diagram
