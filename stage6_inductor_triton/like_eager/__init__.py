"""Matching eager on the GPU: 0-dim CPU tensors among a GPU's tensors are numbers to eager,
and the kernels read copies of them on the device (cpu_scalars.py)."""
