"""The generated functions: the guard function of an entry and the replay of its trace."""

import operator

import torch
from hypothesis import given
from hypothesis import strategies as st

from stage2_symbolic_vm.sources import Assumption, AttrSource, ItemSource, LocalSource
from stage2_symbolic_vm.trace import Trace, replay
from stage3_guards import (
    build_guards,
    compile_guards,
    compile_replay,
    failure_reason,
    guard_function,
)
from stage3_guards.performance import guard_sources

from .handmade import make_shift, total, trace_shift, trace_total


def test_guard_function_source():
    assumptions = [Assumption("tensor", LocalSource("x")), Assumption("grad_mode")]
    guards = build_guards(assumptions, {"x": torch.zeros(4)}, {})
    assert str(compile_guards(guards, "f")) == (
        "def guards_f(L, G, F):\n"
        "    # GRAD_MODE: enabled\n"
        "    if not (torch.is_grad_enabled() is True):\n"
        "        return False\n"
        "    # local 'x' TENSOR_MATCH: float32, cpu, size=(4,), stride=(1,)\n"
        "    L_x = L['x']\n"
        "    if not (\n"
        "        type(L_x) is torch.Tensor\n"
        "        and L_x.dtype is torch.float32\n"
        "        and L_x.device == cpu\n"
        "        and L_x.size() == (4,)\n"
        "        and L_x.stride() == (1,)\n"
        "        and L_x.requires_grad is False\n"
        "    ):\n"
        "        return False\n"
        "    return True\n"
    )


def test_a_guard_functions_source_is_kept_on_disk_for_later_processes(tmp_path, monkeypatch):
    """Writing a guard function parses its checks again (SharedReads): a quarter of a warm
    ResNet training start. A later process with the same guards reads the source from
    the cache and compiles it with its own objects; other checks are another key; a
    damaged file is written again."""
    monkeypatch.setenv("MINIDYNAMO_CACHE_DIR", str(tmp_path))
    model = torch.nn.Sequential(torch.nn.Linear(2, 2))
    fc = ItemSource(AttrSource(LocalSource("m"), "_modules"), "0")
    weight = ItemSource(AttrSource(fc, "_parameters"), "weight")
    assumptions = [Assumption("id", fc), Assumption("tensor", weight)]
    assumptions.append(Assumption("type", LocalSource("n")))
    L = {"m": model, "n": 3}
    written, read = guard_sources.stats["written"], guard_sources.stats["from_disk"]
    first = compile_guards(build_guards(assumptions, L, {}), "f")
    assert guard_sources.stats["written"] == written + 1
    (kept,) = (tmp_path / "guards").iterdir()

    def not_again(*args):
        raise AssertionError("the source was written again")

    with monkeypatch.context() as patched:  # as a later process: the same guards
        patched.setattr(guard_function, "SharedReads", not_again)
        again = compile_guards(build_guards(assumptions, L, {}), "f")
    assert guard_sources.stats["from_disk"] == read + 1 and str(again) == str(first)
    assert again.check(L, {}, None) and not again.check({"m": model, "n": 3.0}, {}, None)
    other = compile_guards(build_guards(assumptions, {"m": model, "n": 3.0}, {}), "f")
    assert other.check({"m": model, "n": 3.0}, {}, None)  # float, not int: another key
    assert guard_sources.stats["written"] == written + 2
    kept.write_text('{"key": ')  # cut short
    assert str(compile_guards(build_guards(assumptions, L, {}), "f")) == str(first)
    assert guard_sources.stats["written"] == written + 3


def test_a_guards_text_in_its_function_holds_no_address():
    """The comment above a guard's checks drops the addresses reprs hold, which differ in
    every process: with them, the kept source of a Hugging Face model's guards (a code
    object's repr) was never found again."""

    class Said:
        def __str__(self):
            return 'CONSTANT_MATCH: <code object wrapper at 0x565087045270, file "f.py">'

    assert guard_function.comment(Said()) == 'CONSTANT_MATCH: <code object wrapper, file "f.py">'


