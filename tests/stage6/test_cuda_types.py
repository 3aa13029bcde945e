"""What only the GPU showed, seen on the CPU: the models of the sweep that failed there.

Kernels the interpreter runs are typed by Triton's compiler for the GPU first
(typecheck.py). The interpreter runs numpy, which promotes float32 and float64 without a
word; the GPU's compiler refuses a float32 accumulator re-assigned a float64 in a loop,
and libdevice's float32 functions given a float64. BLOOM, GPT-Neo and GPT-J crashed so on
the GPU and ran under the interpreter: the CPU now fails as the GPU did, and the fixes
make both pass. Every other stage 6 test types its kernels the same way, in passing.
The last cases are rules of the GPU's alone, set here on the CPU: T5's many sibling
products, and the layout of a graph with one convolution (Swin).
"""

import pytest
import torch
import torch.fx
import torch.nn as nn
import triton
import triton.language as tl

import stage4_fx
from benchmarks.model_sweep import build
from stage5_inductor_cpp.performance import channels_last
from stage5_inductor_cpp.rules import CPU_RULES
from stage6_inductor_triton import compile_fx, launcher
from stage6_inductor_triton.backend import GPU_RULES
from stage6_inductor_triton.checks import typecheck
from stage6_inductor_triton.codegen_triton import TritonOverrides, shortest_float32_text
from tests.oracle import assert_same_as_eager
from tests.stage5.programs import make_program
from tests.stage6.helpers import check_lowered, compile_traced

FLOAT32_MIN = torch.finfo(torch.float32).min  # the mask value of Hugging Face's attentions


@triton.jit
def accumulates_float64(x_ptr, out_ptr, XBLOCK: tl.constexpr):
    index = tl.arange(0, XBLOCK)
    acc = tl.full([XBLOCK], 0, tl.float32)
    for _ in range(0, 4):
        acc = acc + tl.load(x_ptr + index).to(tl.float64)
    tl.store(out_ptr + index, acc)


def test_the_front_end_refuses_what_the_interpreter_runs():
    """The check is Triton's own error, on a kernel that never ran on a GPU."""
    x = torch.ones(8)
    with pytest.raises(triton.compiler.CompilationError, match="Loop-carried variable acc"):
        typecheck.check_for_cuda(accumulates_float64, [x, torch.empty(8)], {"XBLOCK": 8}, 1)


def test_every_variant_of_an_interpreted_kernel_is_typed(monkeypatch):
    """A row that fits in a block, but is long: the persistent kernel runs, and the looped
    variant, which the GPU's tuner would compile too, is typed as well."""
    typed = []
    check = typecheck.check_for_cuda
    monkeypatch.setattr(
        launcher, "check_for_cuda", lambda fn, *rest: typed.append(fn.__name__) or check(fn, *rest)
    )
    check_lowered(lambda a: a.softmax(-1), torch.randn(2, 2048))
    assert len(typed) == 2 and typed[1] == typed[0] + "_looped", typed


def test_a_declared_dtype_that_triton_does_not_give_fails(monkeypatch):
    """Each temporary is asserted to have the dtype the writer declared: a float64 that
    slips into a float32 kernel fails where it starts, also where nothing else would
    have noticed (here a store, which converts it)."""
    formats = {**TritonOverrides.FORMATS, "sin": "tl.sin({0}.to(tl.float64))"}
    monkeypatch.setattr(TritonOverrides, "FORMATS", formats)
    with pytest.raises(triton.compiler.CompilationError, match=r"is not tl\.float32"):
        compile_traced(lambda a: a.sin())(torch.randn(8))


def test_two_kernels_that_read_the_same_in_two_dtypes_are_two_launchers():
    """A copy of floats and a copy of ints have one text; the wrapper shares a launcher
    between kernels of one text, and its typed copy asserts the first one's dtypes (found
    by the random programs: the int copy failed the float assertion)."""

    steps = [("unary", "abs", [0]), ("inplace", "copy_into_slice_", [0, 0])]
    steps += [("unary", "abs", [1]), ("inplace", "flat_fill_", [4])]
    program = make_program(steps, 2)
    compiled = stage4_fx.compile(program, backend=compile_fx)
    assert_same_as_eager(compiled, program, torch.tensor([0, 0]), torch.tensor(0.0))


@triton.jit
def float32_literal(out_ptr, VALUE: tl.constexpr):
    # A Python float beside a block of int1s: the float's own type decides the sum's.
    tl.static_assert((VALUE + tl.zeros([1], tl.int1)).dtype == tl.float32)
    tl.store(out_ptr + tl.arange(0, 1), VALUE + tl.zeros([1], tl.int1))


