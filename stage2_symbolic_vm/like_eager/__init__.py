"""Matching eager beyond shapes and dtypes: what a meta tensor does not say by itself.

devices.py          the device of each result (meta tensors forget devices), `x.type()`
in_place.py         the arguments an op changes in place, and the ops a backend must
                    run in program order even when nothing reads their result
no_meta_kernel.py   ops that torch gives no meta function, run once on zeros
meta_errors.py      an op's error on meta tensors: the code's, or a read of data they lack
scalar_ops.py       a torch op given numbers only (`torch.div(n, 2)`): a new tensor
aliasing.py         outside objects kept apart, and an object held with its `__dict__`
"""
