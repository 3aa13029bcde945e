"""Chapter 3 in miniature: a guard is one function of the arguments, a cache is a dict."""

import torch

from stage2_symbolic_vm import replay, trace

cache = {}  # code object -> [(guard, trace)], newest first


def f(x):  # the trace sees x.size(0) as a number, takes one branch, and relies on it
    return x * 2 if x.size(0) > 2 else x + 1


def guard_for(recorded, x):
    size = x.size(0)  # what the trace relied on, written by hand: the size alone

    def guard(x):
        return x.size(0) == size

    guard.__doc__ = f"x.size(0) == {size}"
    return guard


def call(fn, x):
    for guard, recorded in cache.get(fn.__code__, []):
        if guard(x):  # a hit: the trace is still right for x, replay it
            print(f"size {x.size(0)}: hit, {guard.__doc__}")
            return replay(recorded, fn, x)
    recorded = trace(fn, x)  # a miss: trace this call (chapter 2), guard it, keep both
    guard = guard_for(recorded, x)
    cache.setdefault(fn.__code__, []).insert(0, (guard, recorded))
    print(f"size {x.size(0)}: miss, traced {len(recorded.nodes)} nodes, guard {guard.__doc__}")
    return replay(recorded, fn, x)


if __name__ == "__main__":
    for n in (3, 3, 1, 3, 1):
        assert torch.equal(call(f, torch.ones(n)), f(torch.ones(n)))
    print(len(cache[f.__code__]), "entries in the cache of f")
