"""Autocast: torch picks each op's dtype as it runs (a bfloat16 matmul, a float32 sum);
kernels compiled for float32 would read its results as float32. A call made under
autocast runs the graph in torch (`CompiledGraph.eager_reason`, in_torch.py)."""

import torch

AUTOCAST_DEVICES = ("cpu", "cuda")


def autocast_reason(args) -> str | None:
    """Why a call under autocast runs in torch, or None when autocast is off."""
    if not any(map(torch.is_autocast_enabled, AUTOCAST_DEVICES)):
        return None  # the usual case: no pass over the tensors' devices
    for device in sorted({a.device.type for a in args if isinstance(a, torch.Tensor)} or {"cpu"}):
        if torch.is_autocast_enabled(device):
            return f"autocast is on for {device}: torch picks each op's dtype as it runs"
    return None
