"""`mm(a, b) + bias` as one `torch.addmm(bias, a, b)`: a rewrite made while lowering.

The GEMM library adds the bias as it writes the product, which saves a pass
over the result. Inductor does this as a pattern of its post-grad FX passes
(torch/_inductor/fx_passes/post_grad.py: `addmm`, checked by
`is_valid_addmm_fusion`: a bias that expands to the product, one dtype).
Ours runs when the add is lowered (`GraphLowering.lower_node`), because what
decides it is known there: that the product became an extern matmul, that
the add reads it whole, and the dtypes and sizes of the operands.
"""

import dataclasses
import operator

import torch

from ..ir import BufferView, ExternKernel, Pointwise, loads_of
from .linear import MATMULS

ADDS = {operator.add, torch.add, "add"}


def broadcasts_to(shape, target) -> bool:
    """Whether `shape` broadcasts to `target` without growing it."""
    if len(shape) > len(target):
        return False
    return all(s in (1, t) for s, t in zip(reversed(shape), reversed(target), strict=False))


def bias_addmm(graph, node, args, kwargs) -> BufferView | None:
    """The add `node` (its operands lowered: `args`) as an addmm, or None if it is not one.

    Only when the add's operand is the whole product (not a slice of it), which
    nothing else reads, on 2-D float tensors of one dtype, with a bias that does
    not grow the result and is not the product itself (`y + y`: the library would
    read its own output as the bias before writing it).
    """
    if node.target not in ADDS or kwargs or len(args) != 2:
        return None
    for product, mm, bias in ((node.args[0], *args), (node.args[1], *args[::-1])):
        extern = mm.buffer if isinstance(mm, BufferView) else None
        if not (
            isinstance(extern, ExternKernel)
            and extern.target in MATMULS
            and isinstance(product, torch.fx.Node)
            and graph.resolve(product.op, product.target) in MATMULS
            and mm.is_whole_buffer()
        ):
            continue
        a, b = extern.args
        if (
            len(product.users) != 1
            or extern.kwargs
            or not all(isinstance(t, BufferView) for t in (a, b))
            or not isinstance(bias, BufferView | Pointwise)
            or {t.dtype for t in (a, b, bias)} != {extern.layout.dtype}
            or not extern.layout.dtype.is_floating_point
            or len(a.ranges) != 2
            or len(b.ranges) != 2
            or not broadcasts_to(bias.ranges, mm.ranges)
            or reads(bias, extern)
        ):
            continue
        # The product moves to here, after the bias is computed; it keeps its name.
        bias = graph.realize(bias)
        graph.buffers.remove(extern)
        addmm = dataclasses.replace(extern, target=torch.addmm, args=(bias, a, b))
        graph.buffers.append(addmm)
        return BufferView(addmm, addmm.layout)
    return None


def reads(value: BufferView | Pointwise, buffer: ExternKernel) -> bool:
    """Whether lowered `value` reads `buffer`."""
    if isinstance(value, BufferView):
        return value.buffer is buffer
    return buffer.name in {name for name, _ in loads_of(value)}
