"""A graph break never loses a change to a container: every mutating method, every owner.

The class of bug: `acc.append(g(x))` where `g` breaks the graph. At the break the
stack holds the bound method `acc.append` and the locals hold `acc`; the resume
function gets both, and once it is compiled in turn, the two paths must reach one
list. When the VM gave each path a Variable of its own, the append went to one and
the later changes to the other, and one of them was lost. The same holds for a
dict's `update`, a set's `add`, an object's attribute, on containers the frame
built, that the caller passed, that a global or an attribute holds.

The property test generates such programs (mutations whose arguments break the
graph, by a call that breaks inside or by `.item()` at the frame's own level) and
runs them against eager, on the caller's containers and the globals too.
"""

import collections
import contextlib
import io
import linecache

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import stage3_guards
import stage4_fx
from stage3_guards import counters
from stage4_fx.breaks import GraphBreakError
from tests.oracle import assert_equal_values, assert_same_as_eager


def brk(t):
    """A graph break inside a call: the VM stops at the caller's CALL, arguments on its stack."""
    print("", end="")
    return t * 2


def brk_key(t):
    print("", end="")
    return "k"


def brk_int(t):
    print("", end="")
    return 7


class Box:
    """An object whose attributes hold containers: the owner kind 'attribute'."""

    def __init__(self, x):
        self.items, self.table, self.tags, self.value = [x], {"a": x}, {1}, x

    def __eq__(self, other):  # how the oracle compares the caller's objects after a run
        try:
            assert_equal_values(state(vars(self)), state(vars(other)))
        except AssertionError:
            return False
        return True


def state(value):
    """What the caller sees: tensors, containers and a Box's attributes, recursively."""
    if isinstance(value, Box):
        return ("Box", state(vars(value)))
    if isinstance(value, (list, tuple)):
        return type(value)(state(v) for v in value)
    if isinstance(value, dict):
        return (type(value).__name__, {k: state(v) for k, v in value.items()})
    if isinstance(value, set):
        return sorted(value)
    return value


G_LIST, G_DICT, G_SET = [], {}, set()


def reset_globals(namespace):
    namespace["G_LIST"][:] = []
    namespace["G_DICT"].clear()
    namespace["G_SET"].clear()


# --- programs that change what they hold across a break, on every backend -------------------


def append_built(x):
    acc = []
    acc.append(brk(x))
    acc.append(x + 1)
    return torch.cat(acc)


def append_argument(x, acc):
    acc.append(brk(x))
    acc.append(x + 1)
    return torch.cat(acc)


def append_global(x):
    G_LIST.append(brk(x))
    G_LIST.append(x + 1)
    return torch.cat(G_LIST)


def append_attribute(x, box):
    box.items.append(brk(x))
    box.items.append(x + 1)
    return torch.cat(box.items)


def update_dict(x, table):
    table.update({"b": brk(x)})
    table.setdefault("c", x * x.sum().item())
    table["d"] = x + 1
    return sum(table.values())


def add_to_set(x, tags):
    tags.add(brk_int(x))
    tags.add(int(x.sum().item() > 0))
    return x + len(tags)


def store_attribute(x, box):
    box.value = brk(x)
    box.items = [box.value, x + 1]
    return torch.cat(box.items)


CASES = [
    (append_built, lambda x: (x,)),
    (append_argument, lambda x: (x, [])),
    (append_argument, lambda x: (x, [x])),
    (append_global, lambda x: (x,)),
    (append_attribute, lambda x: (x, Box(x))),
    (update_dict, lambda x: (x, {"a": x})),
    (add_to_set, lambda x: (x, {1})),
    (store_attribute, lambda x: (x, Box(x))),
]


def inductor(gm, example_inputs):
    import stage5_inductor_cpp

    return stage5_inductor_cpp.compile_fx(gm, example_inputs)


