"""The ATen graphs of training, as the torch calls our lowerings know.

A graph that needs autograd is traced again by stage 4's training/aot.py into a forward and a
backward graph of ATen ops (`aten.mul.Tensor`, `aten.view.default`), decomposed by
torch's tables (`DECOMPOSITIONS`) into few of them. Our lowerings are keyed by the torch
functions and Tensor methods that stage 4's graphs call, so each ATen op whose torch
twin takes the same arguments becomes that call (`AS_TORCH`); the others stay ATen
calls, which the lowering calls as extern kernels (a convolution's backward, say).
A 2-D `aten.convolution` becomes `torch.conv2d` though its arguments differ (`is_conv2d`),
and a cast (`aten._to_copy` with a dtype alone, as autocast makes them) `x.to(dtype)`.
Torch's inductor lowers ATen ops directly (torch/_inductor/lowering.py registers
`aten.*` overloads); here one table maps the ATen graphs onto the lowerings written for
stage 4's graphs, so that a lowering serves both.
"""

import operator

import torch
import torch.fx
import torch.nn.functional as F
from torch._decomp import core_aten_decompositions, get_decompositions

aten = torch.ops.aten

# Torch's "core ATen" decompositions (torch/_decomp), as inductor's table starts from, plus
# the norms, whose decompositions are pointwise ops and reductions that fuse (an inference
# graph under autocast meets eval-mode batch norm, `_no_training`, here). Not CPU flash
# attention's: its backward, not decomposed, reads the forward's logsumexp, which the
# decomposed forward computes otherwise (the gradients came out wrong). Nor an embedding's
# backward: its decomposition accumulates with `index_put`, which torch runs on one thread
# of the CPU, many times slower than the op it replaced; inductor writes it as a kernel of
# atomic adds, which we have not, so the op stays an extern.
DECOMPOSITIONS = {
    **core_aten_decompositions(),
    **get_decompositions(
        [
            aten.native_layer_norm,
            aten._native_batch_norm_legit_functional,
            aten._native_batch_norm_legit_no_training,
            aten._native_batch_norm_legit,
        ]
    ),
}
del DECOMPOSITIONS[aten._scaled_dot_product_flash_attention_for_cpu.default]
del DECOMPOSITIONS[aten.embedding_dense_backward.default]

FUNCTIONS = {
    torch.add: [aten.add.Tensor, aten.add.Scalar],
    torch.sub: [aten.sub.Tensor, aten.sub.Scalar],
    torch.mul: [aten.mul.Tensor, aten.mul.Scalar],
    torch.div: [aten.div.Tensor, aten.div.Scalar, aten.div.Tensor_mode],
    torch.pow: [aten.pow.Tensor_Scalar, aten.pow.Tensor_Tensor],
    torch.where: [aten.where.self],
    torch.le: [aten.le.Scalar, aten.le.Tensor],
    torch.lt: [aten.lt.Scalar, aten.lt.Tensor],
    torch.ge: [aten.ge.Scalar, aten.ge.Tensor],
    torch.gt: [aten.gt.Scalar, aten.gt.Tensor],
    torch.eq: [aten.eq.Scalar, aten.eq.Tensor],
    torch.ne: [aten.ne.Scalar, aten.ne.Tensor],
    torch.sum: [aten.sum.dim_IntList, aten.sum.default],
    torch.mean: [aten.mean.dim],
    torch.amax: [aten.amax.default],
    torch.any: [aten.any.dim, aten.any.dims, aten.any.default],
    torch.all: [aten.all.dim, aten.all.dims, aten.all.default],
    torch.var_mean: [aten.var_mean.correction],
    torch.clamp: [aten.clamp.default],
    torch.maximum: [aten.maximum.default],
    torch.minimum: [aten.minimum.default],
    torch.mm: [aten.mm.default],
    torch.bmm: [aten.bmm.default],
    torch.addmm: [aten.addmm.default],
    torch.cat: [aten.cat.default],
    torch.slice_scatter: [aten.slice_scatter.default],
    torch.bitwise_and: [aten.bitwise_and.Tensor],
    torch.select: [aten.select.int],
    torch.full: [aten.full.default],
    torch.full_like: [aten.full_like.default],
    torch.scalar_tensor: [aten.scalar_tensor.default],
    torch._softmax: [aten._softmax.default],
    F.gelu: [aten.gelu.default],
    **{
        getattr(torch, name): [getattr(aten, name).default]
        for name in (
            "neg", "exp", "log", "relu", "sigmoid", "tanh", "erf", "rsqrt", "sqrt", "sin",
            "cos", "abs", "reciprocal", "logical_not", "bitwise_not",
        )
    },
}  # fmt: skip
# A view in a functional graph is a reshape: the fake tensors lay a result out as the meta
# functions do (contiguous), the real kernels may not (the CPU's one-channel convolution
# returns channels-last), and no one can write through it.
METHODS = {
    "reshape": [aten.view.default],
    "permute": [aten.permute.default],
    "expand": [aten.expand.default],
    "unsqueeze": [aten.unsqueeze.default],
    "squeeze": [aten.squeeze.dim, aten.squeeze.dims],
    "clone": [aten.clone.default],
}
AS_TORCH = {
    **{op: ("call_function", fn) for fn, ops in FUNCTIONS.items() for op in ops},
    **{op: ("call_method", name) for name, ops in METHODS.items() for op in ops},
}
# aten.slice.Tensor's arguments after the tensor, with their defaults.
SLICE = {"dim": 0, "start": None, "end": None, "step": 1}
# In a functional graph an alias is its source: no one can write through either.
SAME_VALUE = {aten.alias.default, aten.detach.default, aten.lift_fresh_copy.default}


