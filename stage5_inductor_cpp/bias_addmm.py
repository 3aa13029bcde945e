"""Matrix products as the GEMM library likes them: with the bias, and into planned memory.

`F.linear(x, w, b)` is lowered as inductor's decomposition writes it: one
`torch.addmm(b, rows, w.t())` (an `mm` without a bias) over the rows of `x`, seen
again with `x`'s leading dims; eager's `linear` does the same for a contiguous
`x`. The product then writes into a buffer the wrapper plans (`out=`), like the
products below (`WRITES_INTO_OUT`): a dead buffer of its layout, still in the
cache, instead of new memory on every call (inductor's wrapper passes `out=` to
its `extern_kernels.mm` and `addmm` too).

`mm(a, b) + bias` becomes one `torch.addmm(bias, a, b)`: a rewrite made while lowering.

The GEMM library adds the bias as it writes the product, which saves a pass
over the result. Inductor does this as a pattern of its post-grad FX passes
(torch/_inductor/fx_passes/post_grad.py: `addmm`, checked by
`is_valid_addmm_fusion`: a bias that expands to the product, one dtype).
Ours runs when the add is lowered (`GraphLowering.lower_node`), because what
decides it is known there: that the product became an extern matmul, that
the add reads it whole, and the dtypes and sizes of the operands.
"""

import dataclasses
import itertools
import math
import operator

import torch
import torch.nn.functional as F

from .ir import BufferView, ExternKernel, Layout, Pointwise, contiguous_strides
from .lowering import Fallback, is_tensor, register
from .views import cat, narrow

MATMULS = {operator.matmul, torch.matmul, torch.mm, torch.Tensor.matmul, torch.Tensor.mm}
# The products that write a contiguous result into memory they are given: each call, and
# the torch function that takes that memory as `out=` (`operator.matmul` does not).
WRITES_INTO_OUT = {
    **dict.fromkeys(MATMULS, torch.matmul),
    **{torch.mm: torch.mm, torch.Tensor.mm: torch.mm, torch.addmm: torch.addmm},
    **{torch.bmm: torch.bmm, torch.Tensor.bmm: torch.bmm, torch.baddbmm: torch.baddbmm},
}


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
    not grow the result.
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
        ):
            continue
        # The product moves to here, after the bias is computed; it keeps its name.
        bias = graph.realize(bias)
        graph.buffers.remove(extern)
        addmm = dataclasses.replace(extern, target=torch.addmm, args=(bias, a, b))
        graph.buffers.append(addmm)
        return BufferView(addmm, addmm.layout)
    return None


# ----------------------------------------------------------------------------- sibling products
# Products of one input by several weights (an attention's Q, K and V; a GLU's gate and up
# projections) become one product by the weights stacked: `x @ cat(Wq, Wk, Wv).t()`, whose
# columns are the three results. One wide GEMM keeps more of a GPU busy than three narrow
# ones: BERT-base's 8192 x 768 x 768 products ran at 37 TFLOP/s, its 8192 x 3072 x 768 one
# at 48. The stacked weights are copied on each call (7 MB a layer for BERT-base, a few
# microseconds); each result is a slice of the wide one, a view with its row stride.
# Inductor has this as an opt-in FX pass (`group_linear` in torch/_inductor/fx_passes/
# group_batch_fusion.py); here it is a rule of the lowering, on the GPU only: on the CPU
# it measured no faster (BERT small on 2 cores: 36-39 ms a call either way).


PARAMETERS = ("placeholder", "get_attr")  # the nodes a graph's weights come from
SIBLINGS_ON = {"cuda"}  # the devices whose graphs stack sibling products (tests add "cpu")


def linear_args(node: torch.fx.Node):
    """`input, weight, bias` of a `linear` node, however they were passed."""
    args = dict(zip(("input", "weight", "bias"), node.args, strict=False)) | node.kwargs
    return args.get("input"), args.get("weight"), args.get("bias")


def linear_siblings(gm: torch.fx.GraphModule, meta) -> dict:
    """The `linear` nodes that share their input with another, each -> its group (in graph
    order): their weights and biases are the graph's inputs or constants (lowered before any
    call: `GraphLowering.lower`), and nothing in the graph writes into them or the input."""
    written = {n for targets in meta.writes.values() for n in targets}
    groups: dict = {}
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target not in LINEARS:
            continue
        x, weight, bias = linear_args(node)
        params = [p for p in (weight, bias) if p is not None]
        if not isinstance(x, torch.fx.Node) or written & {x, *params}:
            continue
        if all(isinstance(p, torch.fx.Node) and p.op in PARAMETERS for p in params):
            groups.setdefault((x, bias is None), []).append(node)
    return {m: tuple(group) for group in groups.values() if len(group) > 1 for m in group}


def sibling_products(graph, node, env) -> BufferView | None:
    """`node`'s result, a slice of its group's one product (computed at the first of the
    group), or None where the group's products are lowered each alone."""
    group = graph.siblings.get(node) if graph.device.type in SIBLINGS_ON else None
    if group is None:
        return None
    if node in graph.sibling_results:
        return graph.sibling_results.pop(node)
    calls = [linear_args(member) for member in group]  # (input, weight, bias) nodes
    x = env[calls[0][0]]
    weights = [env[weight] for _, weight, _ in calls]
    biases = [env[bias] for _, _, bias in calls if bias is not None]
    try:
        for weight, bias in itertools.zip_longest(weights, biases):
            check_linear(x, weight, bias)
            if bias is not None and bias.ranges[0] != weight.ranges[0]:
                raise Fallback("a bias broadcast along the product")
    except Fallback:
        return None  # each linear is lowered alone, and says why if it falls back
    out = torch.empty((), dtype=x.dtype)  # the dtype stand-in lowerings take
    weight = graph.realize(cat(graph, out, weights, 0))
    bias = graph.realize(cat(graph, out, biases, 0)) if biases else None
    product = linear(graph, out, x, weight, bias)
    starts = itertools.accumulate((w.ranges[0] for w in weights), initial=0)
    for member, w, start in zip(group, weights, starts, strict=False):
        graph.sibling_results[member] = narrow(graph, out, product, -1, start, w.ranges[0])
    return graph.sibling_results.pop(node)