@pytest.mark.parametrize(
    "backend", ["eager", "aot_eager", inductor], ids=["eager", "aot_eager", "inductor"]
)
@pytest.mark.parametrize(("fn", "make_args"), CASES, ids=[c[0].__name__ for c in CASES])
def test_a_break_in_the_argument_of_a_mutation_loses_nothing(fn, make_args, backend):
    x = torch.randn(2, 3)
    compiled = stage4_fx.compile(fn, backend=backend)

    def runner(f):
        def run(*args):
            G_LIST.clear()
            return state((f(*args), args, G_LIST))

        return run

    with contextlib.redirect_stdout(io.StringIO()):
        for _ in range(2):
            assert_same_as_eager(runner(compiled), runner(fn), *make_args(x))


# --- the sharing the trace relied on is guarded -----------------------------------------------


def fill(x, acc, other):
    acc.append(brk(x))
    other.append(x + 1)
    return len(acc), len(other)


def test_one_list_passed_twice_is_not_two_lists():
    """The resume function's trace saw two lists; called with one list twice, it recompiles
    (a DISTINCT guard), and the other way round (an ALIAS guard)."""
    compiled = stage4_fx.compile(fill)
    x = torch.randn(2)
    with contextlib.redirect_stdout(io.StringIO()):
        for make in (lambda: ([], []), lambda: ([],) * 2, lambda: ([], []), lambda: ([],) * 2):
            ours, theirs = make(), make()
            assert compiled(x, *ours) == fill(x, *theirs)
            assert [len(a) for a in ours] == [len(a) for a in theirs]


def test_is_between_objects_from_outside_is_answered_and_guarded():
    def same(x, a, b):
        return x * 2 if a is b else x + 1

    compiled = stage4_fx.compile(same)
    x = torch.randn(3)
    for a, b in ((Box(x), Box(x)), (x, x), ([], [])):
        for args in ((a, b), (a, a), (b, a)):
            torch.testing.assert_close(compiled(x, *args), same(x, *args))
    report = stage4_fx.explain(same)(x, [], [])
    assert report.graph_break_count == 0


def test_a_tensor_reached_by_two_paths_is_one_input():
    """`x.add_(1)` seen through `box.value`: one placeholder, not two that drift apart."""

    def bump(x, box):
        x.add_(1)
        return box.value * 2

    box = Box(torch.zeros(3))
    compiled = stage4_fx.compile(bump, backend="aot_eager")
    ours, theirs = Box(torch.zeros(3)), Box(torch.zeros(3))
    torch.testing.assert_close(compiled(ours.value, ours), bump(theirs.value, theirs))
    torch.testing.assert_close(ours.value, theirs.value)
    other = torch.zeros(3)
    torch.testing.assert_close(compiled(other, box), bump(other.clone(), Box(torch.zeros(3))))


@pytest.mark.parametrize(
    "backend", ["eager", "aot_eager", inductor], ids=["eager", "aot", "inductor"]
)
def test_a_tensor_changed_in_place_is_not_another_input(backend):
    """Traced with two tensors, called with one twice: the functional graph would read the
    second input before the first was changed. A DISTINCT guard recompiles instead."""

    def bump(a, b):
        a.add_(1)
        return b * 2

    compiled = stage4_fx.compile(bump, backend=backend)
    compiled(torch.zeros(3), torch.zeros(3))
    ours, theirs = torch.zeros(3), torch.zeros(3)
    torch.testing.assert_close(compiled(ours, ours), bump(theirs, theirs))
    torch.testing.assert_close(ours, theirs)


# --- fullgraph=True never runs a frame eagerly --------------------------------------------------


def test_fullgraph_raises_where_the_code_raises():
    def raises(x):
        if x.dim() == 1:
            raise ValueError("one dim")
        return x

    compiled = stage4_fx.compile(raises, fullgraph=True)
    eager = counters.eager
    with pytest.raises(GraphBreakError, match="raises an exception it does not catch"):
        compiled(torch.ones(2))
    assert counters.eager == eager


