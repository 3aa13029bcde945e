"""Training graphs: a call that needs autograd runs the forward and backward graphs of
stage 4's training/aot.py, each compiled as any graph.

    autograd.py   the forward and backward graphs, compiled at the first such call
    aten.py       their ATen ops made the torch calls the lowerings know
    in_torch.py   a training graph run in torch gets its inputs in the traced strides
"""
