"""Small functions that each reach a few opcodes; test_opcodes.py runs them.

They live outside the test module so that pytest's assertion rewriting
leaves their bytecode (the `assert` in `asserts`) as CPython compiles it.
"""

import torch

X, Y = torch.randn(3, 4), torch.randn(3, 4)


def basics(x, y):
    z = x + y
    del y
    return z


def unary(x, n):
    return -x, +x, ~(x > 0), not n, +n


def comparisons(x, n):
    return x > 0, n == 2, 0 < n < 5, n is None, n is not None, 2 in (1, 2), "a" not in {"b": n}


def jumps(x, n, m=None, q=1):
    k = 0
    while n > 0:
        n -= 1
        x = x + n
    while not k:
        k = 1
    while m is None:
        m = 1
    while q is not None:
        q = None
    y = n and 4
    z = n or 5
    x = x * 2 if n else x / 2
    return x, y, z


def loops(x, xs):
    for i in range(3):
        x = x + i
    for a, *b in [(1, 2, 3)]:
        x = x * a + len(b)
    for v, w in zip(xs, xs, strict=True):
        x = x + v * w
    return x


def containers(x, y, xs):
    d = {"a": x, "b": y}
    e = {**d, "c": 1}
    e["a"] = x * 2
    ys = [*xs, x]
    ys[0:1] = [y]
    t = (*xs, x)
    return ys[1:3], t[::2], e, {k: v for k, v in d.items()}, [v * 2 for v in xs], {"k": x}


def strings(x, n):
    return x * len(f"{n}-{n!r:>3}")


def callee(a, b=1, *rest, c=2, **kw):
    return a * b + c + len(rest) + len(kw)


def calls(x, n):
    args, kw = (x, 2), {"c": 3}

    def local(z, w=n):
        return z * w

    return callee(*args, **kw), callee(x, c=n), local(x), x.sum(dim=0), torch.add(x, 1, alpha=2)


def closures(x):
    total = x

    def bump(k):
        nonlocal total
        total = total + k
        return total

    bump(1)
    bump(2)
    return total


def unbound_then_bound(x, n):
    if n:
        y = x + 1
    return y if n else x


def try_block(x):
    try:
        y = x + 1
    except ValueError:
        y = x
    return y


def catches(x, d):
    try:
        y = d["missing"]
    except KeyError:
        y = 1
    try:
        try:
            raise ValueError("inner")
        except TypeError:
            y = 2
    except ValueError as error:
        y = y + len(error.args)
    finally:
        y = y * 2
    return x * y


class Suppress:
    """A context manager that swallows KeyError."""

    def __enter__(self):
        return 2

    def __exit__(self, kind, value, traceback):
        return kind is KeyError


def withs(x):
    with torch.no_grad():
        y = x * 2
    with Suppress() as k:
        y = y * k
        {}["missing"]
    return y


def returns_none(x):
    x.sum()
    return None


class Base(torch.nn.Module):
    def forward(self, x):
        return x * 2


class Child(Base):
    def forward(self, x):
        return super().forward(x) + 1


def many_locals_source():
    lines = ["def many_locals(x):", "    a0 = x"]
    lines += [f"    a{i} = a{i - 1} + 1" for i in range(1, 300)]
    lines.append("    return a299")
    namespace = {}
    exec("\n".join(lines), namespace)
    return namespace["many_locals"]


def long_branch_source():
    """`if not flag:` over a body long enough that the jump needs EXTENDED_ARG (3.13: between
    TO_BOOL and the jump it comes before)."""
    lines = ["def long_branch(x, flag):", "    if not flag:"]
    lines += [f"        x = x + {i}" for i in range(200)]
    lines.append("    return x")
    namespace = {}
    exec("\n".join(lines), namespace)
    return namespace["long_branch"]


class Holder(torch.nn.Module):
    def forward(self, x):
        self.last = x
        return x


def assigns_global(x):
    global X
    X = x
    return x


def raises(x):
    raise ValueError("no")


def asserts(x, n):
    assert n > 5
    return x


def generator(x):
    yield x


def generators(x):
    def delegating(n):
        yield from range(n)
        return (yield from (v * 2 for v in range(n)))

    return sum(v for v in (x, x * 2)), tuple(v + 1 for v in range(2)), list(delegating(2))


def imports(x):
    import math
    from math import pi

    return x * math.e + pi


def sets(x, n):
    s = {n, 1}
    s.add(3)
    t = {*s, 5}
    return x * len(s | t), {v * 2 for v in s}


def deletes(x):
    d = {"a": 1, "b": 2}
    del d["a"]
    return x + len(d)


class Point:
    def __init__(self, a):
        self.a = a


def objects(x):
    p = Point(x)
    p.b = 2
    del p.b
    return p.a * 2


def classes(x, n):
    """A class statement: LOAD_BUILD_CLASS, and a body that stores and reads its names, an
    annotation, a deletion, and the enclosing function's `n` (LOAD_CLASSDEREF in 3.11,
    LOAD_LOCALS and LOAD_FROM_DICT_OR_DEREF in 3.12)."""

    class Scale:
        k: int = n
        scratch = 1
        del scratch
        double = k * 2

        def apply(self, t):
            return t * self.double

    return Scale().apply(x)


# (function, arguments, None to compare with eager or the Unsupported kind expected)
EXAMPLES = [
    (basics, (X, Y), None),
    (unary, (X, 2), None),
    (comparisons, (X, 2), None),
    (jumps, (X, 2), None),
    (loops, (X, [X[0], Y[0]]), None),
    (containers, (X, Y, [X[0], Y[0]]), None),
    (strings, (X, 7), None),
    (calls, (X, 3), None),
    (closures, (X,), None),
    (unbound_then_bound, (X, 1), None),
    (try_block, (X,), None),
    (catches, (X, {"k": 1}), None),
    (withs, (X,), None),
    (returns_none, (X,), None),
    (Child().forward, (X,), None),
    (many_locals_source(), (X,), None),
    (long_branch_source(), (X, 0), None),
    (Holder().forward, (X,), "unsupported_mutation"),
    (assigns_global, (X,), "unsupported_mutation"),
    (raises, (X,), "eager_error"),
    (asserts, (X, 1), "eager_error"),
    (generator, (X,), "unsupported_value"),
    (generators, (X,), None),
    (imports, (X,), None),
    (sets, (X, 2), None),
    (deletes, (X,), None),
    (objects, (X,), None),
    (classes, (X, 3), None),
]
