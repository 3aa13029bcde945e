"""The scheduler: how many kernels a graph becomes, what stays in registers; and what the
C++ writer reuses (its stash)."""

import re
import weakref

import pytest
import torch
import torch.nn.functional as F

from stage5_inductor_cpp import compile_fx
from stage5_inductor_cpp.graph_lowering import GraphLowering
from stage5_inductor_cpp.performance import split_reductions
from stage5_inductor_cpp.performance.stash import stashes
from stage5_inductor_cpp.rules import CPU_RULES
from stage5_inductor_cpp.scheduler import FusedKernel, Scheduler
from tests.stage5.helpers import check_both, check_traced, kernel_logs


def kernels(fn, *args) -> list[str]:
    compiled = compile_fx(torch.fx.symbolic_trace(fn), list(args))
    return (
        compiled.last.kernel_names
        if compiled.last
        else next(iter(compiled.specializations.values())).kernel_names
    )


def chain(a, b):
    return torch.relu(torch.sin(a) * torch.cos(b) + a * 0.5 - b)


def test_pointwise_chain_is_one_kernel():
    a, b = torch.randn(1000), torch.randn(1000)
    assert kernels(chain, a, b) == ["cpp_fused_sin_cos_mul_add_sub_relu_0"]
    check_both(chain, a, b)


@pytest.mark.parametrize("dim", [-1, 0])
def test_softmax_is_at_most_two_kernels(dim):
    x = torch.randn(64, 128)
    assert len(kernels(lambda t: torch.softmax(t, dim), x)) <= 2
    assert len(kernels(lambda t: torch.softmax(t, -1), x)) == 1


def test_layer_norm_is_at_most_two_kernels():
    x, w, b = torch.randn(32, 64), torch.randn(64), torch.randn(64)
    names = kernels(lambda t, w, b: F.layer_norm(t, (64,), w, b), x, w, b)
    assert len(names) <= 2
    check_both(lambda t, w, b: F.layer_norm(t, (64,), w, b), x, w, b)


def test_mlp_adds_biases_in_the_gemm_and_fuses_the_activation_between_externs():
    x, w, b = torch.randn(8, 16), torch.randn(16, 16), torch.randn(16)
    fn = lambda x, w, b: torch.relu(x @ w + b) @ w + b  # noqa: E731
    assert kernels(fn, x, w, b) == ["cpp_fused_relu_1"]
    code = compile_fx(torch.fx.symbolic_trace(fn), [x, w, b]).code
    assert code.count("# addmm") == 2 and "# matmul" not in code
    check_traced(fn, x, w, b)


@pytest.mark.parametrize(
    "fn, args",
    [
        (lambda x, w, b: x @ w + b, (torch.randn(4, 3), torch.randn(3, 5), torch.randn(5))),
        (
            lambda x, w, b: b + torch.mm(x, w),
            (torch.randn(4, 3), torch.randn(3, 5), torch.randn(4, 1)),
        ),
        (
            lambda x, w, b: x.matmul(w) + b * 2,
            (torch.randn(4, 3), torch.randn(3, 5), torch.randn(1, 5)),
        ),
    ],
)
def test_bias_add_becomes_addmm(fn, args):
    code = compile_fx(torch.fx.symbolic_trace(fn), list(args)).code
    assert "# addmm" in code and "# matmul" not in code and "# mm" not in code
    check_traced(fn, *args)


def product_and_sum(x, w, b):
    product = x @ w
    return product + b, product


