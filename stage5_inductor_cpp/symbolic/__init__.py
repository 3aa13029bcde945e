"""Sizes that are symbols: one kernel for every batch size.

sizes.py   sizes as sympy expressions: comparisons, guards, text for the kernels
code.py    a graph with symbolic sizes compiled once; where the wrapper reads each symbol
"""
