"""Lowering a whole FX graph, node by node (inductor's graph.py).

Each call node goes through `LOWERINGS`, or becomes an `ExternKernel` that calls
torch. The result's dtype comes from torch itself, by running the op on
one-element stand-ins of the inputs; shapes come from the lowerings. An extern's
layout comes from running it on meta tensors, which also raises exactly the error
eager would raise for a bad graph.
"""

import copy
import dataclasses
import operator
import warnings

import torch
import torch.fx
import torch.utils._pytree as pytree

from stage1_eval_frame.logs import get_logger

from . import decompositions, views  # noqa: F401  (they register lowerings)
from .ir import (
    BufferView,
    ComputedBuffer,
    ExternKernel,
    InputBuffer,
    Layout,
    Pointwise,
    Reduction,
    contiguous_strides,
)
from .lowering import LOWERINGS, SAME_DTYPE, SUPPORTED_DTYPES, Fallback, is_tensor

log = get_logger("kernels")

# A value used more than once is computed once into a buffer when it is this expensive;
# below it, recomputing in each consumer is cheaper than a round trip through memory.
REUSE_COST = 20
MAX_INLINE_COST = 200

# `mm(a, b) + bias` is one GEMM that adds the bias as it writes (`torch.addmm`).
MATMULS = {operator.matmul, torch.matmul, torch.mm, torch.Tensor.matmul, torch.Tensor.mm}
ADDS = {operator.add, torch.add, "add"}


@dataclasses.dataclass(frozen=True)
class ExternValue:
    """A non-tensor result of an extern call (the tuple of `torch.max(x, 0)`, say)."""

    buffer: ExternKernel
    meta: object  # the result on meta tensors, for the externs that consume it


class EagerOnly(Exception):
    """Run the graph in torch: eager rejects it (and must raise its own error, in order),
    or torch has no meta function for one of its ops."""


def _to_meta(value):
    if isinstance(value, BufferView):
        layout = value.layout
        return torch.empty_strided(layout.size, layout.stride, dtype=layout.dtype, device="meta")
    if isinstance(value, ExternValue):
        return value.meta
    return value


def _stand_in(value):
    """A one-element tensor with `value`'s dtype and rank: enough for torch to pick the dtype."""
    if is_tensor(value):
        return torch.ones((1,) * len(value.ranges), dtype=value.dtype)
    return value


def _is_ir(value) -> bool:
    return is_tensor(value) or isinstance(value, ExternValue)


def _has_tensor(value) -> bool:
    return any(isinstance(v, torch.Tensor) for v in pytree.tree_leaves(value))


def broadcasts_to(shape, target) -> bool:
    """Whether `shape` broadcasts to `target` without growing it."""
    if len(shape) > len(target):
        return False
    return all(s in (1, t) for s, t in zip(reversed(shape), reversed(target), strict=False))