@pytest.mark.parametrize(
    "fn, args, why",
    [
        (
            product_and_sum,
            (torch.randn(4, 3), torch.randn(3, 5), torch.randn(5)),
            "product used twice",
        ),
        (
            lambda x, w, b: x @ w + b,
            (torch.randn(4, 3), torch.randn(3, 5), torch.randn(2, 4, 5)),
            "bias grows the result",
        ),
        (
            lambda x, w, b: x @ w + b,
            (torch.randn(2, 4, 3), torch.randn(3, 5), torch.randn(5)),
            "batched",
        ),
        (
            lambda x, w, b: x @ w + b,
            (torch.randn(4, 3), torch.randn(3, 5), torch.randn(5, dtype=torch.float64)),
            "dtypes differ",
        ),
        (
            lambda x, w, b: x @ w + b,
            (
                torch.ones(4, 3, dtype=torch.int64),
                torch.ones(3, 5, dtype=torch.int64),
                torch.ones(5, dtype=torch.int64),
            ),
            "integers",
        ),
        (
            lambda x, w, b: torch.mm(x, w)[:, :2] + b,
            (torch.randn(3, 3), torch.randn(3, 3), torch.randn(3, 2)),
            "the add reads a slice of the product",
        ),
        (
            lambda x, w, b: torch.mm(x, w)[:, :2] + b,
            (torch.randn(3, 3), torch.randn(3, 3), torch.randn(2)),
            "a slice, and a bias that broadcasts to the whole product too",
        ),
        (
            lambda x, w, b: torch.mm(x, w).t() + b,
            (torch.randn(3, 3), torch.randn(3, 3), torch.randn(3)),
            "the add reads the product transposed",
        ),
    ],
)
def test_bias_add_stays_an_add_when_addmm_would_differ(fn, args, why):
    code = compile_fx(torch.fx.symbolic_trace(fn), list(args)).code
    assert "# addmm" not in code, why
    check_traced(fn, *args)


def schedule(fn, *args, fuse=True):
    graph = GraphLowering(torch.fx.symbolic_trace(fn), list(args)).run()
    return Scheduler(graph, fuse=fuse)


def per_channel_statistics(x):
    """A batch norm's: sums over (N, H, W), then the mean and variance of shape (1, C, 1, 1)."""
    total, squares = x.sum((0, 2, 3)), x.square().sum((0, 2, 3))
    mean = (total / 50).view(1, -1, 1, 1)
    return mean, squares.view(1, -1, 1, 1) / 50 - mean * mean


def test_a_pointwise_over_a_reductions_rows_with_dims_of_size_1_joins_its_kernel():
    """The dims of size 1 do not loop (SchedulerNode.ranges): the (1, C, 1, 1) mean and
    variance are computed over C in the sums' kernel, not in a kernel of their own."""
    x = torch.randn(2, 8, 5, 5)
    assert len(kernels(per_channel_statistics, x)) == 1
    check_both(per_channel_statistics, x)


def test_fusion_cuts_kernels_and_keeps_intermediates_local():
    x = torch.randn(16, 32)
    before = schedule(lambda t: torch.softmax(t, -1), x, fuse=False)
    after = schedule(lambda t: torch.softmax(t, -1), x)
    assert len(before.steps) == 3 and len(after.steps) == 1
    (kernel,) = after.steps
    assert kernel.local == {"buf0", "buf1"}  # max and sum never reach memory


def test_horizontal_fusion_of_independent_outputs():
    x = torch.randn(16, 32)
    steps = schedule(lambda t: (t.sin(), t.cos(), t.sum(1)), x).steps
    assert len(steps) == 1


def two_layers_in_bfloat16(x, w1, w2):
    """autocast's pattern: each weight cast just before the product that reads it."""
    h = torch.mm(x.bfloat16(), w1.bfloat16()).float().relu()
    return torch.mm(h.bfloat16(), w2.bfloat16())


def second_cast_step(x, w1, w2):
    """The steps before the kernel that casts `w2`, by kind, and the number of kernels."""
    steps = schedule(two_layers_in_bfloat16, x, w1, w2).steps
    kernels = [s for s in steps if isinstance(s, FusedKernel)]
    second = next(s for s in kernels if any("arg2" in n.reads() for n in s.nodes))
    return [type(s).__name__ for s in steps[: steps.index(second)]], len(kernels)


def test_a_big_cast_stays_after_the_library_call_before_it_on_the_cpu(monkeypatch):
    """On the CPU the second weight's cast is not hoisted into the first one's kernel, before
    the first product: it runs just before its own product, which then reads its values from
    the cache. A small one is (CACHE_RESIDENT), and the GPU rule hoists any: one launch."""
    x, w1, w2 = torch.randn(8, 128), torch.randn(128, 128), torch.randn(128, 128)
    before, count = second_cast_step(x, w1, w2)
    assert "ExternCall" in before and count == 4
    check_both(two_layers_in_bfloat16, x, w1, w2)
    small = torch.randn(8, 16), torch.randn(16, 16), torch.randn(16, 16)
    before, count = second_cast_step(*small)
    assert "ExternCall" not in before and count == 3  # in the first weight's kernel
    monkeypatch.setattr(CPU_RULES, "fuse_across_library_calls", True)
    before, count = second_cast_step(x, w1, w2)
    assert "ExternCall" not in before and count == 3


