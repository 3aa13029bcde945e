"""Matching eager where a caller can see more than values.

meta_run.py        the graph on meta tensors: eager's verdict, strides, who writes where
functionalize.py   each in-place op's out-of-place form, and whose memory it writes
in_place.py        the node loop's and the scheduler's side of it: stores, write-backs
layouts.py         outputs with eager's strides; memory a program reads, as eager's
externs.py         a call into torch: its result's layout and sharing of memory, from a meta run
dtypes.py          a result's dtype, by torch's own promotion on one-element stand-ins
arg_reductions.py  argmax and argmin in C++: the first extreme wins, and the first NaN
devices.py         the kernels' device: a tensor elsewhere runs the graph in torch
autocast.py        a call under autocast runs the graphs of its ATen trace, which hold the casts
in_torch.py        a call the kernels cannot run runs the graph in torch, and says why
prelude.h          the C++ helpers that give torch's answers where C++'s differ
"""
