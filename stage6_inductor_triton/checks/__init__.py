"""Checks of the kernels on the CPU: Triton's compiler front end types interpreted kernels
for the GPU first (typecheck.py)."""
