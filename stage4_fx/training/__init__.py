"""Training: a graph's forward and backward compiled as two graphs (AOTAutograd's design).

`aot.py` traces one function that runs the graph and its gradients to ATen
ops (the joint graph), cuts it into a forward and a backward graph, and runs
both under a `torch.autograd.Function`. The `aot_eager` backend runs the two
graphs as they are; stage 5's inductor compiles them.
"""