def test_a_value_several_checks_read_is_read_once_and_through_its_base():
    layer = torch.nn.Linear(2, 2)
    model = torch.nn.Sequential(layer)
    fc = ItemSource(AttrSource(LocalSource("m"), "_modules"), "0")
    weight = ItemSource(AttrSource(fc, "_parameters"), "weight")
    assumptions = [Assumption("id", fc), Assumption("tensor", weight)]
    assumptions.append(Assumption("type", LocalSource("n")))
    L = {"m": model, "n": 3}
    source = str(compile_guards(build_guards(assumptions, L, {}), "f"))
    # once the ID_MATCH has passed, the submodule is read by the name of the object it is
    assert "if not (L['m']._modules['0'] is linear):" in source
    assert "    linear_parameters_weight = linear_parameters['weight']\n" in source  # used twice
    assert "linear_parameters_weight.dtype is torch.float32" in source
    assert "if not (type(L['n']) is int):" in source  # read once: not worth a local
    check = compile_guards(build_guards(assumptions, L, {}), "f").check
    assert check(L, {}, None)
    layer.weight = torch.nn.Parameter(torch.zeros(3, 2))  # the pinned module's weight changed
    assert not check(L, {}, None)
    layer.weight = torch.nn.Parameter(torch.zeros(2, 2))
    assert check(L, {}, None)
    model[0] = torch.nn.Linear(2, 2)  # a submodule swapped
    assert not check(L, {}, None)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x).relu()


class OtherBlock(Block):
    def forward(self, x):
        return self.fc(x).sigmoid()


def test_what_a_type_check_pins_is_read_once_for_every_instance_of_the_class():
    import stage3_guards

    blocks = torch.nn.Sequential(*[Block() for _ in range(6)])
    compiled = stage3_guards.jit(lambda x: blocks(x))
    x = torch.randn(2, 4)
    torch.testing.assert_close(compiled(x), blocks(x))
    source = str(compiled.cache.entries[0].guards)
    # After `type(...) is Block` has passed, the forward each block's call read through its
    # instance, `type(G_blocks_modules_3).__dict__['forward']`, is Block's: its code is
    # checked once for the six blocks, as Linear's for the six layers, and Sequential's.
    assert "Block_dict = B.object.__getattribute__(Block, '__dict__')" in source
    assert source.count(".__code__ is code_forward") == 3, source

    blocks[3].__class__ = OtherBlock  # one instance's class changed: its type check fails
    torch.testing.assert_close(compiled(x), blocks(x))
    blocks[3].__class__ = Block
    real = Block.forward
    Block.forward = OtherBlock.forward  # the class's own code changed: every block's
    try:
        torch.testing.assert_close(compiled(x), blocks(x))
    finally:
        Block.forward = real
    torch.testing.assert_close(compiled(x), blocks(x))


def test_a_string_that_spells_a_source_is_not_taken_for_it():
    x = torch.zeros(2)
    L = {"x": x, "name": "L['x']", "other": "L['x'].dtype is torch.float32"}
    assumptions = [Assumption("tensor", LocalSource("x"))]
    assumptions += [Assumption("constant", LocalSource(n)) for n in ("name", "other")]
    guards = build_guards(assumptions, L, {})
    function = compile_guards(guards, "f")
    assert "L_name == \"L['x']\"" in str(function)
    assert function.check(L, {}, None)
    assert not function.check({**L, "name": "L_x"}, {}, None)
    assert not function.check({**L, "other": "L_x.dtype is torch.float32"}, {}, None)


def test_locals_do_not_hide_the_objects_the_checks_use():
    def L_x():  # an object the checks name `L_x`, and a local `x` that would be named so too
        return 1

    L = {"x": torch.zeros(2), "fn": L_x}
    assumptions = [Assumption("tensor", LocalSource("x")), Assumption("id", LocalSource("fn"))]
    function = compile_guards(build_guards(assumptions, L, {}), "f")
    assert "L['fn'] is L_x)" in str(function) and "L_x_2 = L['x']" in str(function)
    assert function.check(L, {}, None)
    assert not function.check({**L, "fn": lambda: 1}, {}, None)


def test_a_check_two_guards_share_runs_once():
    layers = torch.nn.ModuleList([torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)])
    sources = [ItemSource(AttrSource(LocalSource("m"), "_modules"), str(i)) for i in range(2)]
    guards = build_guards([Assumption("module_hooks", s) for s in sources], {"m": layers}, {})
    source = str(compile_guards(guards, "f"))
    assert source.count("_global_forward_hooks") == 1
    assert source.count("['_forward_hooks']") == 2  # one per module, from its __dict__


def test_no_assumptions_no_checks():
    function = compile_guards([], "f")
    assert function.check({}, {}, None) is True
    assert "return True" in str(function)


values = st.one_of(
    st.integers(-2, 2),
    st.booleans(),
    st.sampled_from([0.0, -0.0, 1.5, "a", None]),
    st.builds(torch.zeros, st.integers(0, 3)),
    st.builds(lambda n: torch.zeros(n, dtype=torch.int64), st.integers(0, 3)),
)
kinds = st.sampled_from(["tensor", "constant", "type"])


