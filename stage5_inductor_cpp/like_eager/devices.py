"""The kernels' device: they read memory there only. A tensor elsewhere (which eager may
reject, mixing devices), or a call that moves a tensor off it (`x.cuda()` in a graph of CPU
tensors), runs the graph in torch, whose answer is eager's."""

import functools

import torch

from ..lowering import EagerOnly
from .meta_run import tensors_in


def kernel_device(gm, example_inputs) -> torch.device:
    """The device the kernels run on: the inputs' tensors', or, for a graph whose tensors are
    all made inside it, the device of its first tensor constant or the first device a call
    names (`torch.arange(n, device="cuda")`)."""
    tensors = [a for a in example_inputs if isinstance(a, torch.Tensor)]
    if tensors:
        return tensors[0].device
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            value = functools.reduce(getattr, node.target.split("."), gm)
            if isinstance(value, torch.Tensor):
                return value.device
        if node.op in ("call_function", "call_method"):
            named = named_device(node.target if node.op == "call_method" else "", [], node.kwargs)
            if named is not None:  # `cuda` alone is the current one, as a factory makes it
                return torch.empty(0, device=named).device
    return torch.device("cpu")


def named_device(name: str, args, kwargs) -> torch.device | None:
    """The device a call says it puts its result on (`x.cuda()`, `x.to("cpu")`, `device=`)."""
    if name in ("cpu", "cuda"):
        return torch.device(name)
    named = [kwargs.get("device")]
    if name == "to":
        named += [a for a in args if isinstance(a, (str, torch.device))]
    return next((torch.device(d) for d in named if d is not None), None)


def check_stays(graph, node, args, kwargs):
    """Raise `EagerOnly` where a call puts its result off the kernels' device."""
    device = named_device(graph.current_target, args, kwargs)
    if device is not None and not (
        device.type == graph.device.type and device.index in (None, graph.device.index)
    ):
        raise EagerOnly(f"{node.name} moves a tensor to {device}, off the kernels' device")


def check_device(graph, value, what: str):
    """Kernels read memory on their own device only: a tensor elsewhere (which eager may
    reject, mixing devices) makes the graph run in torch."""
    for tensor in tensors_in(value):
        if tensor.device != graph.device:
            raise EagerOnly(f"{what} is on {tensor.device}, the kernels run on {graph.device}")
