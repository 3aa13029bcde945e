"""Chapter 5 in miniature: relu(sin(x) * 2) as three loops, then as one fused loop."""

import math


class Buffer(list):  # memory: it counts every element loaded from it and stored into it
    loads = stores = 0

    def __getitem__(self, i):
        Buffer.loads += 1
        return super().__getitem__(i)

    def __setitem__(self, i, value):
        Buffer.stores += 1
        super().__setitem__(i, value)


def kernel(op, x):  # eager: one loop per op, and a buffer for each intermediate result
    out = Buffer([0.0] * len(x))
    for i in range(len(x)):
        out[i] = op(x[i])
    return out


def fused_kernel(x):  # one loop; the intermediate values live in local variables (registers)
    out = Buffer([0.0] * len(x))
    for i in range(len(x)):
        tmp0 = math.sin(x[i])  # one load
        tmp1 = tmp0 * 2
        out[i] = max(tmp1, 0.0)  # one store
    return out


x = Buffer(0.5 * i - 2 for i in range(1000))
relu, double = (lambda v: max(v, 0.0)), (lambda v: v * 2)
for name, run in [("unfused", lambda: kernel(relu, kernel(double, kernel(math.sin, x)))),
                  ("fused", lambda: fused_kernel(x))]:  # fmt: skip
    Buffer.loads = Buffer.stores = 0
    result = list.copy(run())  # list.copy: reading the result here is not counted
    print(f"{name:8} {Buffer.loads} loads, {Buffer.stores} stores, sum {sum(result):.6f}")
