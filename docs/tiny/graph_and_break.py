"""Chapter 4 in miniature: a trace becomes an FX graph; a graph break makes two of them."""

import torch.fx


def f(x):
    y = torch.sin(x) * 2
    print("a side effect the graph cannot hold")  # the VM stops here: a graph break
    return y + x


TRACE = [("s", torch.sin, ["x"]), ("y", torch.mul, ["s", 2]), ("r", torch.add, ["y", "x"])]
BREAK = 2  # the print comes before op 2 of f's trace, a (result, function, arguments) each


def graph_of(inputs, ops, outputs):  # an FX graph by hand: placeholders, a node per op
    graph = torch.fx.Graph()
    env = {name: graph.placeholder(name) for name in inputs}
    for result, fn, args in ops:
        env[result] = graph.call_function(fn, tuple(env.get(a, a) for a in args))
    graph.output(tuple(env[name] for name in outputs))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


before = graph_of(["x"], TRACE[:BREAK], ["y"])  # returns what the rest of f needs
after = graph_of(["y", "x"], TRACE[BREAK:], ["r"])  # the resume function's graph
print(before.code.strip(), after.code.strip(), sep="\n")


def resume_f(y, x):  # the rest of f, as a function of its own: it runs the second graph
    return after(y, x)[0]


def compiled_f(x):  # what stage 4's new bytecode does: graph, the one instruction, resume
    (y,) = before(x)
    print("a side effect the graph cannot hold")
    return resume_f(y, x)


torch.testing.assert_close(compiled_f(x := torch.randn(3)), f(x))
