"""Ops that torch gives no meta function: run once on real tensors of zeros.

A meta tensor learns a result's metadata from the op's meta function. The few ops
without one (fused kernels torch registers for CPU and CUDA only) are run on zeros of
the same sizes, strides and dtypes, as FakeTensor's fallback does, unless their result's
shape depends on the data: that is a graph break.
"""

import torch
import torch.utils._pytree as pytree

from ..errors import Unsupported
from ..performance import meta_cache
from ..trace import op_name


def static_shape(name: str) -> bool:
    """Whether the aten op of this name has a result shape that does not depend on the data
    (its overloads are not tagged `dynamic_output_shape`, as `nonzero`'s are)."""
    packet = getattr(torch.ops.aten, name, None)
    if not isinstance(packet, torch._ops.OpOverloadPacket):
        return False
    tags = {tag for overload in packet.overloads() for tag in getattr(packet, overload).tags}
    return not tags & {torch.Tag.dynamic_output_shape, torch.Tag.data_dependent_output}


META = torch.device("meta")


def on_zeros(target, meta_args, meta_kwargs, shown, error: NotImplementedError):
    """An op with no meta kernel (`torch._transformer_encoder_layer_fwd` in torch 2.11), run
    on real tensors of zeros to learn its result's metadata, as FakeTensor's fallback does;
    one whose result's shape depends on the data stops the VM (`error` says why)."""
    if not static_shape(op_name(target)):
        first = str(error).splitlines()[0]
        raise Unsupported("dynamic_shape_op", f"{shown}: {first}") from None

    def real(value):
        if isinstance(value, torch.Tensor):
            return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype).zero_()
        return value

    def meta(value):
        if isinstance(value, torch.Tensor):
            return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device=META)
        return value

    args, kwargs = pytree.tree_map(real, (list(meta_args), dict(meta_kwargs)))
    kwargs = {k: ("cpu" if k == "device" else v) for k, v in kwargs.items()}
    return pytree.tree_map(meta, meta_cache.run(target, args, kwargs))