def test_fullgraph_raises_on_an_internal_error(monkeypatch):
    """A bug of ours under fullgraph: a CompileError naming the frame, even outside strict."""
    from stage2_symbolic_vm.vm import InstructionTranslator

    def broken(self, inst):
        raise RuntimeError("a bug planted by the test")

    def plain(x):
        return x + 1

    monkeypatch.setattr(stage3_guards.config, "strict", False)
    monkeypatch.setattr(InstructionTranslator, "BINARY_OP", broken)
    with pytest.raises(GraphBreakError, match="minidynamo failed") as raised:
        stage4_fx.compile(plain, fullgraph=True)(torch.ones(2))
    assert "a bug planted by the test" in str(raised.value)


def test_fullgraph_raises_at_the_recompile_limit(monkeypatch):
    monkeypatch.setattr(stage3_guards.config, "recompile_limit", 2)

    def scale(x, k):
        return x * k

    compiled = stage4_fx.compile(scale, fullgraph=True, dynamic=False)
    compiled(torch.ones(2), 1.5)
    compiled(torch.ones(2), 2.5)
    with pytest.raises(stage3_guards.CompileError, match="recompile limit"):
        compiled(torch.ones(2), 3.5)


def test_an_exception_the_vm_predicts_wrongly_is_a_divergence(monkeypatch):
    """Outside fullgraph the frame runs eagerly where the VM says it raises; if eager does not
    raise, the VM was wrong: strict mode raises, otherwise a warning, and it is counted."""
    from stage2_symbolic_vm.errors import ObservedException
    from stage2_symbolic_vm.python import builtins_table

    def wrong_len(tx, value):
        raise ObservedException(TypeError("a wrong model of len()"))

    def measure(x, xs):
        return x + len(xs)

    monkeypatch.setitem(builtins_table.HANDLERS, len, wrong_len)
    with pytest.raises(stage3_guards.DivergenceError, match="but eager returns"):
        stage4_fx.compile(measure)(torch.ones(2), [1, 2])
    monkeypatch.setattr(stage3_guards.config, "strict", False)
    before = counters.diverged
    with pytest.warns(stage3_guards.CompilerWarning, match="bug of minidynamo"):
        result = stage4_fx.compile(measure)(torch.ones(2), [1, 2])
    torch.testing.assert_close(result, torch.full((2,), 3.0))
    assert counters.diverged == before + 1


# --- the property: random programs of mutations whose arguments break the graph ------------

# Half of the values break the graph: a change with a break in its argument, then one
# without a break through the same container in the same resume function, is the lost case.
VALUES = ["x + {c}", "x * {c}", "brk(x)", "x * x.sum().item()"]
KEYS = ["'a'", "'b'", "brk_key(x)", "str(int(x.sum().item() > 0))"]
INTS = ["1", "2", "brk_int(x)", "int(x.sum().item() > 0)"]
OWNERS = {
    "list": ["acc", "arg_list", "G_LIST", "box.items"],
    "dict": ["table", "arg_dict", "G_DICT", "box.table"],
    "defaultdict": ["groups", "arg_groups"],
    "set": ["seen", "arg_set", "G_SET", "box.tags"],
    "object": ["box"],
}
# Every mutating method and operator of each container the VM models (a `+=` on an attribute
# or a global stores the same object back: STORE_ATTR, STORE_GLOBAL).
MUTATIONS = {
    "list": [
        "{o}.append({v})",
        "{o}.extend([{v}, x])",
        "{o}.insert(0, {v})",
        "{o} += [{v}]",
        "{o} *= 1",
        "{o}[:0] = [{v}]",
        "if {o}:\n    {o}[-1] = {v}",
        "if {o}:\n    {o}.pop()",
        "if {o}:\n    {o}.pop(0)",
        "if {o}:\n    del {o}[0]",
        "if {o}:\n    {o}.remove({o}[-1])",
        "del {o}[1:]",
        "{o}.reverse()",
        "{o}.clear()",
    ],
    "dict": [
        "{o}[{k}] = {v}",
        "{o}.update({{{k}: {v}}})",
        "{o}.update(z={v})",
        "{o} |= {{{k}: {v}}}",
        "{o}.setdefault({k}, {v})",
        "{o}.pop({k}, None)",
        "if {k} in {o}:\n    del {o}[{k}]",
        "if {o}:\n    {o}.popitem()",
        "{o}.clear()",
    ],
    "defaultdict": ["{o}[{k}].append({v})", "{o}[{k}] = [{v}]", "{o}.pop({k}, None)"],
    "set": [
        "{o}.add({i})",
        "{o}.update([{i}, 3])",
        "{o} |= {{{i}}}",
        "{o} -= {{{i}}}",
        "{o} &= {{1, 2, 7}}",
        "{o} ^= {{{i}}}",
        "{o}.discard({i})",
        "if {i} in {o}:\n    {o}.remove({i})",
        "{o}.difference_update([{i}])",
        "{o}.intersection_update([1, 3, 7])",
        "{o}.symmetric_difference_update([{i}])",
        "{o}.clear()",
    ],
    "object": [
        "{o}.value = {v}",
        "setattr({o}, 'value', {v})",
        "{o}.items = [{v}]",
        "{o}.__dict__.update(value={v})",
        "if hasattr({o}, 'value'):\n    del {o}.value",
    ],
}
READS = ["x = x + len({o})"]


