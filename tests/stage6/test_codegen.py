"""What the Triton code looks like: names, blocks and masks, index math, constants, fallbacks."""

import re

import pytest
import torch
import torch.nn.functional as F

from stage5_inductor_cpp.codegen_cpp import CppKernel, CppOverrides
from stage5_inductor_cpp.ir import Index
from stage5_inductor_cpp.kernel_writer import OpOverrides
from stage5_inductor_cpp.performance import split_reductions
from stage5_inductor_cpp.rules import CPU_RULES
from stage5_inductor_cpp.scheduler import FusedKernel
from stage6_inductor_triton import TritonUnsupported
from stage6_inductor_triton.codegen_triton import TritonKernel, TritonOverrides
from stage6_inductor_triton.indexing import index_text
from stage6_inductor_triton.prelude import prelude_for
from stage6_inductor_triton.runtime import INTERPRETER_LIBDEVICE
from tests.oracle import assert_same_as_eager
from tests.stage6.helpers import DEVICES, check_traced


def chain(a, b):
    return torch.relu(torch.sin(a) * torch.cos(b) + a * 0.5 - b)


def test_pointwise_chain_is_one_kernel_over_a_flat_index():
    compiled = check_traced(chain, torch.randn(1000), torch.randn(1000))
    code = compiled.code
    assert compiled.last.kernel_names == ["triton_fused_sin_cos_mul_add_sub_relu_0"]
    assert "triton_fused_sin_cos_mul_add_sub_relu_0.run(arg0, arg1, buf0, grid=grid(1000))" in code
    assert "xindex = xoffset + tl.arange(0, XBLOCK)" in code
    assert "tl.load(arg0 + (xindex), xmask)" in code  # contiguous: vector loads on a GPU
    assert "tl.store(buf0 + (xindex), tmp8, xmask)" in code


def test_loads_whose_addresses_are_known_come_before_the_math():
    """The chain's load of `b` was written after `sin(a)`, whose code branches (a slow path
    for large arguments): the load waited for it, and the kernel, with inductor's block
    sizes, took 1.03 of inductor's time on an H200 (bench_stage6_gpu). Loads go first, as
    inductor writes them; a gather's load, whose address is computed, stays after it."""
    code = check_traced(chain, torch.randn(1000), torch.randn(1000)).code
    assert code.index("tl.load(arg1") < code.index("tl.sin(")
    x, where = torch.randn(64), torch.randint(0, 64, (64,))
    code = check_traced(lambda x, i: torch.sin(x) * x[i] + x[i.flip(0)], x, where).code
    gather = re.search(r"tmp\d+ = tl\.load\(arg0 \+ \((.*?tmp(\d+).*?)\)", code)
    assert gather and code.index(f"tmp{gather[2]} = ") < gather.start(), code


def test_small_rows_are_persistent_long_rows_loop():
    short = check_traced(lambda a: a.softmax(-1), torch.randn(5, 100)).code
    assert "rindex = tl.arange(0, RBLOCK)[None, :]" in short and "for roffset" not in short
    assert short.count("tl.load(") == 1  # the row is loaded once, used by all three loops
    long = check_traced(lambda a: a.softmax(-1), torch.randn(2, 9000)).code
    assert long.count("for roffset in range(0, 9000, RBLOCK):") == 3
    assert "eviction_policy='evict_last'" in long  # read again by a later loop: keep in L2
    both = check_traced(lambda a: a.softmax(-1), torch.randn(2, 2000)).code
    assert "_0(" in both and "_0_looped(" in both  # the autotuner picks one


def gradient_sums(g, x):  # a batch norm backward's two sums: common inputs, no dependence
    g = torch.where(x > 0, g, 0.0)
    return g.sum(1), (g * (x - 0.5)).sum(1)


def test_independent_reductions_share_a_loop_dependent_ones_do_not():
    """Reductions over the same rows that do not read each other fold in one loop, which
    loads their common inputs once (a float variance's two sums too); a mean absolute
    deviation's second sum reads the mean: its own loop."""
    g, x = torch.randn(2, 9000), torch.randn(2, 9000)
    code = check_traced(gradient_sums, g, x, atol=1e-3, rtol=1e-4).code
    assert code.count("for roffset in range(0, 9000, RBLOCK):") == 1
    assert code.count("tl.load(arg1 + ") == 1  # x, once for both sums
    code = check_traced(lambda a: a.var(1), x, atol=1e-4, rtol=1e-4).code
    assert code.count("for roffset in range(0, 9000, RBLOCK):") == 1
    deviation = lambda a: (a - a.mean(1, keepdim=True)).abs().sum(1)  # noqa: E731
    code = check_traced(deviation, x, atol=1e-3, rtol=1e-4).code
    assert code.count("for roffset in range(0, 9000, RBLOCK):") == 2


