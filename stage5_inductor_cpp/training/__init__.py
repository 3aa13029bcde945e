"""Training graphs: the forward and backward ATen graphs of stage 4's aot.py, made the torch
calls the lowerings know (aten.py)."""