def as_torch_calls(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A copy of an ATen graph with the calls of `AS_TORCH` made torch calls, and the aliases
    of `SAME_VALUE` replaced by their source."""
    gm = torch.fx.GraphModule(gm, gm.graph.__deepcopy__())
    output = next(n for n in gm.graph.nodes if n.op == "output")
    for node in list(gm.graph.nodes):
        if node.op != "call_function":
            continue
        if node.target in SAME_VALUE:
            source = node.args[0]
            if output in node.users and source.op != "placeholder":
                # Its source is returned in its place: only the backward reads it (stage 4's
                # aot.py), in our layout (a cast weight channels-last), if that holds for
                # every output the source stands for.
                saved = node.meta.get("saved_for_backward", False)
                if source in output.all_input_nodes:
                    saved = saved and source.meta.get("saved_for_backward", False)
                source.meta["saved_for_backward"] = saved
            node.replace_all_uses_with(source)
            gm.graph.erase_node(node)
        elif node.target == aten.convolution.default and is_conv2d(node):
            x, weight, bias, stride, padding, dilation, _, _, groups = node.args
            node.op, node.target = "call_function", torch.conv2d
            node.args = (x, weight, bias, stride, padding, dilation, groups)
        elif node.target == aten.max_pool2d_with_indices.default and values_only(node):
            # Indices nobody reads (inference; a training graph's backward reads them):
            # `F.max_pool2d`, a reduction our kernels fuse, as inference graphs have it.
            for user in list(node.users):
                user.replace_all_uses_with(node)
                gm.graph.erase_node(user)
            node.target, node.meta["val"] = F.max_pool2d, node.meta["val"][0]
        elif node.target == aten.slice.Tensor:  # a view: basic indexing (views.getitem)
            x, *given = node.args  # (the defaults where fewer are given)
            named = dict(zip(SLICE, given, strict=False))
            dim, start, end, step = {**SLICE, **named, **node.kwargs}.values()
            index = (slice(None),) * (dim % x.meta["val"].dim()) + (slice(start, end, step),)
            node.target, node.args, node.kwargs = operator.getitem, (x, index), {}
        elif node.target == aten.embedding.default:  # (weight, ids, ...): a gather kernel
            weight, ids = node.args[:2]  # the rest are the backward's business
            node.target, node.args, node.kwargs = F.embedding, (ids, weight), {}
        elif node.target == aten._to_copy.default and is_cast(node):
            node.op, node.target = "call_method", "to"
            node.kwargs = {"dtype": node.kwargs["dtype"], "copy": True}
        elif node.target in AS_TORCH and "implicit" not in node.kwargs:
            node.op, node.target = AS_TORCH[node.target]
    gm.recompile()
    return gm


def is_conv2d(node: torch.fx.Node) -> bool:
    """Whether an `aten.convolution` is a `torch.conv2d`: of images, not transposed. As a
    conv2d it runs channels-last between the kernels (performance/channels_last.py), as in
    inference."""
    x, weight, _, _, _, _, transposed, output_padding, _ = node.args
    dims = [getattr(t.meta.get("val"), "ndim", None) for t in (x, weight)]
    return dims == [4, 4] and not transposed and not any(output_padding)


def values_only(node: torch.fx.Node) -> bool:
    """Whether only the first of a node's results is read (`getitem(node, 0)`)."""
    return all(u.target is operator.getitem and u.args[1] == 0 for u in node.users)


def is_cast(node: torch.fx.Node) -> bool:
    """Whether an `aten._to_copy` only changes the dtype (autocast's casts, `x.float()`):
    `x.to(dtype, copy=True)`, which fuses into the kernels around it. One that moves the
    tensor to another device or layout stays an extern call."""
    kwargs, value = dict(node.kwargs), node.args[0].meta.get("val")
    device = kwargs.pop("device", None)
    if "dtype" not in kwargs or value is None or (device is not None and device != value.device):
        return False
    plain = {"layout": torch.strided, "pin_memory": False, "non_blocking": False}
    plain["memory_format"] = torch.preserve_format
    return all(v is None or plain.get(k) == v for k, v in kwargs.items() if k != "dtype")
