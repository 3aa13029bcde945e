"""Training graphs: the forward and backward graphs of stage 4's training/aot.py, compiled.

aten.py makes their ATen ops the torch calls the lowerings know; in_torch.py hands a
training graph that runs in torch its inputs in the strides it was traced with.
"""
