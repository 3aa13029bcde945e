"""0-dim CPU tensors among a GPU's tensors: eager takes them as numbers there, and so do
inductor's kernels; ours read them from the device, so they are copied there for each call,
and the caller sees its own tensors (`as_caller_sees`). `TritonCompiledGraph` does this
around stage 5's `CompiledGraph`, whose kernels all run on the CPU.
"""

import torch
import torch.utils._pytree as pytree


def cpu_scalars(args) -> tuple[torch.device | None, tuple[int, ...]]:
    """The one device other than the CPU, and where 0-dim CPU tensors sit among its tensors:
    eager takes them as numbers there, and so do inductor's kernels; ours read them from
    the device, so they are copied there for the call (`on_device`)."""
    others = {a.device for a in args if isinstance(a, torch.Tensor) and a.device.type != "cpu"}
    if len(others) != 1:
        return None, ()
    positions = tuple(
        i
        for i, a in enumerate(args)
        if isinstance(a, torch.Tensor) and a.device.type == "cpu" and a.dim() == 0
    )
    return next(iter(others)), positions


def on_device(args, positions, device) -> list:
    """`args`, with the CPU scalars at `positions` copied to `device`."""
    moved = list(args)
    for i in positions:
        moved[i] = torch.empty((), dtype=args[i].dtype, device=device).copy_(args[i])
    return moved


def as_caller_sees(call, args, positions, device):
    """`call(*args)` run with the CPU scalars at `positions` on `device`, as if run on
    `args`: a scalar the graph writes into is written back into the caller's tensor, and
    an output that shares memory with one is that view of the caller's tensor."""
    moved = on_device(args, positions, device)
    versions = [moved[i]._version for i in positions]
    result = call(*moved)
    for i, version in zip(positions, versions, strict=True):
        if moved[i]._version != version:  # written in place (our wrappers bump it, as eager)
            args[i].copy_(moved[i])
    copies = {moved[i].untyped_storage().data_ptr(): args[i] for i in positions}

    def original(value):
        if isinstance(value, torch.Tensor) and value.untyped_storage().data_ptr() in copies:
            base = copies[value.untyped_storage().data_ptr()]
            return base.as_strided(value.shape, value.stride(), value.storage_offset())
        return value

    return pytree.tree_map(original, result)