def test_float32_limits_are_float32_literals():
    """`3.4028235e+38`, float32's largest value written short, reads as a larger float than
    float32 holds: Triton made it a float64 (BLOOM's, GPT-Neo's and GPT-J's masks)."""
    assert TritonOverrides.constant(FLOAT32_MIN, torch.float32) == "(-3.4028234663852886e+38)"
    for value in (FLOAT32_MIN, -FLOAT32_MIN, torch.finfo(torch.float32).tiny, 1e-5, 0.1):
        text = shortest_float32_text(value)
        typecheck.check_for_cuda(float32_literal, [torch.empty(1)], {"VALUE": float(text)}, 1)


def attention_mask(scores, keep):
    """BLOOM's and GPT-Neo's pattern: `where(mask, 0.0, finfo.min)` added to the scores."""
    return scores + torch.where(keep, 0.0, FLOAT32_MIN)


def test_a_mask_of_float32_min_stays_float32():
    """BLOOM: the mask was a float64 block, and so the softmax's sum, which `tl.div_rn`
    refused ("Expected dtype ['fp32'] but got fp64")."""
    scores, keep = torch.randn(4, 16), torch.rand(4, 16) > 0.3
    check_lowered(lambda s, k: attention_mask(s, k).softmax(-1), scores, keep)


def test_a_looped_reduction_of_a_masked_row_keeps_its_accumulator_float32():
    """GPT-Neo and GPT-J: the same mask in a row too long for registers: its max was a
    float32 accumulator re-assigned a float64 in the loop."""
    scores, keep = torch.randn(2, 9000), torch.rand(2, 9000) > 0.3
    check_lowered(lambda s, k: attention_mask(s, k).amax(-1), scores, keep)


def test_numbers_given_to_helpers_take_the_op_dtype():
    """`remainder(tmp0, 2.0)` in a float64 kernel: a number passed to a prelude helper is
    a float32 there, and libdevice's float64 `fmod` refused it."""
    x = torch.randn(16, dtype=torch.float64) * 10
    check_lowered(lambda a: torch.remainder(a, 2.0) + torch.where(a > 0, 0.5, 0.25), x)


class ManyHeads(nn.Module):
    """Nine products of one input, as T5's decoder reads the encoder's output in each layer."""

    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList(nn.Linear(8, 4) for _ in range(9))

    def forward(self, x):
        return [head(x) for head in self.heads]


def test_more_sibling_products_than_a_cat_selects_among(monkeypatch):
    """T5 on the GPU: stacking 12 sibling products' weights asked the `cat` lowering, which
    refuses more than 8 inputs; its `Fallback` escaped the lowering as the user's error.
    Now the products are lowered each alone."""
    monkeypatch.setattr(CPU_RULES, "stack_sibling_products", True)
    model, x = ManyHeads().eval(), torch.randn(2, 8)
    with torch.no_grad():
        assert_same_as_eager(stage4_fx.compile(model, backend=compile_fx), model, x)


@pytest.mark.parametrize("name", ["bloom", "gpt_neo", "gptj", "t5_6_layers"])
def test_the_models_that_crashed_on_the_gpu(name, monkeypatch):
    """The four models, tiny (benchmarks/model_sweep.py's CPU form), with the GPU's rules."""
    monkeypatch.setattr(CPU_RULES, "stack_sibling_products", True)
    torch.manual_seed(0)
    model, args, kwargs = build(name, "cpu")
    with torch.no_grad():
        expected = model(*args, **kwargs)[0]
        actual = stage4_fx.compile(model, backend=compile_fx)(*args, **kwargs)[0]
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-4)


def patch_embedding(x, weight):
    """One convolution, then many other ops: a ViT's or Swin's patch embedding and its blocks."""
    y = torch.conv2d(x, weight)
    for _ in range(channels_last.NODES_PER_CONVOLUTION):
        y = y * 2
    return y


def test_one_convolution_among_many_ops_keeps_eagers_layout_on_the_gpu():
    """Swin on the GPU: its one convolution, run channels-last, took a cuDNN algorithm on
    TF32 tensor cores, and the output was far further from eager's than torch.compile's,
    which keeps eager's layout there. On the CPU, oneDNN's convolutions always prefer
    channels-last."""
    gm = torch.fx.symbolic_trace(patch_embedding)
    assert not channels_last.prefers_channels_last(gm, GPU_RULES)
    assert channels_last.prefers_channels_last(gm, CPU_RULES)
    one_block = torch.fx.symbolic_trace(lambda x, weight: torch.conv2d(x, weight).relu())
    assert channels_last.prefers_channels_last(one_block, GPU_RULES)
