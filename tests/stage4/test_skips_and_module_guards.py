"""What a compiled call costs, and what keeps it right.

Frames that will not be compiled are answered SKIP and marked in C: their callback is not
entered again. A module's parameters are guarded where nn.Module keeps them, each read once:
replacing one, swapping a submodule, adding a hook or flipping `training` still recompiles
or gives eager's answer.
"""

import importlib

import pytest
import torch

import stage4_fx
from stage1_eval_frame import skip_marks
from stage3_guards import counters
from tests.oracle import assert_same_as_eager

compile_module = importlib.import_module("stage4_fx.compile")  # `stage4_fx.compile` is the function

X = torch.randn(4, 8)


class Scaled(torch.nn.Module):
    def forward(self, x):
        return x * 2 if self.training else x


class TwoLinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)
        self.scaled = Scaled()
        self.register_buffer("shift", torch.ones(4))

    def forward(self, x):
        return self.scaled(self.fc2(torch.relu(self.fc1(x)))) + self.shift


pytestmark = pytest.mark.usefixtures("fresh_compiles")  # tests/conftest.py


@pytest.fixture
def asked(monkeypatch):
    """The code of every frame the callbacks of compile() calls made from now on are asked about."""
    codes = []
    make = compile_module.make_callback

    def counting(options):
        callback = make(options)

        def counted(frame):
            codes.append(frame.code)
            return callback(frame)

        return counted

    monkeypatch.setattr(compile_module, "make_callback", counting)
    return codes


# --- SKIP marks: the callback is not entered again ----------------------------------------------


def test_after_the_first_call_only_the_compiled_frame_reaches_the_callback(asked):
    model = TwoLinear()
    compiled = stage4_fx.compile(model)
    assert_same_as_eager(compiled, model, X)
    library = [code for code in asked if code is not TwoLinear.forward.__code__]
    assert library  # nn.Module.__call__'s frames, the wrapper's helpers: asked once ...
    for code in library:
        assert skip_marks(code) == [compiled.options.callback]  # ... and marked in C
    asked.clear()
    for _ in range(3):
        assert_same_as_eager(compiled, model, X)
    assert asked == [TwoLinear.forward.__code__] * 3


class Named:
    def __str__(self):  # called by print, in the part of fn that runs as Python
        return "named"


def test_a_frame_with_nothing_to_compile_is_asked_once(asked):
    def fn(x):
        y = x.sin()
        print(Named())
        return y.cos()

    compiled = stage4_fx.compile(fn)
    for _ in range(3):
        assert_same_as_eager(compiled, fn, torch.randn(4))
    assert asked.count(Named.__str__.__code__) == 1
    assert counters.skipped == 1


def breaks_in_a_try_block(x):
    try:
        y = x.sin()
        print("inside")  # a break that cannot be cut here: the frame runs eagerly for good
        return y
    except ValueError:
        return x


def test_a_frame_that_runs_eagerly_for_good_is_asked_once(asked):
    compiled = stage4_fx.compile(breaks_in_a_try_block)
    for _ in range(3):
        assert_same_as_eager(compiled, breaks_in_a_try_block, torch.randn(4))
    assert asked.count(breaks_in_a_try_block.__code__) == 1
    assert skip_marks(breaks_in_a_try_block.__code__) == [compiled.options.callback]


def test_a_mark_of_one_compile_does_not_hide_the_frame_from_another():
    x = torch.randn(4)
    stage4_fx.compile(breaks_in_a_try_block)(x)  # marked for that compile()'s callback only
    report = stage4_fx.explain(breaks_in_a_try_block)(x)
    assert [b.kind for b in report.break_reasons] == ["break_in_block"]  # explain still sees it
    with pytest.raises(stage4_fx.GraphBreakError):
        stage4_fx.compile(breaks_in_a_try_block, fullgraph=True)(x)


def test_reset_clears_the_marks(asked):
    compiled = stage4_fx.compile(breaks_in_a_try_block)
    compiled(torch.randn(4))
    stage4_fx.reset()
    assert skip_marks(breaks_in_a_try_block.__code__) == []
    compiled(torch.randn(4))
    assert asked.count(breaks_in_a_try_block.__code__) == 2  # asked again after the reset


def test_a_library_function_compiled_by_name_is_not_hidden_by_an_earlier_mark():
    model = torch.nn.Sequential(torch.nn.Linear(8, 4))

    def outer(x):
        try:
            print("eager")  # runs eagerly for good: the frames it calls are met one by one
            return model(x)
        except ValueError:
            return x

    compile_with = stage4_fx.compile(backend="eager")  # one compile(), two functions
    compile_with(outer)(X)
    forward = torch.nn.Sequential.forward.__code__
    assert skip_marks(forward)  # torch's own code, met on its own: marked
    compiled = compile_with(model)  # now one of this compile()'s entries: the mark goes
    assert skip_marks(forward) == []
    assert_same_as_eager(compiled, model, X)
    assert compiled.options.caches[forward].entries


# --- module guards: cheap, and still right -----------------------------------------------------


def compiled_once(model):
    compiled = stage4_fx.compile(model)
    assert_same_as_eager(compiled, model, X)
    return compiled


def test_the_guards_read_parameters_where_nn_module_keeps_them():
    compiled = compiled_once(TwoLinear())
    (cache,) = [c for c in compiled.options.caches.values() if c.entries]
    source = str(cache.entries[0].guards)
    weight = "L_self_modules_fc1_parameters_weight = L_self_modules_fc1_parameters['weight']"
    assert weight in source
    assert "__getattr__" not in source and ".fc1" not in source


