"""Matching eager where a caller can see more than values: strides, shared memory, writes.

meta_run.py runs the graph on meta tensors for eager's answers; functionalize.py computes
in-place ops out of place and writes inputs back; layouts.py lands outputs with eager's
strides and memory where the program reads it.
"""
