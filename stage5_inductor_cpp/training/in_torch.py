"""A training graph run in torch: its inputs in the strides it was traced with."""

import torch

from ..like_eager.layouts import same_elements


def as_traced(args, traced: list) -> list:
    """`args` in the strides a make_fx graph was traced with (`meta["val"]`: a training graph's
    forward or backward, stage 4's training/aot.py), copied where they differ.

    Such a graph recorded its `view`s for those strides. Our compiled forward hands the
    backward its saved tensors in the layouts our kernels chose (a channels-last image), which
    our compiled backward reads as they are; torch running the graph would raise at the `view`.
    A graph traced from the program (stage 4's frontend) has no `val` and is called as it is:
    it may write into its inputs."""
    return [
        with_traced_strides(a, v)
        if isinstance(a, torch.Tensor) and isinstance(v, torch.Tensor)
        else a
        for a, v in zip(args, traced, strict=False)
    ]


def with_traced_strides(tensor: torch.Tensor, traced: torch.Tensor) -> torch.Tensor:
    if tensor.shape != traced.shape or same_elements(
        tensor.shape, tensor.stride(), traced.stride()
    ):
        return tensor
    copy = torch.empty_strided(
        tensor.shape, traced.stride(), dtype=tensor.dtype, device=tensor.device
    )
    return copy.copy_(tensor)
