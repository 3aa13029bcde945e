"""`F.linear(x, w, b)` as one matrix product into memory the wrapper plans.

It is lowered as inductor's decomposition writes it: one `torch.addmm(b, rows, w.t())`
(an `mm` without a bias) over the rows of `x`, seen again with `x`'s leading dims;
eager's `linear` does the same for a contiguous `x`. The product then writes into a
buffer the wrapper plans (`out=`), like every product of `WRITES_INTO_OUT`: a dead buffer
of its layout, still in the cache, instead of new memory on every call (inductor's
wrapper passes `out=` to its `extern_kernels.mm` and `addmm` too).
"""

import math
import operator

import torch
import torch.nn.functional as F

from ..ir import BufferView, ExternKernel, Layout, contiguous_strides
from ..lowering import Fallback, is_tensor, register

MATMULS = {operator.matmul, torch.matmul, torch.mm, torch.Tensor.matmul, torch.Tensor.mm}
# The products that write a contiguous result into memory they are given: each call, and
# the torch function that takes that memory as `out=` (`operator.matmul` does not).
WRITES_INTO_OUT = {
    **dict.fromkeys(MATMULS, torch.matmul),
    **{torch.mm: torch.mm, torch.Tensor.mm: torch.mm, torch.addmm: torch.addmm},
    **{torch.bmm: torch.bmm, torch.Tensor.bmm: torch.bmm, torch.baddbmm: torch.baddbmm},
}


def into_planned_memory(target, layout: Layout, may_alias: bool) -> tuple[object, bool]:
    """A call into torch, and whether it writes its result into memory the wrapper plans
    (`out=`): the products of `WRITES_INTO_OUT`, whose result is new contiguous memory."""
    if target in WRITES_INTO_OUT and not may_alias and layout.is_contiguous():
        return WRITES_INTO_OUT[target], True
    return target, False


LINEARS = (F.linear, torch._C._nn.linear)


def check_linear(x, weight, bias):
    """Raise `Fallback` unless `F.linear(x, weight, bias)` is one product over x's rows."""
    if not (is_tensor(x) and is_tensor(weight) and len(weight.ranges) == 2 and x.ranges):
        raise Fallback("linear of other ranks: torch")
    if bias is not None and not (is_tensor(bias) and len(bias.ranges) == 1):
        raise Fallback("a bias that is not one row: torch")
    n, k = weight.ranges
    if x.ranges[-1] != k or (bias is not None and bias.ranges[0] not in (n, 1)):
        raise Fallback("sizes that do not match: torch raises")
    dtypes = {t.dtype for t in (x, weight, bias) if t is not None}
    if len(dtypes) != 1 or not x.dtype.is_floating_point:
        raise Fallback("operands of several dtypes, or not floats: torch")
    if isinstance(x, BufferView) and not (len(x.ranges) == 2 or x.layout.is_contiguous()):
        raise Fallback("rows that are not one block of memory: torch copies them")


@register(*LINEARS)
def linear(graph, out, x, weight, bias=None):
    """`x @ weight.t() + bias` as one addmm over x's rows (or an mm, without a bias)."""
    check_linear(x, weight, bias)
    x, weight = graph.realize(x), graph.realize(weight)
    n, k = weight.ranges
    *lead, _ = x.ranges
    rows = (
        x
        if len(x.ranges) == 2
        else BufferView(x.buffer, Layout((math.prod(lead), k), (k, 1), x.dtype, x.layout.offset))
    )
    w = weight.layout
    columns = BufferView(weight.buffer, Layout((k, n), w.stride[::-1], w.dtype, w.offset))
    product = Layout((rows.ranges[0], n), contiguous_strides((rows.ranges[0], n)), x.dtype)
    args = (rows, columns) if bias is None else (graph.realize(bias), rows, columns)
    call = ExternKernel(
        graph.new_name(), product, torch.mm if bias is None else torch.addmm, args,
        may_alias=False, out=True,
    )  # fmt: skip
    graph.buffers.append(call)
    result = (*lead, n)
    return BufferView(call, Layout(result, contiguous_strides(result), x.dtype))