class GraphLowering:
    """The IR of one graph: `inputs`, `buffers` in program order, and `outputs`."""

    def __init__(self, gm: torch.fx.GraphModule, example_inputs):
        self.gm = gm
        self.example_inputs = example_inputs
        self.inputs: list[InputBuffer | None] = []  # None for a Python-number input
        self.constants: dict[str, torch.Tensor] = {}
        self.buffers: list[ComputedBuffer | ExternKernel] = []
        self.outputs = None
        self.current_target = None  # the name of the op being lowered (`"view"`, `"sum"`)

    def new_name(self) -> str:
        return f"buf{len(self.buffers)}"

    def add_buffer(self, data: Pointwise | Reduction) -> BufferView:
        layout = Layout(data.ranges, contiguous_strides(data.ranges), data.dtype)
        buffer = ComputedBuffer(self.new_name(), layout, data)
        self.buffers.append(buffer)
        return BufferView(buffer, layout)

    def realize(self, value) -> BufferView:
        return value if isinstance(value, BufferView) else self.add_buffer(value)

    def run(self) -> "GraphLowering":
        env = {}
        for node in self.gm.graph.nodes:
            args = torch.fx.node.map_arg(node.args, env.__getitem__)
            kwargs = torch.fx.node.map_arg(node.kwargs, env.__getitem__)
            if node.op == "placeholder":
                env[node] = self.input(self.example_inputs[len(self.inputs)])
            elif node.op == "get_attr":
                env[node] = self.constant(self.gm_attr(node.target))
            elif node.op == "output":
                self.outputs = self.output(args[0])
            else:
                env[node] = self.lower_node(node, args, kwargs)
        return self

    def input(self, value):
        if not isinstance(value, torch.Tensor):
            self.inputs.append(None)  # its value is part of the specialisation key
            return value
        layout = Layout(tuple(value.shape), tuple(value.stride()), value.dtype)
        self.inputs.append(InputBuffer(f"arg{len(self.inputs)}", layout))
        return BufferView(self.inputs[-1], layout)

    def constant(self, value):
        if not isinstance(value, torch.Tensor):
            return value
        name = f"const{len(self.constants)}"
        self.constants[name] = value
        layout = Layout(tuple(value.shape), tuple(value.stride()), value.dtype)
        return BufferView(InputBuffer(name, layout), layout)

    def gm_attr(self, target):
        value = self.gm
        for part in target.split("."):
            value = getattr(value, part)
        return value

    def output(self, value):
        if isinstance(value, Pointwise):
            return self.realize(value)
        if isinstance(value, (list, tuple)):
            items = [self.output(v) for v in value]
            return tuple(items) if isinstance(value, tuple) else items
        if isinstance(value, dict):
            return {k: self.output(v) for k, v in value.items()}
        return value

    def resolve(self, node):
        """The callable behind a call node (a Tensor method for `call_method`)."""
        if node.op == "call_method":
            return getattr(torch.Tensor, node.target)
        if node.op == "call_module":
            return self.gm_attr(node.target)
        return node.target

    def lower_node(self, node, args, kwargs):
        target = self.resolve(node)
        if node.op != "call_module" and not any(map(_is_ir, pytree.tree_leaves((args, kwargs)))):
            result = target(*args, **kwargs)  # shape arithmetic (`x.size(0) * 2`): known now
            if not _has_tensor(result):
                return result
        if (addmm := self.bias_add(node, args, kwargs)) is not None:
            return addmm
        lowering = LOWERINGS.get(node.target) if node.op != "call_module" else None
        self.current_target = (
            node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
        )
        try:
            if lowering is None:
                raise Fallback("no lowering")
            out = self.result_dtype(lowering, target, args, kwargs)
            value = lowering(self, out, *args, **kwargs)
            if is_tensor(value) and value.dtype != out.dtype:
                raise Fallback(f"lowering gave {value.dtype}, torch gives {out.dtype}")
            return self.maybe_realize(node, value)
        # An error here is eager's error (a bad shape) or a case the lowering does not
        # handle: the extern decides (its meta run fails on a graph that eager rejects).
        except (Fallback, TypeError, RuntimeError, IndexError, ValueError) as error:
            log.info(
                "extern %s (%s): %s: %s",
                node.name,
                self.current_target,
                type(error).__name__,
                error,
            )
        return self.extern(node, target, args, kwargs)

    @staticmethod
    def result_dtype(lowering, target, args, kwargs) -> torch.Tensor:
        """The result's dtype by torch's own promotion, from one-element stand-ins of the inputs.

        Inductor runs every node on fake tensors instead; meta kernels cost a 2 s import
        (torch._dynamo) on first use, far more than compiling the kernels.
        """
        leaves = pytree.tree_leaves((args, kwargs))
        if any(isinstance(a, ExternValue) for a in leaves):
            raise Fallback("an argument is the non-tensor result of an extern call")
        tensors = [a for a in leaves if is_tensor(a)]
        if lowering in SAME_DTYPE:
            out = torch.empty((), dtype=tensors[0].dtype)
        else:
            stand_ins = pytree.tree_map(_stand_in, (args, kwargs))
            try:
                with warnings.catch_warnings():  # var of one element warns; eager decides later
                    warnings.simplefilter("ignore")
                    out = target(*stand_ins[0], **stand_ins[1])
            except Exception as error:  # eager fails on these dtypes: let eager say so, in order
                raise EagerOnly(f"torch raises {error!r} for these dtypes") from error
        if not isinstance(out, torch.Tensor):
            raise Fallback("the op does not return a tensor")
        dtypes = [out.dtype] + [t.dtype for t in tensors]
        unsupported = [d for d in dtypes if d not in SUPPORTED_DTYPES]
        if unsupported:
            raise Fallback(f"the kernels do not handle {unsupported[0]}")
        return out

    def maybe_realize(self, node, value):
        if not isinstance(value, Pointwise):
            return value
        if (len(node.users) > 1 and value.cost > REUSE_COST) or value.cost > MAX_INLINE_COST:
            return self.realize(value)
        return value

    def bias_add(self, node, args, kwargs) -> BufferView | None:
        """`a @ b + bias` as one extern `torch.addmm(bias, a, b)`, or None if it is not one.

        Inductor's post-grad pass does the same (torch/_inductor/fx_passes/post_grad.py):
        the GEMM library adds the bias as it writes, which saves a pass over the result.
        Only when the product is used by this add alone, on 2-D float tensors.
        """
        if node.target not in ADDS or kwargs or len(args) != 2:
            return None
        for product, mm, bias in ((node.args[0], *args), (node.args[1], *args[::-1])):
            extern = mm.buffer if isinstance(mm, BufferView) else None
            if not (isinstance(extern, ExternKernel) and extern.target in MATMULS):
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
            bias = self.realize(bias)
            self.buffers.remove(extern)
            addmm = dataclasses.replace(extern, target=torch.addmm, args=(bias, a, b))
            self.buffers.append(addmm)
            return BufferView(addmm, addmm.layout)
        return None

    def extern(self, node, target, args, kwargs):
        """Call torch at run time; a meta run now gives the result's layout (or eager's error)."""

        def realized(value):
            return self.realize(value) if isinstance(value, Pointwise) else value

        args, kwargs = pytree.tree_map(realized, (args, kwargs))
        meta_target = copy.deepcopy(target).to("meta") if node.op == "call_module" else target
        try:
            out = meta_target(*pytree.tree_map(_to_meta, args), **pytree.tree_map(_to_meta, kwargs))
        except Exception as error:  # a bad graph, or no meta function: eager will tell
            raise EagerOnly(f"{node.name}: on meta tensors torch raises {error!r}") from error
        if isinstance(out, torch.Tensor):
            layout = Layout(tuple(out.shape), tuple(out.stride()), out.dtype)
            buffer = ExternKernel(
                self.new_name(), layout, target, tuple(args), dict(kwargs), may_alias=out._is_view()
            )
            self.buffers.append(buffer)
            return BufferView(buffer, layout)
        buffer = ExternKernel(
            self.new_name(), None, target, tuple(args), dict(kwargs), is_tensor=False
        )
        self.buffers.append(buffer)
        return ExternValue(buffer, out)

    def __str__(self) -> str:
        lines = [str(b) for b in self.inputs if b is not None]
        lines += [
            f"{name} = constant {t.dtype}{list(t.shape)}" for name, t in self.constants.items()
        ]
        lines += [str(b) for b in self.buffers]
        lines.append(f"return {pytree.tree_map(str, self.outputs)}")
        return "\n".join(lines)
