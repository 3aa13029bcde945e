"""Chapter 6 in miniature: relu(sin(x) * 2) as one Triton kernel, run by Triton's interpreter."""

import os

os.environ["TRITON_INTERPRET"] = "1"  # read when @triton.jit decorates: numpy runs the kernel

import torch
import triton
import triton.language as tl

XBLOCK = 256  # the elements each program works on at once


@triton.jit
def fused_kernel(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK  # this program's block of elements
    xindex = xoffset + tl.arange(0, XBLOCK)  # a block of XBLOCK indices, not one index
    xmask = xindex < xnumel  # the last block may run past the end
    tmp0 = tl.load(in_ptr0 + xindex, xmask)
    tmp1 = tl.sin(tmp0) * 2
    tmp2 = tl.maximum(tmp1, 0.0)
    tl.store(out_ptr0 + xindex, tmp2, xmask)


def fused(x):
    """relu(sin(x) * 2) by the kernel: one program per block of XBLOCK elements."""
    out = torch.empty_like(x)
    grid = (triton.cdiv(x.numel(), XBLOCK),)  # 4 programs for 1000; the last masks 24 lanes
    fused_kernel[grid](x, out, x.numel(), XBLOCK=XBLOCK)
    return out


if __name__ == "__main__":
    x = torch.linspace(-2, 2, 1000)
    torch.testing.assert_close(fused(x), torch.relu(torch.sin(x) * 2))
    programs = triton.cdiv(x.numel(), XBLOCK)
    print(f"{programs} programs of {XBLOCK} lanes for {x.numel()} elements; equal to eager")
