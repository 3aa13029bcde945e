"""Sibling products: products of one input by several weights, as one product.

An attention's Q, K and V, a GLU's gate and up projections: `x @ Wq.t()`, `x @ Wk.t()`,
`x @ Wv.t()` become one product by the weights stacked, `x @ cat(Wq, Wk, Wv).t()`, whose
columns are the three results. One wide GEMM keeps more of a GPU busy than three narrow
ones. The stacked weights are copied on each call; each result is a slice of the wide
one, a view with its row stride. Inductor has this as an opt-in FX pass (`group_linear`
in torch/_inductor/fx_passes/group_batch_fusion.py); here it is a rule of the lowering,
`Rules.stack_sibling_products` (rules.py), which stage 6 switches on for the GPU: on the
CPU it is no faster.
"""

import dataclasses
import itertools
import operator
from collections.abc import Hashable

import torch

from ..ir import BufferView
from ..lowering import Fallback, reindex
from ..lowerings.views import cat, narrow
from .linear import LINEARS, MATMULS, check_linear, linear

PARAMETERS = ("placeholder", "get_attr")  # the nodes a graph's weights come from


def _dims(rest) -> list:
    """`permute`'s dims, passed as one list (`permute(w, [1, 0])`) or one by one."""
    return list(rest[0]) if len(rest) == 1 and isinstance(rest[0], list | tuple) else rest


# The ways a program writes "this matrix, transposed" (`w.t()`, `w.T`, `w.transpose(0, 1)`,
# a training graph's `permute(w, [1, 0])`): each target, and whether its other arguments say so.
TRANSPOSES = {
    **dict.fromkeys([torch.t, torch.Tensor.t], lambda rest: not rest),
    getattr: lambda rest: rest in (["T"], ["mT"]),
    **dict.fromkeys(
        [torch.transpose, torch.Tensor.transpose],
        lambda rest: rest in ([0, 1], [1, 0], [-2, -1], [-1, -2]),
    ),
    **dict.fromkeys([torch.permute, torch.Tensor.permute], lambda rest: _dims(rest) == [1, 0]),
}


@dataclasses.dataclass(frozen=True)
class Product:
    """A product of an input by a weight matrix, as `linear` sees it: `x @ weight.t() + bias`,
    where `weight` is a parameter, read transposed (`transposed`) when the program
    multiplies by the parameter itself (`x @ w`, `addmm(b, x, w)`)."""

    x: torch.fx.Node
    weight: torch.fx.Node
    transposed: bool
    bias: object = None


def target_of(node: torch.fx.Node):
    """The callable a node calls: a Tensor method by its name for `call_method`."""
    return getattr(torch.Tensor, node.target) if node.op == "call_method" else node.target


def product_of(node: torch.fx.Node, meta) -> Product | None:
    """`node` as a product of its input by a parameter's matrix, or None: `F.linear`, and
    `x @ m`, `mm`, `matmul` and `addmm(b, x, m)` where `m` is a 2-D parameter or its
    transpose. The rule is about the product, not its spelling: `x @ w.t() + b` written
    by hand, GPT-2's `addmm(b, x, w)` and a training graph's decomposed `linear` all stack."""
    target = target_of(node)
    if node.op not in ("call_function", "call_method") or not callable(target):
        return None
    if target in LINEARS:
        x, weight, bias = linear_args(node)
        return Product(x, weight, False, bias) if isinstance(weight, torch.fx.Node) else None
    if target in MATMULS and len(node.args) == 2 and not node.kwargs:
        x, matrix, bias = *node.args, None
    elif target is torch.addmm and len(node.args) == 3 and not node.kwargs:
        bias, x, matrix = node.args
    else:
        return None
    if not isinstance(matrix, torch.fx.Node) or getattr(meta.values.get(matrix), "ndim", 0) != 2:
        return None
    if matrix.op in PARAMETERS:
        return Product(x, matrix, True, bias)
    parameter = transposed_parameter(matrix)
    return Product(x, parameter, False, bias) if parameter is not None else None


def transposed_parameter(node: torch.fx.Node) -> torch.fx.Node | None:
    """The parameter that 2-D `node` is the transpose of, or None."""
    target = target_of(node)
    base, *rest = node.args or (None,)
    if not (isinstance(base, torch.fx.Node) and base.op in PARAMETERS) or node.kwargs:
        return None
    says_so = TRANSPOSES.get(target) if isinstance(target, Hashable) else None
    return base if says_so is not None and says_so(rest) else None


def linear_args(node: torch.fx.Node):
    """`input, weight, bias` of a `linear` node, however they were passed."""
    args = dict(zip(("input", "weight", "bias"), node.args, strict=False)) | node.kwargs
    return args.get("input"), args.get("weight"), args.get("bias")


