"""Traces written by hand, as the symbolic VM (stage 2) would record them.

They let the guards, the cache and the JIT be tested on their own: each
function below comes with the trace of one call, built from the call's
arguments with `Trace.add_node` / `Trace.assume` exactly as the VM does.
`HANDMADE[fn.__code__](fn, *args)` stands in for `stage2_symbolic_vm.trace`.
"""

import operator

import torch

from stage2_symbolic_vm.errors import Unsupported
from stage2_symbolic_vm.sources import ClosureSource, GlobalSource, ItemSource, LocalSource
from stage2_symbolic_vm.trace import Trace

SCALE = 2.0
WEIGHT = torch.ones(8)


def add(x, y):
    return x + y


def trace_add(fn, x, y):
    trace = Trace(fn.__code__)
    a = trace.add_node("input", None, source=LocalSource("x"), meta=x)
    b = trace.add_node("input", None, source=LocalSource("y"), meta=y)
    trace.output = trace.add_node("call_function", operator.add, (a, b), lineno=2)
    trace.assume("tensor", LocalSource("x"))
    trace.assume("tensor", LocalSource("y"))
    trace.assume("grad_mode")
    return trace


def scale(x, n, unused):
    """`n` is used by value (baked into the trace); `unused` is never read."""
    return x * n + SCALE


def trace_scale(fn, x, n, unused):
    trace = Trace(fn.__code__)
    a = trace.add_node("input", None, source=LocalSource("x"), meta=x)
    b = trace.add_node("call_function", operator.mul, (a, n), lineno=2)
    trace.output = trace.add_node("call_function", operator.add, (b, SCALE), lineno=2)
    trace.assume("tensor", LocalSource("x"))
    trace.assume("constant", LocalSource("n"))
    trace.assume("constant", GlobalSource("SCALE"))
    trace.assume("grad_mode")
    return trace


def weighted(x):
    """Reads a global tensor: the replay must read it on every call."""
    return torch.sin(x) * WEIGHT


def trace_weighted(fn, x):
    trace = Trace(fn.__code__)
    a = trace.add_node("input", None, source=LocalSource("x"), meta=x)
    w = trace.add_node("input", None, source=GlobalSource("WEIGHT"), meta=WEIGHT)
    s = trace.add_node("call_function", torch.sin, (a,), lineno=2)
    trace.output = trace.add_node("call_function", operator.mul, (s, w), lineno=2)
    trace.assume("id", GlobalSource("torch"))
    trace.assume("tensor", LocalSource("x"))
    trace.assume("tensor", GlobalSource("WEIGHT"))
    trace.assume("grad_mode")
    return trace


def total(xs):
    """A loop unrolled over a list: guarded by its length and each item."""
    result = xs[0]
    for x in xs[1:]:
        result = result + x
    return result


def trace_total(fn, xs):
    trace = Trace(fn.__code__)
    trace.assume("type", LocalSource("xs"))
    trace.assume("length", LocalSource("xs"))
    items = []
    for i, x in enumerate(xs):
        source = ItemSource(LocalSource("xs"), i)
        items.append(trace.add_node("input", None, source=source, meta=x))
        trace.assume("tensor", source)
    result = items[0]
    for item in items[1:]:
        result = trace.add_node("call_function", operator.add, (result, item), lineno=5)
    trace.output = result
    trace.assume("grad_mode")
    return trace


def make_shift(k):
    def shift(x):
        return x + k

    return shift


def trace_shift(fn, x):
    trace = Trace(fn.__code__)
    a = trace.add_node("input", None, source=LocalSource("x"), meta=x)
    k = trace.add_node("input", None, source=ClosureSource("k", 0), meta=fn.__closure__[0])
    trace.output = trace.add_node("call_function", operator.add, (a, k), lineno=2)
    trace.assume("tensor", LocalSource("x"))
    trace.assume("tensor", ClosureSource("k", 0))
    trace.assume("grad_mode")
    return trace


HANDMADE = {
    add.__code__: trace_add,
    scale.__code__: trace_scale,
    weighted.__code__: trace_weighted,
    total.__code__: trace_total,
    make_shift(0).__code__: trace_shift,
}


def handmade_trace(fn, *args, **kwargs):
    """A stand-in for `stage2_symbolic_vm.trace` that knows the functions above."""
    if fn.__code__ not in HANDMADE:
        raise Unsupported("untraceable_call", f"no handmade trace for {fn.__name__}")
    return HANDMADE[fn.__code__](fn, *args, **kwargs)
