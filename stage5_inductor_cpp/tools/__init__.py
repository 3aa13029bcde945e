"""Tools for the book: the kernels before and after fusion, drawn (diagrams.py)."""