@given(st.lists(st.tuples(kinds, values), min_size=1, max_size=3), st.data())
def test_guard_function_agrees_with_its_guards(seen, data):
    """The one generated function says True exactly when no guard explains a failure."""
    L, assumptions = {}, []
    for i, (kind, value) in enumerate(seen):
        if kind == "tensor" and not isinstance(value, torch.Tensor):
            kind = "type"
        if kind == "constant" and isinstance(value, torch.Tensor):
            kind = "type"
        L[f"a{i}"] = value
        assumptions.append(Assumption(kind, LocalSource(f"a{i}")))
    guards = build_guards(assumptions, L, {})
    check = compile_guards(guards, "f").check
    assert check(L, {}, None)
    new = {name: data.draw(st.one_of(st.just(value), values)) for name, value in L.items()}
    try:
        passed = check(new, {}, None)
    except Exception:  # the cache counts a guard that raises as a failure
        passed = False
    assert passed == (failure_reason(guards, new, {}, None) is None)


items = st.lists(
    st.one_of(st.builds(torch.zeros, st.integers(0, 2)), st.integers(-1, 1)), max_size=3
)


@given(items, items)
def test_guard_function_agrees_with_its_guards_on_items_of_a_list(seen, new):
    """With locals shared between guards (the list, read by each item's guard)."""
    L = {"xs": seen}
    assumptions = [Assumption("type", LocalSource("xs")), Assumption("length", LocalSource("xs"))]
    for i, value in enumerate(seen):
        kind = "tensor" if isinstance(value, torch.Tensor) else "constant"
        assumptions.append(Assumption(kind, ItemSource(LocalSource("xs"), i)))
    guards = build_guards(assumptions, L, {})
    check = compile_guards(guards, "f").check
    assert check(L, {}, None)
    try:
        passed = check({"xs": new}, {}, None)
    except Exception:  # the cache counts a guard that raises as a failure
        passed = False
    assert passed == (failure_reason(guards, {"xs": new}, {}, None) is None)