def sums_of_three(g, x, y):  # the second sum loads an input the first does not
    g = torch.where(x > 0, g, 0.0)
    return g.sum(1), (g * y).sum(1)


def test_a_kernels_variants_take_their_arguments_in_one_order():
    """The looped variant loads `y` before it stores the first sum (one loop for both), the
    persistent one after: one launcher calls either, so both take the persistent order."""
    compiled = check_traced(sums_of_three, *torch.randn(3, 2, 2000), atol=1e-3, rtol=1e-4)
    assert compiled.torch_reasons == [] and "_0_looped(" in compiled.code
    signatures = re.findall(r"def triton_fused_\w+\((.*)\):", compiled.code)
    assert len(signatures) == 2 and signatures[0] == signatures[1]


def test_views_are_index_math():
    code = check_traced(lambda a: a + a.t() + a[0], torch.randn(6, 6)).code
    assert "tl.load(arg0 + (6*(xindex % 6) + (xindex // 6)), xmask)" in code
    assert "tl.load(arg0 + ((xindex % 6)), xmask)" in code


def test_an_output_laid_out_transposed_is_written_in_memory_order():
    """Eager lays `a.t() + a[0]` out as `a.t()` is, transposed: the kernel loops over the
    output's memory in order and reads `a` as it lies (like_eager/layouts.py)."""
    code = check_traced(lambda a: a.t() + a[0], torch.randn(6, 6)).code
    assert "tl.load(arg0 + (xindex), xmask)" in code
    assert "tl.load(arg0 + ((xindex // 6)), xmask)" in code
    assert "tl.store(buf0 + (xindex), tmp2, xmask)" in code


@pytest.mark.parametrize(
    "terms, xsizes, rsizes, expected",
    [
        ({"x0": 64, "x1": 1}, (8, 64), (), "xindex"),
        ({"x0": 1, "x1": 8}, (8, 64), (), "8*(xindex % 64) + (xindex // 64)"),
        ({"x1": 1}, (8, 64), (), "(xindex % 64)"),
        ({"x0": 640, "x1": 1}, (8, 64), (), "(xindex % 64) + 640*(xindex // 64)"),
        ({"x0": 12, "x1": 4, "x2": 1}, (5, 3, 4), (), "xindex"),
        ({"x0": 4, "x2": 1}, (5, 1, 4), (), "xindex"),
        ({"x0": 8192, "r0": 1}, (8192,), (8192,), "rindex + 8192*xindex"),
        ({"x0": 1, "r0": 3}, (3,), (7,), "3*rindex + xindex"),
        ({"x1": 1}, (2, 3, 4), (), "((xindex // 4) % 3)"),
    ],
)
def test_index_text(terms, xsizes, rsizes, expected):
    index = Index(tuple(sorted(terms.items())))
    assert index_text(index, xsizes, rsizes)[0] == expected


@pytest.mark.parametrize(
    "value, dtype, expected",
    [
        (0.5, torch.float32, "0.5"),
        (1e-5, torch.float32, "1e-05"),
        (0.1, torch.float64, "tl.full([], 0.1, tl.float64)"),
        (0.5, torch.float64, "0.5"),
        (-2.0, torch.float32, "(-2.0)"),
        (float("nan"), torch.float32, 'float("nan")'),
        (float("-inf"), torch.float64, '(-float("inf"))'),
        (1e-40, torch.float64, "tl.full([], 1e-40, tl.float64)"),
        (-0.0, torch.float32, "tl.full([], -2147483648, tl.int32).to(tl.float32, bitcast=True)"),
        (3.7, torch.int64, "3"),
        (1, torch.bool, "True"),
    ],
)
def test_constants_keep_their_dtype(value, dtype, expected):
    assert TritonOverrides.constant(value, dtype) == expected


def test_interpreter_has_every_libdevice_function_we_use():
    texts = [*TritonOverrides.FORMATS.values(), prelude_for("cpu"), prelude_for("cuda")]
    used = {name for text in texts for name in re.findall(r"libdevice\.(\w+)", text)}
    assert used <= set(vars(INTERPRETER_LIBDEVICE))


def test_float64_constants_are_exact():
    check_traced(lambda a: a * 0.1 + 1e-300, torch.randn(10, dtype=torch.float64), rtol=0, atol=0)


@pytest.mark.parametrize(
    ("writer", "error"), [(CppKernel, AttributeError), (TritonKernel, TritonUnsupported)]
)
def test_unknown_op_is_named(writer, error):
    kernel = writer(FusedKernel((4,), []), {})
    with pytest.raises(error, match=r"no (C\+\+|Triton) translation of ops\.bessel"):
        kernel.bessel()


