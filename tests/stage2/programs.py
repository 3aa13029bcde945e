"""A hypothesis strategy of random Python programs over tensors and Python scalars.

Each program is source text for `def f(x, y, n, xs):` with x, y tensors of
shape (3, 4), n a small int and xs a list of two (4,)-tensors. Its body mixes
straight-line tensor and scalar code, unrolled loops (range, lists, zip,
enumerate), branches on Python values, helper calls (nested, with
defaults), closures, lists/dicts, unpacking, comprehensions and in-place ops
on fresh tensors. Every tensor in the program keeps shape (3, 4), so eager
never raises. `branch_line` is set when the program branches on a tensor's
value (the VM must stop there).
"""

from dataclasses import dataclass

import torch
from hypothesis import strategies as st

PRELUDE = """
import torch
import torch.nn.functional as F

def helper(a, k=2):
    return a * k + 1

def helper2(a, b, *, scale=0.5):
    return helper(a, 1) - b * scale

def make_scale(s):
    def scale(z):
        return z * s
    return scale

scale3 = make_scale(3)
"""

TENSOR_EXPRS = [
    "{a} + {b}",
    "{a} * {b} - {a}",
    "torch.sin({a})",
    "{a}.cos() * {k}",
    "torch.relu({a}) + {k}",
    "-{a}",
    "abs({a}) / 2",
    "helper({a}, {k})",
    "helper({a})",
    "helper2({a}, {b})",
    "helper2({a}, {b}, scale={k})",
    "scale3({a})",
    "{a}[0:2].sum() + {a}",
    "torch.where({a} > 0, {a}, {b})",
    "{a}.softmax(-1)",
    "F.relu({a}).T.T",
    "{a}.reshape(4, 3).t()",
    "xs[0] + {a}",
    "{a} @ {b}.T @ {a}",
    "torch.cat([{a}, {b}], dim=0)[:3]",
    "{a}.sum(dim=-1, keepdim=True) * {b}",
    "{a} ** 2 + {a}.shape[0]",
    "torch.stack([{a}, {b}]).mean(0)",
]
SCALAR_EXPRS = [
    "n + 1",
    "{k} * 2",
    "x.shape[0]",
    "x.size(-1) - {k}",
    "len(xs)",
    "max({k}, 1)",
    "x.dim() + {k}",
    "{k} // 2 + n % 3",
    "min(n, {k}, 2)",
]


@dataclass
class Program:
    source: str
    branch_line: int | None  # the line of a branch on a tensor's value, if any

    def function(self):
        namespace = {}
        exec(compile(self.source, "<random program>", "exec"), namespace)
        return namespace["f"]

    @staticmethod
    def arguments(seed: int, n: int):
        generator = torch.Generator().manual_seed(seed)
        x, y = torch.randn(3, 4, generator=generator), torch.randn(3, 4, generator=generator)
        xs = [torch.randn(4, generator=generator) for _ in range(2)]
        return x, y, n, xs