def test_the_new_code_reads_each_path_to_the_parameters_once():
    """The graph's inputs are read one after another, nothing run between: the paths they
    share (`self._modules`, `self._modules['fc1']._parameters`) are read once, into locals,
    as the guard function reads them."""
    import dis

    model = TwoLinear()
    compiled = compiled_once(model)
    (cache,) = [c for c in compiled.options.caches.values() if c.entries]
    reads = [
        i.argval for i in dis.get_instructions(cache.entries[0].code) if i.opname == "LOAD_ATTR"
    ]
    # self._modules once; fc1's and fc2's _parameters once each; self._buffers once
    assert sorted(reads) == ["_buffers", "_modules", "_parameters", "_parameters"], reads
    model.fc1.weight = torch.nn.Parameter(torch.randn(16, 8))  # read again at the next call
    assert_same_as_eager(compiled, model, X)


def test_a_parameter_replaced_by_one_of_the_same_shape_is_read_without_recompiling():
    model = TwoLinear()
    compiled = compiled_once(model)
    model.fc1.weight = torch.nn.Parameter(torch.randn(16, 8))
    assert_same_as_eager(compiled, model, X)
    assert counters.recompiles == 0


def test_a_submodule_replaced_by_one_of_the_same_kind_is_read_without_recompiling():
    """Modules are guarded by type and by what the trace reads, not by identity (as torch
    guards them): a fresh layer of the same shapes is another input, not another code."""
    model = TwoLinear()
    compiled = compiled_once(model)
    model.fc2 = torch.nn.Linear(16, 4)
    assert_same_as_eager(compiled, model, X)
    assert counters.recompiles == 0


CHANGES = {
    "parameter": lambda m: setattr(m.fc2, "bias", torch.nn.Parameter(torch.randn(1))),
    "data": lambda m: setattr(m.fc2.bias, "data", torch.randn(1)),  # same object, new shape
    "requires_grad": lambda m: m.fc2.bias.requires_grad_(False),  # same object
    "dtype": lambda m: m.double(),  # the same parameters, their data replaced
    "submodule": lambda m: setattr(m, "fc2", torch.nn.Linear(16, 4, bias=False)),
    "class": lambda m: setattr(m, "scaled", torch.nn.Identity()),
    "training": lambda m: m.scaled.eval(),  # in a submodule
    "hook": lambda m: m.fc1.register_forward_hook(lambda mod, args, out: out * 10),
    "buffer": lambda m: m.register_buffer("shift", torch.zeros(1, 4)),
    "shadowed": lambda m: m.__dict__.__setitem__("fc2", torch.nn.Linear(16, 4)),  # no __setattr__
}


@pytest.mark.parametrize("change", CHANGES)
def test_a_change_to_the_module_recompiles_or_gives_eagers_answer(change):
    model = TwoLinear()
    compiled = compiled_once(model)
    CHANGES[change](model)
    x = X.double() if change == "dtype" else X
    model(x)  # eager runs (the change is one a user may make)
    assert_same_as_eager(compiled, model, x)
    assert counters.recompiles == 1


class BreakingLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)
        self.scale = 0.5

    def forward(self, x):
        x = self.fc(x) * self.scale
        print(end="")  # a graph break inside each layer
        return x.relu() + x


def test_identical_layers_share_one_compiled_code():
    """Twelve instances of one layer, each with a break: the layer's frames compile once
    (torch guards what the code reads of `self`, not its identity), and never reach the
    recompile limit."""

    def apply(layer, x):
        return layer(x)

    compiled = stage4_fx.compile(apply)
    x = torch.randn(4, 8)
    with torch.no_grad():
        for layer in [BreakingLayer() for _ in range(12)]:
            expected = apply(layer, x)
            torch.testing.assert_close(compiled(layer, x), expected)
            x = expected
    assert counters.recompiles == 0 and counters.eager == 0
    caches = [c for c in compiled.options.caches.values() if c.entries]
    # apply and its resume function, the layer's forward and its resume function
    assert sorted(c.code.co_name.startswith("__resume") for c in caches) == [0, 0, 1, 1]
    assert all(len(c.entries) == 1 for c in caches)  # one code for every instance


class BreakingStack(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(BreakingLayer() for _ in range(12))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def test_a_loop_over_breaking_layers_never_reaches_the_recompile_limit():
    """The loop's resume function meets its iterator one step further on each pass: one
    entry per step would lead to the limit. After its first step it runs eagerly (torch.compile
    runs a frame with a break in a loop eagerly from the start), and the layers' own frames
    compile once for all twelve."""
    model = BreakingStack()
    compiled = stage4_fx.compile(model)
    with torch.no_grad():
        for _ in range(2):
            assert_same_as_eager(compiled, model, X)
    assert counters.recompiles == 0
    caches = [c for c in compiled.options.caches.values() if c.entries]
    moved = [c for c in caches if c.eager_reason and "iterator moved on" in c.eager_reason]
    assert [c.code.co_name.startswith("__resume") for c in moved] == [True]
    assert all(len(c.entries) == 1 for c in caches)  # one code for every layer


def test_torch_dynamo_graph_break_breaks_the_graph():
    """`torch._dynamo.graph_break()` is an empty function that torch's compiler answers with a
    break; so does the VM, with the reason."""
    import torch._dynamo

    def f(x):
        x = x + 1
        torch._dynamo.graph_break()
        return x * 2

    report = stage4_fx.explain(f)(X)
    assert (report.graph_count, report.graph_break_count) == (2, 1)
    assert "graph_break()` asks for a break" in report.break_reasons[0].reason
    assert_same_as_eager(stage4_fx.compile(f), f, X)