def test_an_entry_that_reads_alike_in_both_languages_is_in_the_shared_table_once():
    # Stage 5's kernel_writer.py holds the table both writers start from; each backend's
    # overrides add only what its language writes its own way.
    for op, text in OpOverrides.FORMATS.items():
        assert CppOverrides.FORMATS[op] == TritonOverrides.FORMATS[op] == text
    cpp, triton = CppOverrides.FORMATS, TritonOverrides.FORMATS
    alike = {op for op in cpp.keys() & triton.keys() if cpp[op] == triton[op]}
    assert alike == OpOverrides.FORMATS.keys()


def test_layer_norm_reads_its_input_once():
    compiled = check_traced(
        lambda a, w, b: F.layer_norm(a, (64,), w, b),
        torch.randn(4, 64),
        torch.randn(64),
        torch.randn(64),
    )
    assert compiled.code.count("tl.load(arg0") == 1


def test_mutation_runs_in_torch():
    def fn(a):
        a.add_(1)
        return a * 2

    compiled = torch.fx.symbolic_trace(fn)
    from stage6_inductor_triton import compile_fx

    out = compile_fx(compiled, [torch.ones(3)])(torch.ones(3))
    torch.testing.assert_close(out, torch.full((3,), 4.0))


def test_the_module_is_written_once_to_the_cache(kernel_cache):
    first = check_traced(chain, torch.randn(100), torch.randn(100)).last.path
    second = check_traced(chain, torch.randn(100), torch.randn(100)).last.path
    assert first == second and first.parent == kernel_cache / "triton" and first.exists()


@pytest.mark.parametrize("device", DEVICES)
def test_compile_picks_triton_for_cuda_and_cpp_for_cpu(device):
    import stage4_fx
    import stage6_inductor_triton

    compiled = []

    def spy(gm, example_inputs):
        compiled.append(stage6_inductor_triton.inductor(gm, example_inputs))
        return compiled[-1]

    a, b = torch.randn(100, device=device), torch.randn(100, device=device)
    assert_same_as_eager(stage4_fx.compile(chain, backend=spy), chain, a, b)
    kind = "triton_fused" if device == "cuda" else "cpp_fused"
    assert compiled and compiled[0].last.kernel_names[0].startswith(kind)
    assert_same_as_eager(stage6_inductor_triton.compile(chain), chain, a, b)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="a GPU's wrapper")
def test_a_gpu_wrapper_allocates_without_the_dispatcher_under_a_device_guard():
    """Buffers come from `empty_strided_cuda` (no device string to parse, no dispatch), which
    allocates on the current device: the body runs under a guard that makes it the
    kernels' own, as the launches' current stream must be too."""
    a, b = torch.randn(100, device="cuda"), torch.randn(100, device="cuda")
    code = check_traced(chain, a, b, device="cuda").last.wrapper_source
    assert "    with torch.cuda._DeviceGuard(0):\n" in code
    assert "empty_strided_cuda((100,), (1,), torch.float32)" in code and "device=" not in code


# --- split reductions: few results over many elements, in two kernels ------------------------


@pytest.fixture
def split_on_the_cpu(monkeypatch):
    """Reductions are split on the GPU only; here the interpreter's graphs split them too."""
    monkeypatch.setattr(CPU_RULES, "split_reductions", True)


def batch_norm_sums(t):  # a training batch norm's statistics over a channels-last batch
    return t.sum((0, 2, 3)), t.amax((0, 2, 3)), t.var((0, 2, 3)), t.mean()


def whole_reductions(t):
    return t.sum(), t.amin(0), (t > 3).any(), (t > -9).all(), (t * 1e-3 + 1).prod()


@pytest.mark.parametrize("device", DEVICES)
def test_few_results_over_many_elements_are_reduced_in_two_kernels(split_on_the_cpu, device):
    """The per-channel sums reduce chunks of the batch into partial results (a (splits,
    channels) buffer), then the partials: each kernel has many programs."""
    images = torch.randn(32, 4, 8, 8).to(memory_format=torch.channels_last)
    compiled = check_traced(batch_norm_sums, images, device=device, atol=1e-4, rtol=1e-4)
    code = compiled.last.wrapper_source
    assert re.search(r"empty_strided(_cuda)?\(\(2, 4\)", code)  # 2 chunks x 4 channels
    assert "grid=grid(8))" in code and "grid=grid(4))" in code  # partials, then results
    rows = torch.randn(16, 1024)
    rows[3, 5] = float("nan")  # the partials carry it
    check_traced(whole_reductions, rows, device=device, atol=1e-4, rtol=1e-4)


