"""Sizes that are symbols: one kernel for every batch size and image size.

sizes.py        sizes as sympy expressions: comparisons, guards, text for the kernels
computed.py     floor divisions and the like of symbols: sizes the wrapper computes (`ps0`)
float_sizes.py  sizes computed in floats (`int(1.5*float(s0))`): which ones Python repeats
code.py         a graph with symbolic sizes compiled once; where the wrapper reads each symbol
"""
