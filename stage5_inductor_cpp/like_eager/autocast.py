"""Autocast: a call under autocast, or a graph that enters it, is traced to ATen first.

Autocast picks each op's dtype as it runs (a bfloat16 matmul, a float32 softmax), by
dispatch; kernels do not dispatch, so they need its decisions written down. Stage 4's
training/aot.py traces the graph to ATen under the caller's state, and there each decision
is an op: an `aten._to_copy` cast before the matmul, the softmax on float32 values. Its
forward (and backward) graphs are compiled as any graph, and run with autocast off, since
they hold the casts themselves (training/autograd.py). torch's compile_fx takes its
graphs from AOTAutograd the same way, and AOTAutograd's runtime switches autocast off
around them too. A cast is then a `to_dtype` in a kernel (lowerings/copies.py): a value
eager stores in bfloat16 is rounded to bfloat16 there, also inside a fused kernel.
"""

import torch
from torch.amp.autocast_mode import _enter_autocast


def enters_autocast(gm: torch.fx.GraphModule) -> bool:
    """Whether the graph switches autocast itself (`with torch.autocast(...)` inside the
    compiled code: stage 2's torch_api/autocast.py records `_enter_autocast`)."""
    return any(node.target is _enter_autocast for node in gm.graph.nodes)


def under_autocast() -> bool:
    """Whether the caller runs under autocast, on any device (one C call)."""
    return torch._C._is_any_autocast_enabled()