def row_reductions(x, w):
    """A library softmax, a layer norm by hand and a row sum: rows along memory."""
    mean = x.mean(-1, keepdim=True)
    norm = (x - mean) * torch.rsqrt(((x - mean) ** 2).mean(-1, keepdim=True) + 1e-5) * w
    return x.softmax(-1), norm, x.sum(-1)


@pytest.mark.parametrize("device", DEVICES)
def test_wide_rows_along_memory_are_not_split(split_on_the_cpu, monkeypatch, device):
    """Enough rows along memory keep the GPU busy a program each; a split reads each row once
    more per reduction. It was split (SPLIT_INTO raised for channels-last sums), and the
    GPU's softmax and layer norm fell to 48% of copy bandwidth (bench_stage6_gpu).
    The thresholds are made small, for the interpreter's sake."""
    monkeypatch.setattr(split_reductions, "ROWS_ENOUGH", 16)
    monkeypatch.setattr(split_reductions, "SPLIT_MIN_CHUNK", 64)
    rows = torch.randn(split_reductions.ROWS_ENOUGH, 2 * split_reductions.SPLIT_MIN_CHUNK)
    weight = torch.randn(rows.shape[1])
    compiled = check_traced(row_reductions, rows, weight, device=device, atol=1e-4, rtol=1e-4)
    code = compiled.last.wrapper_source
    grids = {int(n) for n in re.findall(r"grid=grid\((\d+)\)", code)}
    assert grids == {rows.shape[0], rows.numel()} or grids == {rows.shape[0]}, code
    assert not re.search(rf"empty_strided(_cuda)?\(\(\d+, {rows.shape[0]}\)", code)
    few = rows[: split_reductions.ROWS_ENOUGH // 2]  # too few rows: split, as before
    code = check_traced(lambda t: t.sum(-1), few, device=device, atol=1e-4, rtol=1e-4)
    code = code.last.wrapper_source
    assert len(re.findall(r"grid=grid", code)) == 2, code


def normalized_by_hand(x):
    mean = x.mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + 1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_a_variance_over_whole_rows_takes_two_passes_in_float(
    split_on_the_cpu, monkeypatch, device
):
    """A row that one kernel holds whole is read twice for free: its variance is the mean,
    then the squared deviations, in float as CUDA's eager sums (`_variance`). In double,
    the layer norm by hand ran 3% behind inductor's (bench_stage6_gpu). Rows that are
    split keep the one pass in double that a split shares."""
    monkeypatch.setattr(CPU_RULES, "float_variance_of_rows", True)
    monkeypatch.setattr(split_reductions, "ROWS_ENOUGH", 16)
    monkeypatch.setattr(split_reductions, "SPLIT_MIN_CHUNK", 64)
    rows = torch.randn(split_reductions.ROWS_ENOUGH, 2 * split_reductions.SPLIT_MIN_CHUNK)
    rows = rows * 3 + 50  # off zero: a sum of squares less the squared sum would cancel
    compiled = check_traced(normalized_by_hand, rows, device=device, atol=1e-4, rtol=1e-4)
    assert len(compiled.last.kernel_names) == 1 and "float64" not in compiled.code
    few = rows[: split_reductions.ROWS_ENOUGH // 2]
    compiled = check_traced(lambda t: t.var(-1), few, device=device, atol=1e-4, rtol=1e-4)
    assert len(compiled.last.kernel_names) == 2 and "float64" in compiled.code


@pytest.mark.parametrize("device", DEVICES)
def test_reductions_are_split_on_the_gpu_only(device):
    images = torch.randn(8, 4, 16, 16)
    compiled = check_traced(lambda t: t.sum((0, 2, 3)), images, device=device, atol=1e-3, rtol=1e-4)
    assert len(compiled.last.kernel_names) == (2 if device == "cuda" else 1)


def repeated_blocks(x, w1, w2, w3):
    """Three blocks that differ only in their weights, then one of another width."""
    for w in (w1, w2):
        x = torch.relu(x @ w) * 2 + 1
    return torch.relu(x[:, :8] @ w3) * 2 + 1


@pytest.mark.parametrize("device", DEVICES)
def test_kernels_that_differ_only_in_names_share_one_launcher(device):
    """Kernels whose source is the same but for their own name and their buffers' names
    are launched through one launcher (one Triton binary, tuned once); a kernel of other
    sizes keeps its own."""
    ws = [torch.randn(16, 16), torch.randn(16, 16), torch.randn(8, 16)]
    compiled = check_traced(repeated_blocks, torch.randn(4, 16), *ws, device=device)
    launchers = [
        v for k, v in compiled.last.call.__globals__.items() if k in compiled.last.kernel_names
    ]
    assert len(launchers) == 3 and len({id(v) for v in launchers}) == 2