class Builder:
    """Grows a body line by line, keeping track of the variables in scope."""

    def __init__(self, draw):
        self.draw, self.lines = draw, []
        self.tensors, self.scalars, self.counter = ["x", "y"], ["n"], 0

    def fresh(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def pick(self, names):
        return self.draw(st.sampled_from(names))

    def tensor_expr(self):
        template = self.draw(st.sampled_from(TENSOR_EXPRS))
        return template.format(
            a=self.pick(self.tensors), b=self.pick(self.tensors), k=self.pick(self.scalars)
        )

    def scalar_expr(self):
        return self.draw(st.sampled_from(SCALAR_EXPRS)).format(k=self.pick(self.scalars))

    def emit(self, line, indent=1):
        self.lines.append("    " * indent + line)

    def assign_tensor(self, indent=1, expr=None):
        name = self.fresh("t")
        self.emit(f"{name} = {expr or self.tensor_expr()}", indent)
        self.tensors.append(name)

    def statement(self):
        kind = self.draw(st.sampled_from(STATEMENTS))
        getattr(self, kind)()

    def tensor(self):
        self.assign_tensor()

    def scalar(self):
        name = self.fresh("k")
        self.emit(f"{name} = {self.scalar_expr()}")
        self.scalars.append(name)

    def range_loop(self):
        t, bound = self.pick(self.tensors), self.draw(st.sampled_from(["n", "2", "len(xs)"]))
        name = self.fresh("t")
        self.emit(f"{name} = {t}")
        self.emit(f"for i in range({bound}):")
        self.emit(f"{name} = {name} * 0.5 + i", 2)
        self.tensors.append(name)

    def list_loop(self):
        name = self.fresh("t")
        self.emit(f"{name} = {self.pick(self.tensors)}")
        loop = self.draw(
            st.sampled_from(
                ["for v in xs:", "for j, v in enumerate(xs):", "for v, w in zip(xs, xs[::-1]):"]
            )
        )
        self.emit(loop)
        self.emit(f"{name} = {name} + v", 2)
        self.tensors.append(name)

    def constant_branch(self):
        name = self.fresh("t")
        a, b = self.pick(self.tensors), self.pick(self.tensors)
        condition = self.draw(
            st.sampled_from(
                ["n > 1", "x.shape[0] == 3", "len(xs) and n", "not n", "x.dtype == torch.float32"]
            )
        )
        self.emit(f"if {condition}:")
        self.emit(f"{name} = {a} + 1", 2)
        self.emit("else:")
        self.emit(f"{name} = {b} - 1", 2)
        self.tensors.append(name)

    def closure(self):
        a, k = self.pick(self.tensors), self.pick(self.scalars)
        fn, name = self.fresh("inner"), self.fresh("t")
        self.emit(f"def {fn}(z, w={k}):")
        self.emit(f"return z * w + {a}", 2)
        self.emit(f"{name} = {fn}({self.pick(self.tensors)})")
        self.tensors.append(name)

    def containers(self):
        a, b = self.pick(self.tensors), self.pick(self.tensors)
        lst, first, rest, d = (
            self.fresh("lst"),
            self.fresh("t"),
            self.fresh("rest"),
            self.fresh("d"),
        )
        self.emit(f"{lst} = [{a}, {b}]")
        self.emit(f"{lst}.append({a} * 2)")
        self.emit(f"{first}, *{rest} = {lst}")
        self.emit(f"{d} = {{'p': {first}, 'q': {rest}[-1]}}")
        name = self.fresh("t")
        self.emit(f"{name} = {d}['p'] + {d}.get('q') + len({rest})")
        self.tensors += [first, name]

    def comprehension(self):
        a = self.pick(self.tensors)
        name = self.fresh("t")
        form = self.draw(st.sampled_from([
            f"sum([{a} * j for j in range(n + 1)])",
            f"torch.stack([v + {a} for v in [{a}, {a} * 2]]).sum(0)",
            f"sum({{key: {a} + i for i, key in enumerate('ab')}}.values(), {a})",
            f"[w for w in (xs[0], xs[1])][0] + {a}",
        ]))  # fmt: skip
        self.emit(f"{name} = {form}")
        self.tensors.append(name)

    def inplace(self):
        a, b = self.pick(self.tensors), self.pick(self.tensors)
        name = self.fresh("t")
        self.emit(f"{name} = {a}.clone()")
        op = self.draw(
            st.sampled_from([f"{name} += {b}", f"{name}.mul_(2)", f"{name}[0] = {b}[1]"])
        )
        self.emit(op)
        self.tensors.append(name)

    def unpack(self):
        a, b = self.pick(self.tensors), self.pick(self.tensors)
        p, q = self.fresh("t"), self.fresh("t")
        self.emit(f"{p}, ({q}, _) = {b}, ({a}, n)")
        self.tensors += [p, q]


STATEMENTS = ["tensor", "tensor", "scalar", "range_loop", "list_loop", "constant_branch"]
STATEMENTS += ["closure", "containers", "comprehension", "inplace", "unpack"]


@st.composite
def programs(draw, data_dependent_branch=False):
    """A random Program; with `data_dependent_branch`, one that branches on a tensor's value."""
    builder = Builder(draw)
    for _ in range(draw(st.integers(1, 8))):
        builder.statement()
    branch_line = None
    if data_dependent_branch:
        t = builder.pick(builder.tensors)
        condition = draw(
            st.sampled_from([f"{t}.sum() > 0", f"{t}.max() < 100", f"({t} > 0).any()"])
        )
        builder.emit(f"if {condition}:")
        branch_line = len(builder.lines)  # the `if` is body line len(lines); made absolute below
        builder.emit(f"{t} = {t} + 1", 2)
    out = [builder.pick(builder.tensors[2:] or builder.tensors)]
    out += draw(st.lists(st.sampled_from(builder.tensors + builder.scalars), max_size=2))
    shape = draw(st.sampled_from(["({},)", "[{}]", "{{'out': ({})}}"]))
    builder.emit("return " + shape.format(", ".join(out)))
    head = PRELUDE + "\ndef f(x, y, n, xs):\n"
    if branch_line is not None:
        branch_line += head.count("\n")
    return Program(head + "\n".join(builder.lines) + "\n", branch_line)