@st.composite
def mutation_programs(draw):
    lines = ["global G_LIST, G_DICT, G_SET", "acc, table, seen = [], {}, set()"]
    lines.append("groups = collections.defaultdict(list)")
    # One or two containers per program, so that the changes after a break meet the ones
    # before it (the lost change needs both).
    kinds = draw(st.lists(st.sampled_from(sorted(MUTATIONS)), min_size=1, max_size=2, unique=True))
    owners = {kind: draw(st.sampled_from(OWNERS[kind])) for kind in kinds}
    for _ in range(draw(st.integers(2, 7))):
        kind = draw(st.sampled_from(kinds))
        owner = owners[kind]
        template = draw(st.sampled_from(MUTATIONS[kind] + (READS if kind != "object" else [])))
        c = draw(st.sampled_from([0.5, 2.0]))
        fill = {
            "o": owner,
            "v": draw(st.sampled_from(VALUES)).format(c=c),
            "k": draw(st.sampled_from(KEYS)),
            "i": draw(st.sampled_from(INTS)),
        }
        lines += template.format(**fill).splitlines()
    lines.append("return x, acc, table, sorted(seen), groups")
    body = "".join(f"    {line}\n" for line in lines)
    return f"def program(x, arg_list, arg_dict, arg_groups, arg_set, box):\n{body}"


def define(source: str):
    filename = f"<mutation program {abs(hash(source))}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"torch": torch, "collections": collections}
    namespace |= {"brk": brk, "brk_key": brk_key, "brk_int": brk_int}
    namespace |= {"G_LIST": [], "G_DICT": {}, "G_SET": set()}
    exec(compile(source, filename, "exec"), namespace)
    return namespace["program"], namespace


@given(mutation_programs(), st.integers(0, 5))
def test_random_mutations_with_breaks_match_eager(source, seed):
    program, namespace = define(source)
    compiled = stage4_fx.compile(program)
    x = torch.randn(2, 3, generator=torch.Generator().manual_seed(seed))

    def runner(f):
        def run(*args):
            reset_globals(namespace)
            result = f(*args)
            globals_ = [namespace[name] for name in ("G_LIST", "G_DICT", "G_SET")]
            return state((result, args, globals_))

        return run

    def arguments(x):
        groups = collections.defaultdict(list, {"a": [x * 5]})
        return (x, [x * 3], {"a": x * 3}, groups, {1, 2}, Box(x * 4))

    with contextlib.redirect_stdout(io.StringIO()):
        for sign in (1, 1, -1):  # a cache hit, then the other side of `.item() > 0`
            assert_same_as_eager(
                runner(compiled), runner(program), *arguments(sign * x), captured=lambda: True
            )
