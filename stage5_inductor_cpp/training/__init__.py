"""Training graphs: the forward and backward graphs of stage 4's aot.py, compiled as any graph.

aten.py makes their ATen ops the torch calls the lowerings know; in_torch.py hands a
training graph that runs in torch its inputs in the strides it was traced with.
"""
