"""Eager's answer for a graph, without computing it: the FX graph run on meta tensors.

A meta tensor has sizes, strides, a dtype and a storage, but no elements. Run on meta
stand-ins of the inputs (same sizes, same strides), the graph says for almost nothing
what eager will do:
  * the strides of every result: our outputs must have them, and TensorIterator's
    rules (a permuted or channels-last input gives a permuted output) are best asked;
  * which results share memory: a view, `detach`, a `contiguous()` that returned its
    input (`storage_id`);
  * which calls write into a tensor: an in-place op bumps the version counter of the
    tensor it writes, `t_()` changes its strides (`writes`);
  * whether eager rejects the graph: a bad shape raises here as it will there.

Inductor reads the same from FakeTensor propagation (`node.meta["val"]`,
torch/fx/passes/fake_tensor_prop.py). The cost is torch's own: its Python meta
functions import torch._dynamo and sympy on first use (slowly, once per process).
Stage 2's meta_cache.py answers what it has answered before, here as for the VM: a
warm process compiles the graph without them.
"""

import copy
import dataclasses
import functools

import torch
import torch.fx
import torch.utils._pytree as pytree

from stage2_symbolic_vm.performance import meta_cache

from ..lowering import EagerOnly
from ..lowerings.arguments import by_position
from ..performance import attention_masks
from ..symbolic.sizes import as_size, as_sizes


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """A tensor's metadata at one point of the run (a later in-place op may change it)."""

    size: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: torch.dtype
    offset: int = 0  # where it starts in its storage (`as_strided_` may move it)


def snapshot(tensor: torch.Tensor) -> Snapshot:
    return Snapshot(
        as_sizes(tensor.shape), as_sizes(tensor.stride()), tensor.dtype,
        as_size(tensor.storage_offset()),
    )  # fmt: skip


def storage_id(tensor: torch.Tensor) -> int:
    """Equal for two tensors that share memory. Meta tensors have no data pointer to compare;
    their storages are objects of their own (torch's `StorageWeakRef` compares `_cdata` too)."""
    return tensor.untyped_storage()._cdata


def attribute(gm: torch.fx.GraphModule, target: str):
    """What a `get_attr` or `call_module` node names: `layers.0.weight`."""
    value = gm
    for part in target.split("."):
        value = getattr(value, part)
    return value


def tensors_in(value) -> list[torch.Tensor]:
    return [v for v in pytree.tree_leaves(value) if isinstance(v, torch.Tensor)]


def as_meta(value):
    """A meta tensor with `value`'s sizes, strides and dtype; anything else as it is."""
    if isinstance(value, torch.Tensor):
        return torch.empty_strided(
            tuple(value.shape), tuple(value.stride()), dtype=value.dtype, device="meta"
        )
    return value


def _state(tensor: torch.Tensor):
    """What an in-place op changes: the version counter, or the sizes and strides."""
    return tensor._version, tuple(tensor.shape), tuple(tensor.stride())


def _is_meta(value) -> bool:
    return not isinstance(value, torch.Tensor) or value.is_meta


# `x.cuda()` cannot run on a meta tensor; the moved tensor has the same metadata.
DEVICE_MOVES = {"cpu", "cuda"}

# Ops whose meta function disagrees with the device's kernels about the result's strides:
# the CPU's flash attention returns (B, T, H, D) memory for heads that are views of one
# product (nanoGPT's), its meta function (B, H, T, D). Eager's strides are the kernels', so
# one call on zeros at compile time answers, here for eager's layouts (what the caller
# gets), in graph_lowering.py for ours (what our extern call returns).
STRIDES_FROM_A_CALL = (
    torch.nn.functional.scaled_dot_product_attention,
    attention_masks.scaled_dot_product_attention,
)


def on_meta_device(kwargs: dict) -> dict:
    """`kwargs` with its `device=` on meta: a factory (`torch.ones(3, device=x.device)`), a
    training graph's cast (`_to_copy(x, dtype=..., device=cpu)`) make their results there."""
    return {**kwargs, "device": "meta"} if "device" in kwargs else kwargs


# A convolution of a channels-last image or weight answers channels-last, on the CPU (oneDNN)
# as on the GPU (cuDNN); its meta function answers NCHW. FakeTensor asks the device's
# backend (`conv` in torch/_subclasses/fake_impls.py), and so do we, with one call.
CONVOLUTIONS = (torch.conv2d, torch.nn.functional.conv2d)


def channels_last_convolution(target, args, kwargs) -> bool:
    """Whether `target(*args, **kwargs)` is a 2-D convolution of a channels-last image or weight."""
    if target not in CONVOLUTIONS:
        return False
    args, _ = by_position(target, args, kwargs)  # `F.conv2d(input=x, weight=w)`
    if len(args) < 2:
        return False
    return any(
        isinstance(t, torch.Tensor) and t.dim() == 4 and not t.is_contiguous()
        and t.is_contiguous(memory_format=torch.channels_last)
        for t in args[:2]
    )  # fmt: skip


def conv2d_arguments(module: torch.nn.Conv2d) -> tuple:
    """What `nn.Conv2d` passes `torch.conv2d` after its input (`_conv_forward`)."""
    return module.weight, module.bias, module.stride, module.padding, module.dilation, module.groups


def strides_from_a_call(target, device: torch.device, args, kwargs) -> tuple[int, ...]:
    """The strides of `device`'s own result of `target`: one call, on zeros laid out as
    the (meta) tensors among `args` and `kwargs`."""

    def zeros(value):
        if not isinstance(value, torch.Tensor):
            return value
        return torch.empty_strided(
            value.shape, value.stride(), dtype=value.dtype, device=device
        ).zero_()

    args, kwargs = pytree.tree_map(zeros, (args, kwargs))
    return tuple(target(*args, **kwargs).stride())


