"""An attention mask broadcast along the keys, copied so that a fused attention kernel takes it.

`F.scaled_dot_product_attention` picks its kernel when called (`torch._fused_sdp_choice`;
in a traced graph, when the ATen trace decomposes it). On the GPU the fused kernels
(cuDNN's, the memory-efficient one) read each row of a mask as contiguous memory, so a
mask whose last dim has stride 0 sends the call to the math path: the B x H x T x T
scores written in float32 by a product, a softmax over them, and a second product.
Hugging Face builds such a mask when it is traced (`torch.compiler.is_compiling()`): BERT
gets a bool mask of strides (0, T, 1, 0), which eager never sees (with no padding it
passes no mask). Torch's inductor keeps the math path there; copying the mask (B x T x T
bools, less than a 1/H of the scores' float32s) lets torch pick a fused kernel.

The CPU's flash attention takes a mask of any strides: there the mask is passed as it is.
"""

import torch
import torch.fx
import torch.nn.functional as F

# The devices whose fused attention kernels need a mask's rows in contiguous memory.
ROWS_IN_MEMORY = {"cuda"}


def scaled_dot_product_attention(query, key, value, attn_mask=None, *args, **kwargs):
    """`F.scaled_dot_product_attention`, with a mask broadcast along the keys copied first
    on the devices of `ROWS_IN_MEMORY`. Traced (the ATen trace of autocast and training)
    the copy is in the graph before torch's choice; lowered, it is an extern call that
    copies at run time.

    Eager's answer for that mask is the math path's, whose softmax (`_safe_softmax`) gives
    a query that may see no key zeros; the fused kernels give such a row some other
    value. So those rows are set to zero after the fused kernel, as the math path has them."""
    if not (
        isinstance(attn_mask, torch.Tensor)
        and query.device.type in ROWS_IN_MEMORY
        and attn_mask.dim() > 0
        and attn_mask.size(-1) > 1
        and attn_mask.stride(-1) == 0
    ):
        return F.scaled_dot_product_attention(query, key, value, attn_mask, *args, **kwargs)
    if attn_mask.dtype == torch.bool:
        sees_nothing = ~attn_mask.any(-1, keepdim=True)
    else:
        sees_nothing = (attn_mask == float("-inf")).all(-1, keepdim=True)
    found = F.scaled_dot_product_attention(
        query, key, value, attn_mask.contiguous(), *args, **kwargs
    )
    return found.masked_fill(sees_nothing, 0)


def fusable_attention_masks(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """`gm` with its attention calls made `scaled_dot_product_attention` above (in place)."""
    calls = [n for n in gm.graph.nodes if n.target is F.scaled_dot_product_attention]
    for node in calls:
        node.target = scaled_dot_product_attention
    if calls:
        gm.recompile()
    return gm
