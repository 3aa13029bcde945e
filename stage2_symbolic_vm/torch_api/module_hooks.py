"""Module hooks: nn.Module.__call__ with forward hooks runs torch's own `_call_impl`.

A module without hooks is called as its `forward` (functions.py), and that there are no
hooks is guarded: one added later recompiles. With forward hooks, torch's `_call_impl`
is inlined as torch/_dynamo inlines it, so the hooks run in torch's order (and their
dicts are guarded); backward hooks act on autograd's graph, which a forward trace does
not build.
"""

import torch

from ..errors import Unsupported

# The hooks nn.Module.__call__ runs around forward (stage 3's module_hooks guard reads these).
MODULE_HOOKS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
GLOBAL_HOOKS = ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks")
GLOBAL_HOOKS += ("_global_backward_pre_hooks",)


def hooks_of(module) -> list[str]:
    """The names of the hook dicts, the module's own or global, that are not empty."""
    present = [h for h in MODULE_HOOKS if getattr(module, h, None)]
    return present + [h for h in GLOBAL_HOOKS if getattr(torch.nn.modules.module, h)]


def call_with_hooks(tx, module, args, kwargs):
    """`module(*args)` for an NNModuleVariable whose module has hooks."""
    present = hooks_of(module.module)
    if backward := [h for h in present if "backward" in h]:
        raise Unsupported(
            "untraceable_call",
            f"{type(module.module).__name__} has backward hooks ({', '.join(backward)}): "
            "they act on autograd's graph, which a forward trace does not build",
        )
    from ..functions import UserFunctionVariable  # functions.py builds on this file

    call_impl = UserFunctionVariable.from_function(tx, torch.nn.Module._call_impl, None)
    return call_impl.call(tx, [module, *args], kwargs)