def device_strides(target, out: torch.Tensor, device, args, kwargs) -> tuple[int, ...]:
    """The strides of `target`'s result on `device`: the meta run's `out`, or, for the calls
    whose meta function disagrees with the device (`STRIDES_FROM_A_CALL`), one call's."""
    if target in STRIDES_FROM_A_CALL:
        return strides_from_a_call(target, device, args, kwargs)
    return tuple(out.stride())


@dataclasses.dataclass
class MetaRun:
    """The graph's nodes on meta tensors: results, metadata, and who writes into what."""

    gm: torch.fx.GraphModule
    values: dict = dataclasses.field(default_factory=dict)  # node -> result (meta tensors)
    snapshots: dict = dataclasses.field(default_factory=dict)  # node -> Snapshot, as it ran
    writes: dict = dataclasses.field(default_factory=dict)  # node -> the nodes it wrote into
    module_writes: list = dataclasses.field(default_factory=list)  # call_module nodes that did
    modules: dict = dataclasses.field(default_factory=dict)  # module -> its copy on meta
    device: torch.device | None = None  # the inputs' (for `STRIDES_FROM_A_CALL`)

    @functools.cached_property
    def input_storages(self) -> dict[int, torch.fx.Node]:
        """The memory of the graph's inputs and module tensors, and whose it is."""
        return {
            storage_id(t): node
            for node in self.gm.graph.nodes
            if node.op in ("placeholder", "get_attr")
            for t in tensors_in(self.values[node])
        }

    @functools.cached_property
    def output_storages(self) -> set[int]:
        """The memory of the tensors the graph returns."""
        output = next(n for n in self.gm.graph.nodes if n.op == "output")
        return {storage_id(t) for n in output.all_input_nodes for t in tensors_in(self.values[n])}

    def module(self, module: torch.nn.Module) -> torch.nn.Module:
        """A copy of `module` on meta tensors, made once."""
        if module not in self.modules:
            self.modules[module] = copy.deepcopy(module).to("meta")
        return self.modules[module]

    def run(self, example_inputs) -> "MetaRun":
        inputs = iter(example_inputs)
        self.device = next((t.device for t in tensors_in(list(example_inputs))), None)
        # No autograd (a meta copy of a parameter requires grad; in-place ops would refuse),
        # and normal tensors even under inference_mode, whose tensors have no version counter.
        # In this order: leaving inference mode turns grad mode back on.
        with torch.inference_mode(False), torch.no_grad():
            for node in self.gm.graph.nodes:
                if node.op == "placeholder":
                    self.values[node] = as_meta(next(inputs))
                elif node.op == "get_attr":
                    self.values[node] = as_meta(attribute(self.gm, node.target))
                elif node.op != "output":
                    self.values[node] = self.call(node)
                self.record(node)
        return self

    def call(self, node: torch.fx.Node):
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), self.values.__getitem__)
        kwargs = on_meta_device(kwargs)
        inputs = [n for n in node.all_input_nodes if isinstance(self.values[n], torch.Tensor)]
        before = {n: _state(self.values[n]) for n in inputs}
        module = self.module(attribute(self.gm, node.target)) if node.op == "call_module" else None
        state_before = [_state(t) for t in module.state_dict().values()] if module else None
        try:
            if node.op == "call_method" and node.target in DEVICE_MOVES:
                result = args[0]
            elif module is not None:
                result = module(*args, **kwargs)
            else:  # a function, or a method by name; answered from stage 2's cache if it can be
                if node.target == "to":
                    args = [a if not isinstance(a, (str, torch.device)) else "meta" for a in args]
                result = meta_cache.call(node.target, args, kwargs)
        except Exception as error:  # eager rejects the graph (or torch has no meta function)
            raise EagerOnly(f"{node.name}: on meta tensors torch raises {error!r}") from error
        self.writes[node] = [n for n in inputs if _state(self.values[n]) != before[n]]
        if module is not None and state_before != [_state(t) for t in module.state_dict().values()]:
            self.module_writes.append(node)
        target = node.target
        if isinstance(module, torch.nn.Conv2d) and module.padding_mode == "zeros":
            target, args, kwargs = torch.conv2d, (*args, *conv2d_arguments(module)), {}
        if isinstance(result, torch.Tensor) and (
            target in STRIDES_FROM_A_CALL or channels_last_convolution(target, args, kwargs)
        ):
            stride = strides_from_a_call(target, self.device, args, kwargs)
            result = torch.empty_strided(result.shape, stride, dtype=result.dtype, device="meta")
        # A factory without `device=` made a real tensor: later ops need it on meta too.
        return pytree.tree_map(lambda v: v if _is_meta(v) else as_meta(v), result)

    def record(self, node: torch.fx.Node):
        value = self.values.get(node)
        written = self.writes.get(node)
        if value is None and written:  # `x[0] = 1` returns None: keep what `x` became
            value = self.values[node.args[0]] if node.args[0] in written else None
        if isinstance(value, torch.Tensor):
            self.snapshots[node] = snapshot(value)


def run_on_meta(gm: torch.fx.GraphModule, example_inputs) -> MetaRun:
    """Run `gm` on meta stand-ins of `example_inputs`; raises `EagerOnly` if torch refuses."""
    return MetaRun(gm).run(example_inputs)
