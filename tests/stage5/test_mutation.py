"""In-place ops: computed out of place where only the graph sees the write, else run in torch.

Every case runs through symbolic_trace and torch.compile (whose graphs keep in-place
calls as they are, as our frontend's do) and must equal eager, the written tensor's
later readers included.
"""

import operator

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import stage4_fx
from stage5_inductor_cpp import compile_fx
from tests.oracle import assert_same_as_eager
from tests.stage5.helpers import (
    assert_lowered,
    check_lowered,
    check_torch_compile,
    compile_traced,
)

x = torch.randn(4, 5)


def relu_inplace(a):
    m = a * 2
    F.relu(m, inplace=True)  # the result is not used: later readers read `m`
    return m + 1


def relu_inplace_by_position(a):
    m = a * 2
    F.relu(m, True)
    return m.sum(0), m


def method_chain(a):
    m = a * 2
    m.relu_().add_(1).mul_(3)
    m.clamp_(0, 5)
    return m


def augmented_assignment(a):
    m = a - 1
    m += a
    m *= 2
    return m


def read_before_and_after(a):
    m = a.sin()
    before = m.sum()
    m.mul_(2)
    return before, m


def a_view_read_before_only(a):
    m = a * 2
    row = m[0].sum()
    m.add_(1)
    return m, row


def keeps_its_dtype(a):
    m = a.double() * 1.5
    m.add_(a)  # float64 += float32 stays float64
    n = (a * 4).long()
    n.add_(2)
    k = a * 1
    k.add_(a.double())  # float32 += float64 stays float32
    return m, n, k


def transpose_in_place(a):
    m = a * 2
    m.t_()  # changes the strides, not the values
    return m + 1


def no_out_of_place_twin(a):
    m = a * 2
    m.fill_(3.0)
    n = a * 3
    n.zero_()
    return m + a, n


def same_tensor_through_contiguous(a):
    m = a * 2
    c = m.contiguous()  # `m` itself: the write below changes `m`
    c.add_(1)
    return m


def activations(a):
    m = a * 2
    F.silu(m, inplace=True)
    F.hardtanh(m, -0.5, 0.5, True)
    F.leaky_relu(m, 0.2, inplace=True)
    F.elu(m, inplace=True)
    return m


def returns_what_it_writes(a):
    m = a * 2
    y = m.relu_()
    return y, m


def modules_inplace(a):
    m = a * 2
    nn.ReLU(inplace=True)(m)  # torch.compile inlines the module: F.relu(m, inplace=True)
    return m


def assignment(a):
    m = a * 2
    m[0] = 7.0
    m[:, 1] = a[:, 2]
    return m


# name -> (function, ops that stay calls into torch)
FUNCTIONALIZED = {
    "relu_inplace": (relu_inplace, ()),
    "relu_inplace_by_position": (relu_inplace_by_position, ()),
    "method_chain": (method_chain, ()),
    "augmented_assignment": (augmented_assignment, ()),
    "read_before_and_after": (read_before_and_after, ()),
    "a_view_read_before_only": (a_view_read_before_only, ()),
    "keeps_its_dtype": (keeps_its_dtype, ()),
    "transpose_in_place": (transpose_in_place, ()),
    "no_out_of_place_twin": (no_out_of_place_twin, ("fill__on_a_copy", "zero__on_a_copy")),
    "same_tensor_through_contiguous": (same_tensor_through_contiguous, ()),
    "activations": (activations, ("elu",)),
    "returns_what_it_writes": (returns_what_it_writes, ()),
}


@pytest.mark.parametrize("name", FUNCTIONALIZED)
def test_in_place_ops_on_intermediates_become_kernels(name):
    fn, externs = FUNCTIONALIZED[name]
    check_lowered(fn, x, externs=externs)
    for compiled in check_torch_compile(fn, x):
        assert_lowered(compiled, externs)


@pytest.mark.parametrize("fn", [modules_inplace, assignment])  # symbolic_trace cannot trace these
def test_in_place_ops_through_torch_compile(fn):
    for compiled in check_torch_compile(fn, x):
        assert_lowered(compiled, externs=("setitem_on_a_copy",))


def write_into_input(a):
    a.add_(1)
    return a * 2


def view_read_after(a):
    m = a * 2
    row = m[0]
    m.add_(1)
    return row


def write_into_view(a):
    m = a * 2
    m[0].add_(1)
    return m


def detached_read_after(a):
    m = a * 2
    d = m.detach()  # shares m's memory, though it is not a view
    m.add_(1)
    return d


def write_into_out(a):
    m = a * 2
    torch.add(a, 1, out=m)
    return m


def overlapping_operand(a):
    m = a[:4, :4] * 2
    m.add_(m.t())  # eager refuses to write what it reads from another place
    return m


IN_TORCH = {
    write_into_input: "which is the graph input",
    view_read_after: "shares and reads then or later",
    write_into_view: "a view of another tensor",
    detached_read_after: "shares and reads then or later",
    write_into_out: "not into its first argument",
    overlapping_operand: "shares and reads then or later",
}


@pytest.mark.parametrize("fn", IN_TORCH)
def test_writes_that_others_see_run_in_torch(fn):
    run = compile_traced(fn)
    assert_same_as_eager(run, fn, x)
    (reason,) = run.state["compiled"].torch_reasons
    assert IN_TORCH[fn] in reason


def test_in_place_errors_are_eagers():
    def fn(a):
        m = (a * 4).long()
        m.add_(0.5)  # a float result cannot be written into a long tensor
        return m

    assert_same_as_eager(compile_traced(fn), fn, x)


@pytest.mark.parametrize("op", [operator.and_, operator.or_, operator.xor])
def test_bitwise_operators_are_not_in_place(op):
    """`operator.and_`'s name ends with "_", but it writes nothing."""
    check_lowered(lambda a: op(a > 0, a < 1), x)
    check_lowered(lambda a: op((a * 3).long(), 5), x, externs=(op.__name__,))


class Block(nn.Module):
    """ResNet's basic block: in-place ReLU, and the residual added in place."""

    def __init__(self, channels=8):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += x
        return self.relu(out)


def test_resnet_block_with_in_place_relu_through_our_frontend():
    block = nn.Sequential(Block(), Block()).eval()
    for module in block.modules():
        if isinstance(module, nn.BatchNorm2d):  # statistics far from 0 and 1
            module.running_mean.uniform_(-1, 1)
            module.running_var.uniform_(0.5, 2)
    compiled = []

    def backend(gm, example_inputs):
        compiled.append(compile_fx(gm, example_inputs))
        return compiled[-1]

    stage4_fx.reset()
    with torch.no_grad():
        assert_same_as_eager(
            stage4_fx.compile(block, backend=backend), block, torch.randn(2, 8, 6, 6)
        )
    assert compiled and all(c.last.kernel_names and not c.torch_reasons for c in compiled)