def linear_siblings(gm: torch.fx.GraphModule, meta) -> dict:
    """The products (`product_of`) that share their input with another, each -> its group
    (in graph order): their weights and biases are the graph's inputs or constants (lowered
    before any call: `GraphLowering.lower`), nothing in the graph writes into them or the
    input, and nothing writes anything between the group's first product and its last,
    where all of them are computed (the input, a view, may see the write otherwise)."""
    written = {n for targets in meta.writes.values() for n in targets}
    order = {node: i for i, node in enumerate(gm.graph.nodes)}
    writers = sorted(order[node] for node, targets in meta.writes.items() if targets)
    groups: dict = {}
    for node in gm.graph.nodes:
        product = product_of(node, meta)
        if product is None:
            continue
        params = [p for p in (product.weight, product.bias) if p is not None]
        if not isinstance(product.x, torch.fx.Node) or written & {product.x, *params}:
            continue
        if all(isinstance(p, torch.fx.Node) and p.op in PARAMETERS for p in params):
            key = (input_key(product.x), product.bias is None)
            groups.setdefault(key, []).append((node, product))
    siblings = {}
    for group in groups.values():
        first, last = order[group[0][0]], order[group[-1][0]]
        if len(group) > 1 and not any(first < w < last for w in writers):
            siblings.update(dict.fromkeys((node for node, _ in group), tuple(group)))
    return siblings


# Calls whose result depends only on their arguments and is the same view or number for the
# same ones: two of them on the same arguments are one value (`input_key`).
SAME_FOR_SAME = {"view", "reshape", "flatten", "size", torch.reshape, torch.flatten, getattr}
SAME_FOR_SAME |= {operator.getitem}


def input_key(value):
    """What identifies a product's input: its node, or for a view or shape read of one, the
    call and its arguments' keys. Each `x.reshape(-1, x.shape[-1]) @ w` of a program makes
    its own reshape (symbolic_trace and stage 4's frontend keep them apart), of one input."""
    if isinstance(value, list | tuple):
        return tuple(map(input_key, value))
    if isinstance(value, slice):  # `x[:, :8]` (a slice is not hashable before Python 3.12)
        return (slice, input_key((value.start, value.stop, value.step)))
    if not isinstance(value, torch.fx.Node) or value.op not in ("call_function", "call_method"):
        return value
    if value.target not in SAME_FOR_SAME or value.kwargs:
        return value
    return (value.op, value.target, input_key(value.args))


class SiblingProducts:
    """The graph's groups of sibling products (`linear_siblings`, where the rule is on), and
    the slices of each group's product that its members have not read yet."""

    def __init__(self, graph):
        self.graph = graph
        on = graph.rules.stack_sibling_products
        self.groups = linear_siblings(graph.gm, graph.meta) if on else {}
        self.results: dict = {}

    def product(self, node, env) -> BufferView | None:
        """`node`'s result, a slice of its group's one product (computed at the first of the
        group), or None where the group's products are lowered each alone."""
        graph, group = self.graph, self.groups.get(node)
        if group is None:
            return None
        if node in self.results:
            return self.results.pop(node)
        x = env[group[0][1].x]
        weights = [weight_of(env[product.weight], product.transposed) for _, product in group]
        biases = [env[product.bias] for _, product in group if product.bias is not None]
        try:
            for weight, bias in itertools.zip_longest(weights, biases):
                if weight is None:
                    raise Fallback("a weight that is not in memory")
                check_linear(x, weight, bias)
                if bias is not None and bias.ranges[0] != weight.ranges[0]:
                    raise Fallback("a bias broadcast along the product")
            out = torch.empty((), dtype=x.dtype)  # the dtype stand-in lowerings take
            # Lowerings called here, not by the graph's `lower_call`: their `Fallback` is ours
            # to catch (a cat of more than MAX_CAT_INPUTS weights: T5's decoder has more
            # cross-attention products of one encoder output than that).
            weight = cat(graph, out, weights, 0)
            bias = cat(graph, out, biases, 0) if biases else None
        except Fallback:
            return None  # each product is lowered alone, and says why if it falls back
        weight = graph.realize(weight)
        bias = graph.realize(bias) if biases else None
        product = linear(graph, out, x, weight, bias)
        starts = itertools.accumulate((w.ranges[0] for w in weights), initial=0)
        for (member, _), w, start in zip(group, weights, starts, strict=False):
            self.results[member] = narrow(graph, out, product, -1, start, w.ranges[0])
        return self.results.pop(node)


def weight_of(value, transposed: bool):
    """A parameter's value as `linear`'s (out, in) weight: itself, or its transpose (a view);
    None for a transposed value not in memory."""
    if not transposed:
        return value
    if not isinstance(value, BufferView) or len(value.ranges) != 2:
        return None
    return reindex(value, value.ranges[::-1], lambda idx: idx[::-1])
