"""PyTorch beyond tensor operations: what a program asks torch, and torch's own Python.

queries.py             questions about the process, answered while tracing
                       (`torch.is_grad_enabled()`, `torch.compiler.is_compiling()`)
grad_modes.py          `with torch.no_grad()`, `@torch.enable_grad()`, inference mode
autocast.py            `torch.autocast` around the call or inside it: on FakeTensors, guarded
disabled.py            a call to a function marked disabled (`torch.compiler.disable`) breaks
torchscript.py         a `torch.jit.script`ed function: its Python original, traced
vmap.py                `torch.vmap`: the function traced per example, batched by torch's vmap
autograd_function.py   a `torch.autograd.Function`'s forward
module_containers.py   nn.ModuleList, nn.Sequential and nn.ModuleDict
module_hooks.py        nn.Module.__call__ with hooks: torch's own `_call_impl`
"""
