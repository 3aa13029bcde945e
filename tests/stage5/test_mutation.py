"""In-place ops: computed out of place where only the graph sees the write, written back
into a graph input's own memory where they write into one, else run in torch.

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
    torch_compile_with_ours,
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


# --- writes that other tensors see: the base of a view, other views, `detach`, `out=` ------


def view_read_after(a):
    m = a * 2
    row = m[0]
    m.add_(1)
    return row  # a view of m: it sees the write


def write_into_view(a):
    m = a * 2
    m[0].add_(1)
    return m


def views_of_views(a):
    m = a * 2
    rows = m[1:3]
    rows[:, 1].mul_(3)  # a view of a view: m and rows both see it
    col = m.t()[2]
    col.add_(rows.sum())
    return m, rows + 1


def detached_read_after(a):
    m = a * 2
    d = m.detach()  # shares m's memory, though it is not a view
    m.add_(1)
    return d


def write_into_out(a):
    m = a * 2
    torch.add(a, 1, out=m)
    return m


def flat_view_of_a_transpose(a):
    m = (a * 2).t().contiguous()
    flat = m.view(-1)
    flat[3:9].fill_(0.5)
    return m.sum(1), flat


def returns_two_views(a):
    m = a + 1
    top, bottom = m[:2], m[2:]
    bottom.mul_(top)
    return top, bottom, m  # eager's three share memory, and so do ours


def write_into_a_chunk(a):
    m = a * 3
    pieces = m.chunk(2, 1)
    pieces[1].add_(1)  # `pieces` is read after: its second piece sees the write
    return m, pieces[0], pieces[1] * 2


def zero_a_row_of_unbind(a):
    rows = (a + 1).unbind(0)
    rows[2].zero_()
    return rows[1] * 2, rows[2] + 1


ALIASES = {
    "view_read_after": (view_read_after, ()),
    "write_into_a_chunk": (write_into_a_chunk, ()),
    "zero_a_row_of_unbind": (zero_a_row_of_unbind, ("zero__on_a_copy",)),
    "write_into_view": (write_into_view, ()),
    "views_of_views": (views_of_views, ()),
    "detached_read_after": (detached_read_after, ("detach",)),
    "write_into_out": (write_into_out, ()),
    "flat_view_of_a_transpose": (flat_view_of_a_transpose, ("fill__on_a_copy",)),
    "returns_two_views": (returns_two_views, ()),
}


def same_memory(results) -> list[list[int]]:
    """Which results share memory: for each, the indices of the results sharing it."""
    tensors = [t for t in results if isinstance(t, torch.Tensor)]
    pointers = [t.untyped_storage().data_ptr() for t in tensors]
    return [[j for j, q in enumerate(pointers) if q == p] for p in pointers]


@pytest.mark.parametrize("name", ALIASES)
def test_writes_that_other_tensors_see_become_kernels(name):
    """The base of a written view, its other views, read later: they see the new values,
    read from a copy of the base with the view stored into it (as_strided_scatter)."""
    fn, externs = ALIASES[name]
    check_lowered(fn, x, externs=externs)
    for compiled in check_torch_compile(fn, x):
        assert_lowered(compiled, externs)
    results = compile_traced(fn)(x.clone())
    if isinstance(results, tuple):
        assert same_memory(results) == same_memory(fn(x.clone()))


def overlapping_operand(a):
    m = a[:4, :4] * 2
    m.add_(m.t())  # eager refuses to write what it reads from another place
    return m


def transpose_an_input(a):
    a.t_()
    return a + 1


def transpose_a_viewed_tensor(a):
    m = a * 2
    row = m[0]
    m.t_()  # the meta run keeps m's last strides only: row's place in m is unknown
    m.add_(1)
    return row


def column_from_a_crossing_row(a):
    a[:4, :4].t()[1].add_(a[0, :4])  # eager reads a[0, 1] as it writes it: order-dependent
    return a


def view_as_another_dtype(a):
    a.view(torch.int32).add_(1)
    return a


IN_TORCH = {
    transpose_an_input: "changes the sizes or strides of a",
    transpose_a_viewed_tensor: "changes the sizes or strides of",
    overlapping_operand: "shares and reads then",
    column_from_a_crossing_row: "shares and reads then",
    view_as_another_dtype: "sees as torch.int32",
}


@pytest.mark.parametrize("fn", IN_TORCH)
def test_writes_we_cannot_follow_run_in_torch(fn):
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


# --- writes into graph inputs: computed out of place, then written back into the input ------


def add_into_input(a):
    a.add_(1)
    return a * 2


def augmented_into_inputs(a, b):
    a += b
    b *= 2
    return a.sum()


def inplace_activation_of_input(a, b):
    F.relu(a, inplace=True)
    return a + b


def reads_another_element_of_a_written_input(a, b):
    b.mul_(a)
    a.add_(b.flip(0))  # reads b's new values, all of a's old ones
    return a


def reduction_then_write(a, b):
    s = a.sum(1, keepdim=True)
    a.sub_(s)  # every element of a row is read before the row is written
    return a[0], b


def copy_between_inputs(a, b):
    a.copy_(b)
    b.copy_(a.flip(0) + 1)


def assignment_into_input(a, b):
    a[1] = b[0]
    return a.t()  # a view of the written input


def keeps_the_inputs_dtype(a, n):
    n.add_(a.long())
    a.mul_(n)  # float32 *= int64 stays float32
    return n + 1


WRITTEN_BACK = {
    "add_into_input": (add_into_input, ()),
    "augmented_into_inputs": (augmented_into_inputs, ()),
    "inplace_activation_of_input": (inplace_activation_of_input, ()),
    "reads_another_element_of_a_written_input": (
        reads_another_element_of_a_written_input,
        ("flip",),
    ),
    "reduction_then_write": (reduction_then_write, ()),
    "copy_between_inputs": (copy_between_inputs, ("copy__on_a_copy", "flip")),
    "assignment_into_input": (assignment_into_input, ("setitem_on_a_copy",)),
    "keeps_the_inputs_dtype": (keeps_the_inputs_dtype, ()),
}


@pytest.mark.parametrize("name", WRITTEN_BACK)
def test_writes_into_inputs_are_written_back(name):
    fn, externs = WRITTEN_BACK[name]
    n_args = fn.__code__.co_argcount
    args = [torch.randn(6, 6) for _ in range(n_args)]
    if fn is keeps_the_inputs_dtype:
        args[1] = torch.randint(-3, 3, (6, 6))
    if fn not in (augmented_into_inputs, assignment_into_input):  # symbolic_trace turns
        compiled = check_lowered(fn, *args, externs=externs)  # `a += b` into `a = a + b`
        assert compiled.last.written_inputs
    for compiled in check_torch_compile(fn, *args):
        assert_lowered(compiled, externs)
        assert compiled.last.written_inputs


# --- writes into views of graph inputs: stored through the view into the input itself ----


def add_into_a_row(a):
    a[0].add_(1)
    return a * 2


def add_into_a_column(a, b):
    a[:, 1].add_(b[:, 0])
    return a.sum(0)


def mul_through_a_transpose(a):
    a.t().mul_(2)
    return a


def add_through_a_flat_view(a):
    flat = a.view(-1)
    flat.add_(1)
    return flat, a  # both the caller's tensor


def rows_read_after(a, b):
    first = a[0]
    a[1:].mul_(b[1:])  # `first` is not written, the row below it is
    a[:, 0].sub_(first.sum())  # reads `first` before the store changes its element 0
    return first, a.sum()


def view_then_whole_then_view(a):
    a[2].fill_(1.0)
    a.mul_(3)
    a.t()[1].add_(a[0] * 2)  # a column, from the row that crosses it: read first
    return a[2]


def copy_a_row_into_another(a, b):
    a[0].copy_(a[1])  # eager reads a[1] while writing a[0]: apart, so one answer
    b[:, ::2].copy_(a[:, 1::2])
    return b


def out_into_an_input(a, b):
    torch.mul(b, 2, out=a)
    torch.add(b[0], 1, out=b[1])
    return a


def inplace_activation_of_a_slice(a):
    F.relu(a[1:], inplace=True)
    return a


def index_put_into_an_input(a, b):
    index = torch.tensor([0, 2])
    a.index_put_((index,), b[:2])
    a[0].index_put_((index,), b[0, :2] * 2)  # into a view, with an extern
    return a


def scale_a_piece_of_split(a):
    q, k = a.split(3, 1)
    q.mul_(0.5)  # into the caller's tensor, and `k` of the same memory read after
    return k + 1, q * 1


VIEWS_OF_INPUTS = {
    "add_into_a_row": (add_into_a_row, ()),
    "scale_a_piece_of_split": (scale_a_piece_of_split, ()),
    "add_into_a_column": (add_into_a_column, ()),
    "mul_through_a_transpose": (mul_through_a_transpose, ()),
    "add_through_a_flat_view": (add_through_a_flat_view, ()),
    "rows_read_after": (rows_read_after, ()),
    "view_then_whole_then_view": (view_then_whole_then_view, ("fill__on_a_copy",)),
    "copy_a_row_into_another": (copy_a_row_into_another, ("copy__on_a_copy",)),
    "out_into_an_input": (out_into_an_input, ()),
    "inplace_activation_of_a_slice": (inplace_activation_of_a_slice, ()),
    "index_put_into_an_input": (index_put_into_an_input, ("index_put",)),
}


@pytest.mark.parametrize("name", VIEWS_OF_INPUTS)
def test_writes_into_views_of_inputs_are_written_back(name):
    fn, externs = VIEWS_OF_INPUTS[name]
    args = [torch.randn(6, 6) for _ in range(fn.__code__.co_argcount)]
    compiled = check_lowered(fn, *args, externs=externs)
    assert compiled.last.written_inputs
    for compiled in check_torch_compile(fn, *args):
        assert_lowered(compiled, externs)
        assert compiled.last.written_inputs


def test_a_write_into_a_row_stores_the_row_only():
    """`a[1].add_(1)`: one loop over the row, loading and storing into `a` at the row's
    place; the other rows are not touched (no copy, no whole write-back)."""
    compiled = check_lowered(lambda a: a[1].add_(1), x)
    assert len(compiled.last.kernel_names) == 1
    assert "empty_strided" not in compiled.last.wrapper_source
    assert "arg0[x0 + 5] = " in compiled.last.source and "x0 < 5;" in compiled.last.source


def test_views_of_a_written_input_come_back_as_views_and_its_version_counts():
    a = torch.randn(4, 5)
    version = a._version
    compiled = compile_fx(torch.fx.symbolic_trace(add_through_a_flat_view), [a])
    flat, same = compiled(a)
    assert same is a and flat._base is a and a._version > version
    torch.testing.assert_close(flat, a.view(-1))


def test_a_write_into_an_input_is_one_loop():
    """`a.add_(1)` loads, adds and stores into `a` itself: no buffer, no copy."""
    compiled = check_lowered(lambda a: a.add_(1), x)
    assert len(compiled.last.kernel_names) == 1
    assert "empty_strided" not in compiled.last.wrapper_source


def test_the_written_input_comes_back_itself_and_its_version_counts():
    a = torch.randn(4, 5)
    version = a._version
    compiled = compile_fx(torch.fx.symbolic_trace(add_into_input_returned), [a])
    result = compiled(a)
    assert result is a and a._version > version
    assert compiled.last.written_inputs == (0,)


def add_into_input_returned(a):
    a.add_(1)
    return a


def test_inputs_that_share_memory_run_in_torch():
    def fn(a, b):
        a.add_(b)  # with b a view of a, eager reads b's values as a changes
        return a

    base = torch.randn(4, 4)
    compiled = compile_fx(torch.fx.symbolic_trace(fn), [torch.randn(4), torch.randn(4)])
    assert_same_as_eager(lambda t: compiled(t[0], t[1]), lambda t: fn(t[0], t[1]), base)
    assert compiled.torch_reasons == [
        "an input the graph writes into shares memory with another input"
    ]


def test_empty_inputs_share_no_memory():
    """Empty tensors all have the address 0: they share nothing, and their graph runs
    its kernels (it ran in torch, "sharing memory", until found by stage 6's property test)."""

    def fn(a, b):
        a.add_(b)
        return a * 2

    args = [torch.zeros(1, 0), torch.zeros(1, 0)]
    compiled = compile_fx(torch.fx.symbolic_trace(fn), args)
    assert_same_as_eager(compiled, fn, *args)
    assert compiled.torch_reasons == []


class Counter(nn.Module):
    """A module that counts in its own buffer, as BatchNorm's `num_batches_tracked` does."""

    def __init__(self):
        super().__init__()
        self.register_buffer("total", torch.zeros(5))

    def forward(self, a):
        self.total.add_(a.sum(0))
        self.total[:2].mul_(0.5)  # a view of the module's tensor
        return a * self.total, self.total


def test_writes_into_module_tensors_run_in_torch():
    """symbolic_trace reads `self.total` through a get_attr node per use, which the meta
    run takes for different tensors: the graph runs in torch, and says so."""

    def forward(self, a):
        self.total.add_(a.sum(0))
        return a * self.total, self.total

    module, twin = Counter(), Counter()
    module.forward = forward.__get__(module)
    compiled = compile_fx(torch.fx.symbolic_trace(module), [x])
    for _ in range(2):
        ours, buffer = compiled(x)
        torch.testing.assert_close(ours, forward(twin, x)[0])
        torch.testing.assert_close(module.total, twin.total)
        assert buffer is module.total
    assert "the module's tensor" in compiled.torch_reasons[0]


def test_module_buffers_lifted_as_inputs_are_written_back():
    """torch.compile's graphs take a module's buffers as inputs: written back as inputs,
    through views too, the buffer returned itself."""
    module, twin = Counter(), Counter()
    compiled, calls = torch_compile_with_ours(module)
    for _ in range(2):
        (ours, buffer), (eager, _) = compiled(x), twin(x)
        torch.testing.assert_close(ours, eager)
        torch.testing.assert_close(module.total, twin.total)
        assert buffer is module.total
    assert_lowered(calls[0])
    assert calls[0].last.written_inputs


def test_batch_norm_training_statistics_run_in_torch():
    """The module call writes its running statistics: it is not lowered (yet)."""
    bn = nn.BatchNorm1d(5).train()
    compiled = compile_fx(torch.fx.symbolic_trace(nn.Sequential(bn)), [x])
    twin = nn.BatchNorm1d(5).train()
    torch.testing.assert_close(compiled(x), twin(x))
    torch.testing.assert_close(bn.running_mean, twin.running_mean)
    assert "changes the tensors of module" in compiled.torch_reasons[0]


def test_writes_into_inputs_through_our_frontend():
    def fn(a, cache, pos: int):
        cache[:, pos] = a.sum(1)  # a KV-cache-like update of a caller's tensor
        a.mul_(2)
        return cache.sum(1) + a.mean()

    stage4_fx.reset()
    compiled = []

    def backend(gm, example_inputs):
        compiled.append(compile_fx(gm, example_inputs))
        return compiled[-1]

    assert_same_as_eager(
        stage4_fx.compile(fn, backend=backend), fn, x, torch.zeros(4, 3), 1,
        captured=lambda: bool(compiled),
    )  # fmt: skip
    assert not compiled[0].torch_reasons and compiled[0].last.written_inputs
