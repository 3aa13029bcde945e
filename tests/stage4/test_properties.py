"""Property: a random program, compiled, behaves exactly like eager — breaks, recompiles and all.

Programs are built from statements that exercise every path of this stage:
plain tensor ops (one graph), data-dependent branches and `.item()` (a cut
with resume functions), untraceable calls, loops (unrolled, or cut inside),
nested user functions that break, closures whose cells change across a
break, modules, containers kept across a break, Python scalars, and
exceptions. Each program is run several times (cache
hits) and on a second shape (a recompile).
"""

import contextlib
import copy
import io
import linecache

import torch
from hypothesis import given
from hypothesis import strategies as st

import stage4_fx
from tests.oracle import assert_same_as_eager

LINEAR = torch.nn.Linear(3, 3)


def opaque(t):
    """Python values made from the data (NumPy's array is traced, its `tolist()` is not)."""
    return torch.tensor(t.detach().numpy().tolist()) * 0.5


def helper_with_break(t):
    t = t * 2
    if t.mean() > 0:
        t = t - 1
    return t + 1


def helper_plain(t, k=2):
    return t * k + 1


STATEMENTS = [
    "x = x + {c}",
    "x = torch.sin(x) * {c}",
    "x = x.relu() - {c}",
    "n = n + {k}\nx = x * n",
    "if x.sum() > {c}:\n    x = x + 1\nelse:\n    x = x - 1",
    "x = x * x.abs().max().item()",
    "print('side effect')\nx = x + 1",
    "x = opaque(x)",
    "for i in range({k}):\n    x = x * 0.5 + i",
    "for i in range({k}):\n    x = x + i\n    if x.mean() > {c}:\n        x = x - {c}",
    "x = helper_with_break(x)",
    "x = helper_plain(x, k={k})",
    "x = LINEAR(x)",
    "xs = [x, x * {c}]\nx = xs[0] + xs[1]",
    "d = {{'a': x, 'n': n}}\nprint(len(d))\nx = d['a'] * d['n']",
    "pair = (x, n)\nx = pair[0] + pair[1]",
    "if n > {k}:\n    x = x * 2",
    "while x.abs().sum() > 100:\n    x = x / 2",
    "if n == {k} + 7:\n    raise ValueError('n')",
    "x = x[:, :2].sum(dim=1, keepdim=True) + x",
    "def scaled(t):\n    return t * n\nprint('closure')\nx = scaled(x)",
    "def bump():\n    nonlocal n\n    n = n + {k}\nbump()\nprint('cell')\nbump()\nx = x + n",
    "f = lambda t, m={k}: t * m + n\nx = f(x)",
    "a, b = [x], [x * {c}]\nd = {{id(a): {k}, id(b): n}}\nx = x + d[id(b)] + (id(a) == id(b))",
    "ys = copy.deepcopy({{'t': [x.detach() * {c}, n], 'k': {k}}})\nx = x + ys['t'][0] + ys['k']",
]
RETURNS = ["x", "x, n", "[x, x * 2]", "{'x': x, 'n': n}", "x.sum()"]


@st.composite
def programs(draw):
    lines = []
    for _ in range(draw(st.integers(1, 5))):
        template = draw(st.sampled_from(STATEMENTS))
        c = draw(st.sampled_from([-1.5, 0.0, 0.5, 2.0]))
        k = draw(st.integers(0, 3))
        lines += template.format(c=c, k=k).splitlines()
    lines.append(f"return {draw(st.sampled_from(RETURNS))}")
    return "def program(x, n):\n" + "".join(f"    {line}\n" for line in lines)


def define(source: str):
    """exec the program with a real file name in linecache, so break reasons show its lines."""
    filename = f"<program {abs(hash(source))}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"torch": torch, "opaque": opaque, "LINEAR": LINEAR, "copy": copy}
    namespace |= {"helper_with_break": helper_with_break, "helper_plain": helper_plain}
    exec(compile(source, filename, "exec"), namespace)
    return namespace["program"]


def raises(program, *args) -> bool:
    try:
        program(*args)
    except ValueError:
        return True
    return False


@given(programs(), st.integers(0, 10), st.sampled_from([(4, 3), (2, 3)]))
def test_random_programs_match_eager(source, n, shape):
    program = define(source)
    compiled = stage4_fx.compile(program)
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(n))
    options = compiled.options

    def captured():  # a program that raises before any op runs eagerly: nothing to see then
        return bool(options.frames or options.breaks) or raises(program, x, n)

    with contextlib.redirect_stdout(io.StringIO()):
        for _ in range(3):
            assert_same_as_eager(compiled, program, x, n, captured=captured)
        assert_same_as_eager(compiled, program, torch.randn(5, 3), n + 1)  # new shape: recompile
        assert_same_as_eager(compiled, program, -x, n)  # other side of each branch


@given(programs())
def test_explain_counts_are_consistent(source):
    program = define(source)
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            report = stage4_fx.explain(program)(torch.randn(4, 3), 1)
        except ValueError:  # the program raised it on purpose
            return
    assert report.graph_count == len(report.graphs) == len(report.ops_per_graph)
    assert report.graph_break_count == len(report.break_reasons)
    for graph_break in report.break_reasons:
        assert graph_break.explanation and graph_break.hint and graph_break.lineno is not None
