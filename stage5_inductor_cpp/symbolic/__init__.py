"""Sizes that are symbols: one kernel for every batch size and image size.

sizes.py     sizes as sympy expressions: comparisons, guards, text for the kernels
computed.py  floor divisions and the like of symbols: sizes the wrapper computes (`ps0`)
code.py      a graph with symbolic sizes compiled once; where the wrapper reads each symbol
"""
