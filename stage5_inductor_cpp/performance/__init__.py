"""Passes that make the kernels fast without changing what they compute.

bias_addmm.py: matrix products as the GEMM library likes them; stash.py: a reduction loop
stores a costly value for a later loop to read back.
"""