def test_refused_fusion_is_logged():
    with kernel_logs() as records:
        steps = schedule(lambda t: (t.sum(0), t.sum(1)), torch.randn(16, 32)).steps
    assert len(steps) == 2
    assert any("not fusing buf1" in r and "iteration spaces differ" in r for r in records)


def test_transposed_read_of_a_fused_buffer_is_refused():
    x = torch.randn(16, 16)

    # y is expensive and used twice, so it gets a buffer; y.t() reads it transposed:
    # the same iteration space, but another iteration writes the element it reads. (Not
    # `y.t() + 1`, which eager lays out transposed: its kernel loops in that order, and
    # each iteration reads the element of y that it writes.)
    def fn(t):
        y = t
        for _ in range(25):
            y = y * 1.01
        return y, y + y.t()

    with kernel_logs() as records:
        steps = [s for s in schedule(fn, x).steps if isinstance(s, FusedKernel)]
    assert len(steps) == 2
    assert any("which another iteration writes" in r for r in records)
    check_traced(fn, x)


def test_dead_buffers_are_reused():
    x, w = torch.randn(32, 32), torch.randn(32, 32) * 0.1  # keeps each matmul well conditioned

    def fn(x, w):
        h = (x.sin() @ w).cos()
        h = (h @ w).sin()
        h = (h @ w).cos()
        return (h @ w).sin()

    compiled = compile_fx(torch.fx.symbolic_trace(fn), [x, w])
    assert "# reuse" in compiled.code
    check_traced(fn, x, w)


def test_a_value_stored_for_an_extern_is_read_back_by_every_later_reader():
    """Inductor's `realize()`: BERT's layer norm feeds the Q, K and V products and the
    residual add. It is stored once, and each product and the add load that buffer; before,
    each product stored its own copy and the add computed the norm again from x."""

    def fn(x, wq, wk, wv):
        h = F.layer_norm(x, (32,))
        return h @ wq + h @ wk + h @ wv + h

    args = [torch.randn(16, 32)] + [torch.randn(32, 32) / 6 for _ in range(3)]
    code = check_traced(fn, *args).last.wrapper_source
    calls = [line for line in code.splitlines() if "(" in line and "empty_strided" not in line]
    reads_x = [line for line in calls if "arg0" in line and "= args" not in line]
    assert len(reads_x) == 1, code  # one kernel computes the norm, from x
    norm = re.search(r"arg0\.data_ptr\(\), (buf\d+)", reads_x[0]).group(1)
    readers = [line for line in calls if re.search(rf"\b{norm}\b", line)]
    assert len(readers) == 1 + 3 + 1, code  # its kernel, three products, the add