class Cell(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 1.0
        self.w = torch.nn.Parameter(torch.zeros(2))

    def forward(self, x):
        return x * self.scale


class OtherCell(Cell):
    def forward(self, x):
        return x - self.scale


cell_classes = st.sampled_from([Cell, OtherCell])
changes = st.sampled_from(["none", "class", "scale", "swap", "weight"])


@given(st.lists(cell_classes, min_size=1, max_size=4), st.data())
def test_guard_function_agrees_with_its_guards_through_pinned_types(classes, data):
    """With reads pinned by type and identity checks: a class's forward read through each
    instance is read once, by the class's name. Instances change class, attributes,
    weights, or are swapped; the class's own forward may change too."""
    cells = torch.nn.ModuleList(cls() for cls in classes)
    L = {"m": cells}
    assumptions = [Assumption("type", LocalSource("m"))]
    for i in range(len(cells)):
        cell = ItemSource(AttrSource(LocalSource("m"), "_modules"), str(i))
        cls = AttrSource(cell, "__class__")
        assumptions += [
            Assumption("type", cell),
            Assumption("id", cls),
            Assumption("function", ItemSource(AttrSource(cls, "__dict__"), "forward")),
            Assumption("constant", AttrSource(cell, "scale")),
            Assumption("tensor", ItemSource(AttrSource(cell, "_parameters"), "w")),
        ]
    guards = build_guards(assumptions, L, {})
    check = compile_guards(guards, "f").check
    assert check(L, {}, None)
    for i, cell in enumerate(list(cells)):
        change = data.draw(changes)
        if change == "class":
            cell.__class__ = OtherCell if type(cell) is Cell else Cell
        elif change == "scale":
            cell.scale = 2.0
        elif change == "swap":
            cells[i] = data.draw(cell_classes)()
        elif change == "weight":
            cell.w = torch.nn.Parameter(torch.zeros(3))
    real = Cell.forward
    if data.draw(st.booleans()):
        Cell.forward = lambda self, x: x
    try:
        try:
            passed = check(L, {}, None)
        except Exception:  # the cache counts a guard that raises as a failure
            passed = False
        assert passed == (failure_reason(guards, L, {}, None) is None)
    finally:
        Cell.forward = real


def test_replay_source_reads_items_and_closure_cells():
    xs = [torch.ones(2), torch.ones(2), torch.ones(2)]
    assert str(compile_replay(trace_total(total, xs), "total")) == (
        "def replay_total(L_xs):\n"
        "    L_xs_0 = L_xs[0]  # item 0 of local 'xs'\n"
        "    L_xs_1 = L_xs[1]  # item 1 of local 'xs'\n"
        "    L_xs_2 = L_xs[2]  # item 2 of local 'xs'\n"
        "    add = operator_add(L_xs_0, L_xs_1)  # line 5\n"
        "    add_1 = operator_add(add, L_xs_2)  # line 5\n"
        "    return add_1\n"
    )
    shift = make_shift(torch.ones(2))
    code = compile_replay(trace_shift(shift, torch.ones(2)), "shift")
    assert code.reads_frame
    assert str(code) == (
        "def replay_shift(G, F, L_x):\n"
        "    k = F.__closure__[0].cell_contents  # closure variable 'k'\n"
        "    add = operator_add(L_x, k)  # line 2\n"
        "    return add\n"
    )


def test_replay_output_structure_and_constants():
    def f(x, *args, key=1, **kwargs):
        return x

    trace = Trace(f.__code__)
    x = trace.add_node("input", None, source=LocalSource("x"))
    neg = trace.add_node("call_method", "neg", (x,))
    trace.output = {"a": [neg, (x,)], "b": (float("inf"), torch.float64, -0.0, None)}
    code = compile_replay(trace, "f")
    assert code.source.startswith("def replay_f(L_x, L_key, L_args, L_kwargs):\n")
    t = torch.ones(2)
    out = code.function(t, 1, (), {})
    assert out["a"][1][0] is t
    torch.testing.assert_close(out["a"][0], -t)
    assert out["b"] == (float("inf"), torch.float64, -0.0, None)
    assert str(out["b"][2]) == "-0.0"


@given(st.lists(st.integers(1, 3), min_size=1, max_size=4))
def test_replay_equals_stage2_replay(sizes):
    xs = [torch.randn(2) for _ in sizes]
    trace = trace_total(total, xs)
    ours = compile_replay(trace, "total").function(xs)
    torch.testing.assert_close(ours, replay(trace, total, xs))
    torch.testing.assert_close(ours, total(xs))


def test_generated_code_shows_in_tracebacks():
    def f(x):
        return x

    trace = Trace(f.__code__)
    x = trace.add_node("input", None, source=LocalSource("x"))
    trace.output = trace.add_node("call_function", operator.truediv, (x, 0), lineno=7)
    code = compile_replay(trace, "f")
    try:
        code.function(1)
    except ZeroDivisionError as error:
        import traceback

        text = "".join(traceback.format_tb(error.__traceback__))
        assert "truediv = operator_truediv(L_x, 0)  # line 7" in text


def test_tensors_are_checked_in_cpp_at_once_and_in_python_when_that_fails():
    model = torch.nn.Linear(2, 2)
    params = AttrSource(LocalSource("m"), "_parameters")
    weight, bias = ItemSource(params, "weight"), ItemSource(params, "bias")
    assumptions = [Assumption("tensor", LocalSource("x")), Assumption("tensor", weight)]
    assumptions += [Assumption("tensor", bias), Assumption("type", LocalSource("m"))]
    L = {"m": model, "x": torch.zeros(4)}
    guards = build_guards(assumptions, L, {})
    function = compile_guards(guards, "f")
    assert "    L_m_parameters = L_m._parameters\n" in function.source  # bound before the `if`
    assert "    if not check_tensors(L_x, L_m_parameters_weight, L_m_parameters_bias):\n" in (
        function.source
    )
    assert function.check(L, {}, None)
    # torch's check is the stricter: a negative view differs from a tensor in its dispatch
    # keys, so the Python checks decide, and they see no difference
    negative = {"m": model, "x": torch.zeros(4)._neg_view()}
    assert function.check(negative, {}, None) and failure_reason(guards, negative, {}, None) is None
    for new in ({"m": model, "x": torch.zeros(5)}, {"m": torch.nn.Linear(2, 3), "x": L["x"]}):
        assert not function.check(new, {}, None) and failure_reason(guards, new, {}, None)


def test_a_tensor_gone_before_the_guards_are_compiled_is_checked_in_python_alone():
    guards = build_guards([Assumption("tensor", LocalSource("x"))], {"x": torch.zeros(4)}, {})
    function = compile_guards(guards, "f")  # the tensor is freed: no example for torch's check
    assert "check_tensors" not in function.source and function.check({"x": torch.ones(4)}, {}, None)
