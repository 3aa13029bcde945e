"""PyTorch beyond tensor operations: what a program asks torch, and torch's own Python.

`queries.py` answers the questions a program asks about the process while it is traced
(`torch.is_grad_enabled()`, `torch.cuda.is_available()`, `torch.compiler.is_compiling()`),
`grad_modes.py` traces `with torch.no_grad()` and inference mode, `autograd_function.py`
a `torch.autograd.Function`'s forward, and `module_containers.py` nn.ModuleList,
nn.Sequential and nn.ModuleDict.
"""