def test_attention_reads_its_heads_in_place_from_the_qkv_product():
    """nanoGPT's `q, k, v = c_attn(x).split(C, 2)`, then `.view(B, T, heads, -1)
    .transpose(1, 2)`: each is a view of the product, as in eager (torch's strides), so
    the attention reads them in place; before, one kernel copied all three out."""

    def fn(x, w):
        B, T, C = x.shape
        q, k, v = (x @ w).split(C, 2)
        heads = [t.view(B, T, 4, C // 4).transpose(1, 2) for t in (q, k, v)]
        return F.scaled_dot_product_attention(*heads, is_causal=True)

    x, w = torch.randn(2, 16, 32), torch.randn(32, 96) / 6
    compiled = check_traced(fn, x, w)
    assert list(compiled.last.kernel_names) == []
    assert list(compiled.last.extern_names) == ["matmul", "scaled_dot_product_attention"]


def grow(t):
    """An op the inductor calls as an extern: it records which earlier arguments still live."""
    if t.device.type == "cpu":  # a real call, not the lowering's meta run
        grow.alive.append([ref() is not None for ref in grow.refs])
        grow.refs.append(weakref.ref(t))
    return torch.cat([t, t])


torch.fx.wrap("grow")


def test_dead_buffers_are_freed_after_their_last_reader():
    """The wrapper `del`s each buffer after its last reader (inductor's wrapper does), so
    that the allocator gets the memory back during the call: here each `sin` buffer is
    gone by the next `grow`, none of whose sizes match for reuse."""

    def fn(x):
        for _ in range(4):
            x = grow(x.sin())
        return x

    x = torch.randn(16)
    grow.refs, grow.alive = [], []
    compiled = compile_fx(torch.fx.symbolic_trace(fn), [x])
    assert compiled.last.extern_names == ("grow",) * 4
    grow.refs, grow.alive = [], []
    found = compiled(x)
    assert grow.alive == [[], [False], [False, False], [False, False, False]]
    torch.testing.assert_close(found, fn(x))


def test_output_code_is_printable_and_names_kernels():
    a, b = torch.randn(100), torch.randn(100)
    code = compile_fx(torch.fx.symbolic_trace(chain), [a, b]).code
    assert "def call(args):" in code
    assert 'extern "C" void cpp_fused_sin_cos_mul_add_sub_relu_0' in code
    assert "#pragma omp" in code


def softmax_of_exp(x):
    e = torch.exp(x - x.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


def test_softmax_stashes_exp_in_its_output():
    x = torch.randn(16, 32)
    (kernel,) = schedule(softmax_of_exp, x).steps
    assert stashes(kernel) == {"buf1": "buf2"}  # the sum's values wait in the output
    code = compile_fx(torch.fx.symbolic_trace(softmax_of_exp), [x]).code
    assert code.count("std::exp(") == 1  # the last loop reads exp back instead
    assert "buf2[32*x0 + r0] = tmp3;  // read back by buf2's loop" in code
    check_both(softmax_of_exp, x)


def test_a_value_is_stashed_once_and_read_back_by_its_outputs_loop():
    def fn(x):
        e = torch.exp(x - x.amax(-1, keepdim=True))
        p = e / e.sum(-1, keepdim=True)
        return p, e * p.amax(-1, keepdim=True)  # a second reduction of e, a second output

    x = torch.randn(16, 32)
    with kernel_logs() as records:
        (kernel,) = schedule(fn, x).steps
        assert stashes(kernel) == {"buf1": "buf3"}
    assert any("already holds another reduction's values" in r for r in records)
    code = compile_fx(torch.fx.symbolic_trace(fn), [x]).code
    assert code.count("std::exp(") == 2  # the max of p computes e again; both outputs read it
    check_traced(fn, x)


def exp_in_double(x):
    e = x.double().exp()
    return (e / e.sum(-1, keepdim=True)).float()


def exp_broadcast_over_more_elements(x, y):
    e = x.exp()
    return (e / e.sum(-1, keepdim=True)).unsqueeze(-1) * y


@pytest.mark.parametrize(
    "fn, shapes, reason",
    [
        (exp_in_double, [(16, 32)], "the value is torch.float64, the buffer torch.float32"),
        (exp_broadcast_over_more_elements, [(16, 8), (16, 8, 4)], "other inner ranges"),
    ],
)
def test_values_are_not_stashed_where_the_output_cannot_hold_them(fn, shapes, reason):
    args = [torch.randn(shape) for shape in shapes]
    with kernel_logs() as records:
        (kernel,) = schedule(fn, *args).steps
        assert stashes(kernel) == {}
    assert any(reason in r for r in records)
    check_traced(fn, *args)


def test_cheap_values_are_computed_again_not_stashed():
    def fn(x):
        y = x * x + 1
        return y / y.sum(-1, keepdim=True)

    (kernel,) = schedule(fn, torch.randn(16, 32)).steps
    assert stashes(kernel) == {}


def outer_reduction_source(fn, *args):
    compiled = compile_fx(torch.fx.symbolic_trace(fn), list(args))
    torch.testing.assert_close(compiled(*args), fn(*args), equal_nan=True)
    return compiled.last.source


def test_a_reduction_contiguous_across_outputs_accumulates_a_row_of_them():
    """A column sum and a channels-last 3x3 max-pool read neighbouring outputs' elements
    next to each other: one accumulator per output of the last dim, the SIMD loop over it."""
    x = torch.randn(300, 64)
    x[7, 5] = float("nan")  # max keeps NaN per column, as torch does
    column_sum = outer_reduction_source(lambda a: a.sum(0), x)
    assert "double acc_buf0[64];" in column_sum and "acc_buf0[x0] = acc_buf0[x0] +" in column_sum
    column_max = outer_reduction_source(lambda a: a.amax(0), x)
    assert "acc_buf0_nan[x0] |=" in column_max

    weight = torch.randn(16, 3, 3, 3)
    image = torch.randn(2, 3, 20, 20)
    stem = lambda a: F.max_pool2d(torch.relu(F.conv2d(a, weight, padding=1)), 3, 2, 1)  # noqa: E731
    assert "[16];" in outer_reduction_source(stem, image)  # (N, H, W) outer, 16 channels inner


def test_reductions_of_a_channels_last_image_share_one_loop_and_a_row_each():
    """BatchNorm's statistics over a channels-last image, per channel: the mean, then the
    squared deviations from it, read the mean from a row; the sums of `g` and of `g * x`,
    which do not read each other, share the loop that reads `g` and `x` once. Each has a
    row of accumulators, the SIMD loop over the channels."""

    def fn(x, g):
        mean = x.mean((0, 2, 3), keepdim=True)
        var = ((x - mean) ** 2).mean((0, 2, 3), keepdim=True)
        deviation = x - mean
        return deviation * torch.rsqrt(var + 1e-5), g.sum((0, 2, 3)), (g * deviation).sum((0, 2, 3))

    x, g = (torch.randn(4, 16, 10, 10).contiguous(memory_format=torch.channels_last) for _ in "xg")
    source = outer_reduction_source(fn, x, g)
    kernel = source[source.index("cpp_fused_sum") :].split("extern")[0]
    assert kernel.count("for (int64_t r0") == 2  # two loops over the image, not four
    assert "buf0_row[x0]" in kernel and "double acc_buf3[16];" in kernel


@pytest.mark.parametrize("reduce", ["sum", "amax", "mean_and_var"])
def test_an_outer_reduction_of_a_whole_image_is_shared_out_among_the_threads(reduce):
    """With no outer loop left to run in parallel (a channels-last BatchNorm's statistics:
    one row of channels over the whole image), the reduction loops are split among the
    threads, each with its row of partial results, combined in the threads' order: the
    same result at every call."""
    fns = {
        "sum": lambda a: a.sum((0, 2, 3)),
        "amax": lambda a: a.amax((0, 2, 3)),
        "mean_and_var": lambda a: torch.var_mean(a, (0, 2, 3)),
    }
    x = torch.randn(8, 32, 16, 16).contiguous(memory_format=torch.channels_last)
    x[3, 5, 2, 7] = float("nan") if reduce == "amax" else x[3, 5, 2, 7]
    compiled = compile_fx(torch.fx.symbolic_trace(fns[reduce]), [x])
    torch.testing.assert_close(compiled(x), fns[reduce](x), equal_nan=True)
    assert "#pragma omp for ordered schedule(static, 1)" in compiled.last.source
    torch.testing.assert_close(compiled(x), compiled(x), rtol=0, atol=0, equal_nan=True)


def test_a_column_sum_that_reads_a_value_per_row_is_an_outer_reduction():
    """A layer norm's weight gradient: the sum over the rows of the gradient times the
    normalised input, which reads each row's mean and scale beside the columns. Those do
    not move along the columns (the SIMD loop): they do not stop the loops turning round."""
    g, x = torch.randn(300, 64), torch.randn(300, 64)
    mean, scale = x.mean(1, keepdim=True), x.var(1, keepdim=True).add(1e-5).rsqrt()
    source = outer_reduction_source(lambda g, x, m, s: (g * (x - m) * s).sum(0), g, x, mean, scale)
    assert "double acc_buf0[64];" in source and "acc_buf0[x0] = acc_buf0[x0] +" in source


def test_a_column_sum_of_other_values_keeps_out_of_a_pointwise_kernel():
    """GPT-2's backward casts a matrix for a product and sums another's columns. Joined,
    the kernel's loops were the sum's (one per column) and its loads strided along the
    rows: 1.1 ms of a kernel that takes 0.1. Apart, the cast keeps its loops and the sum is
    an outer one (SIMD along the columns)."""

    def fn(a, b, w):
        return a.to(torch.bfloat16) @ w, b.sum(0)

    args = torch.randn(64, 32), torch.randn(300, 64), torch.randn(32, 8).bfloat16()
    compiled = compile_fx(torch.fx.symbolic_trace(fn), list(args))
    torch.testing.assert_close(compiled(*args), fn(*args))
    assert len(compiled.last.kernel_names) == 2
    assert re.search(r"double acc_buf\d+\[64\];", compiled.last.source)


def test_a_reduction_along_memory_stays_an_inner_loop():
    source = outer_reduction_source(lambda a: a.sum(1), torch.randn(64, 300))
    assert "acc_buf0 = " in source and "acc_buf0[" not in source


def test_a_split_reduction_gives_the_same_answer_in_cpp(monkeypatch):
    """Reductions are split for the GPU (performance/split_reductions.py); the IR it makes is the
    shared one, so the C++ kernels compute it too, and equal eager."""
    monkeypatch.setattr(CPU_RULES, "split_reductions", True)
    images = torch.randn(32, 4, 8, 8).to(memory_format=torch.channels_last)
    rows = torch.randn(16, 1024)
    rows[3, 5] = float("nan")

    def fn(t, r):
        return t.sum((0, 2, 3)), t.var((0, 2, 3)), r.amax(), (r > 3).any(), r.sum()

    compiled = check_traced(fn, images, rows, atol=1e-4, rtol=1e-4)
    assert "empty_strided((2, 4)" in compiled.last.wrapper_source  # the partials


@pytest.mark.parametrize(
    "ranges, most, counts",
    [
        ((32, 112, 112), 256, [32, 8]),  # every image its own chunk, then 8 chunks of rows
        ((32, 56, 56), 98, [32, 2]),  # 98 // 32 = 3: the largest divisor of 56 up to 3
        ((32, 28, 28), 24, [16]),  # images two by two: the rows stay whole
        ((7, 1000), 5, []),  # no divisor of 7 up to 5
    ],
)
def test_a_reduction_splits_its_leading_dims_into_even_chunks(ranges, most, counts):
    assert split_reductions.split_counts(ranges, most) == counts


def test_a_reduction_split_over_two_dims_gives_the_same_answer(monkeypatch):
    """Split over the batch and then the rows of each image: the partials' buffer has a dim
    per split dim, and the second stage reduces both."""
    monkeypatch.setattr(CPU_RULES, "split_reductions", True)
    monkeypatch.setattr(split_reductions, "SPLIT_MIN_CHUNK", 16)
    images = torch.randn(32, 4, 8, 8).to(memory_format=torch.channels_last)
    compiled = check_traced(lambda t: (t.sum((0, 2, 3)), t.var((0, 2, 3))), images)
    assert "empty_strided((32, 4, 4)" in compiled.last.wrapper_source  # images x row chunks


def test_a_long_reduction_into_no_results_is_not_split(monkeypatch):
    """Rows of 4096 elements, none of them: the split divided its partials among zero
    results (ZeroDivisionError, found by `test_programs_with_reductions_split_in_two`)."""
    monkeypatch.setattr(CPU_RULES, "split_reductions", True)
    check_traced(lambda t: t.sum(-1), torch.randn(0, 4096))


def test_a_variance_of_floats_reads_its_data_once(monkeypatch):
    """The sums of x and of x * x (in double) share one pass over a batch of images: split
    as on the GPU, a batch norm's statistics take two kernels, the partial sums and the
    rest, where a mean and then the squared deviations took four."""
    monkeypatch.setattr(CPU_RULES, "split_reductions", True)
    images = torch.randn(32, 4, 8, 8).to(memory_format=torch.channels_last)

    def statistics(t):
        return torch.var_mean(t, (0, 2, 3), correction=0, keepdim=True)

    assert len(kernels(statistics, images)) == 2
    check_traced(statistics, images)


def four_terms(a, b, c, d):  # a residual stream's gradient: a term per block, read twice
    total = a + b + c + d
    return total.sum(0), total * 2


def five_terms(a, b, c, d, e):
    total = a + b + c + d + e
    return total.sum(0), total * 2


@pytest.mark.parametrize("fn, stored", [(four_terms, False), (five_terms, True)])
def test_a_value_read_twice_is_stored_once_it_reads_more_than_four_buffers(fn, stored):
    """Cheap values are computed again in each reader, unless they read more buffers than
    `REUSE_READS` (inductor's `realize_reads_threshold`): each reader would load them all."""
    terms = [torch.randn(8, 16) for _ in range(fn.__code__.co_argcount)]
    buffers = GraphLowering(torch.fx.symbolic_trace(fn), terms).run().buffers
    totals = [b for b in buffers if str(getattr(b, "data", "")).startswith("Pointwise(add(")]
    assert len(totals) == int(stored)
    check_traced(fn, *terms)
