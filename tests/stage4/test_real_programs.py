"""What real programs did to the frontend, one regression test per finding.

Each test is a pattern found in code nobody here wrote: Hugging Face's
decorators, torchvision's in-place ReLU, PyTorch's own dynamo tests.
"""

import enum
import functools
import inspect
import logging
import os
import subprocess
import sys
import typing
import warnings
from inspect import currentframe as here

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import stage2_symbolic_vm.vm as vm
import stage3_guards
import stage4_fx
from stage3_guards import counters
from tests.oracle import assert_same_as_eager

pytestmark = pytest.mark.usefixtures("fresh_compiles")  # tests/conftest.py


def compiles_of(fn, *calls):
    """Call the compiled `fn` on each argument tuple; return how many compiles it took."""
    counters.reset()
    compiled = stage4_fx.compile(fn)
    results = [compiled(*args) for args in calls]
    return counters.compiled, results


# --- frames are bound by their own code ---------------------------------------------------


def keeps_args(func):
    """Hugging Face's `can_return_tuple`: a `functools.wraps` wrapper of (self, *args, **kwargs)."""

    @functools.wraps(func)
    def wrapper(self, *args, **kwargs):
        flag = kwargs.pop("flag", True)
        print(end="")  # a graph break: the resume function must still receive `args`
        return func(self, *args, **kwargs) * (2 if flag else 1)

    return wrapper


class Wrapped(nn.Module):
    @keeps_args
    def forward(self, x, scale=1.0):
        return x * scale


def breaks_first(func):
    """A wrapper that breaks the graph before it reads `args`: the resume function must get them
    (it read an empty slot: UnboundLocalError on 3.11, a segfault on 3.12)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        print(end="")
        return func(*args, **kwargs)

    return wrapper


@breaks_first
def scaled(x, scale=1.0):
    return x * scale


def test_a_wraps_wrapper_that_breaks_first_passes_its_arguments_on():
    assert_same_as_eager(stage4_fx.compile(scaled), scaled, torch.randn(3), 2.0)


def test_a_wraps_wrapper_is_bound_by_its_own_parameters():
    model = Wrapped()
    x = torch.randn(3)
    assert_same_as_eager(stage4_fx.compile(model), model, x, 3.0, kwargs={"flag": False})
    report = stage4_fx.explain(model)(x, 3.0)
    assert report.graph_break_count == 1 and "print" in report.break_reasons[0].reason


# --- global state and module structure are guarded --------------------------------------


def test_autocast_is_guarded():
    def f(x, y):
        return x @ y

    x = torch.randn(8, 8)
    compiled = stage4_fx.compile(f)
    assert compiled(x, x).dtype == torch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert compiled(x, x).dtype == f(x, x).dtype == torch.bfloat16
    assert compiled(x, x).dtype == torch.float32


def test_default_dtype_and_device_are_guarded():
    def f(x):
        return torch.ones(3) + x

    compiled = stage4_fx.compile(f)
    compiled(torch.zeros(3))
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert compiled(torch.zeros(3)).dtype == f(torch.zeros(3)).dtype == torch.float64
    finally:
        torch.set_default_dtype(previous)
    guards = [str(g) for f in compiled.options.frames for g in f.guards.guards]
    assert any("DEFAULT_DEVICE" in g for g in guards) and any("DEFAULT_DTYPE" in g for g in guards)


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def test_a_module_list_that_grows_recompiles():
    model, x = Stack(), torch.randn(2, 4)
    compiled = stage4_fx.compile(model)
    compiled(x)
    model.layers.append(nn.Linear(4, 4))
    torch.testing.assert_close(compiled(x), model(x))


def test_a_hook_registered_after_compiling_runs():
    model, x = Stack(), torch.randn(2, 4)
    compiled = stage4_fx.compile(model)
    compiled(x)
    model.layers[0].register_forward_hook(lambda module, args, out: out * 0)
    torch.testing.assert_close(compiled(x), model(x))
    assert torch.all(compiled(x) == model.layers[0].bias * 0)


def test_a_module_switched_to_training_recompiles():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)).eval()
    x = torch.randn(8, 4)
    compiled = stage4_fx.compile(model)
    torch.testing.assert_close(compiled(x), model(x))
    model.train()
    torch.manual_seed(1)
    expected = model(x)
    torch.manual_seed(1)
    torch.testing.assert_close(compiled(x), expected)


# --- what eager gives, the compiled function gives -----------------------------------------


def test_to_with_copy_returns_a_new_tensor():
    def f(x):
        return x.to(torch.float32, copy=True)

    x = torch.randn(3)
    assert stage4_fx.compile(f)(x).data_ptr() != x.data_ptr()


def test_dict_views_are_live():
    def f(x):
        d = {"a": x}
        keys, values = d.keys(), d.values()
        d["b"] = x + 1
        return list(keys), list(values)

    assert_same_as_eager(stage4_fx.compile(f), f, torch.randn(3))
    assert stage4_fx.explain(f)(torch.randn(3)).graph_break_count == 0


def test_bitwise_and_of_inputs_is_not_in_place():
    def f(a, b):
        return a & b, a | b, a ^ b

    a, b = torch.rand(5) > 0.5, torch.rand(5) > 0.5
    assert_same_as_eager(stage4_fx.compile(f), f, a, b)
    report = stage4_fx.explain(f)(a, b)
    assert (report.graph_count, report.graph_break_count) == (1, 0)


def test_getattr_with_a_default_and_dict_update_of_pairs():
    def f(x):
        d = {}
        d.update(zip(["a", "b"], [1, 2], strict=True))
        return x * getattr(x, "missing", 3) + d["b"] + getattr(nn.Linear, "in_features", 4)

    assert_same_as_eager(stage4_fx.compile(f), f, torch.randn(3))
    report = stage4_fx.explain(f)(torch.randn(3))
    assert (report.graph_count, report.graph_break_count) == (1, 0)


def test_max_with_a_dim_has_values_and_indices():
    def softmax(a):
        e = (a - a.max(dim=-1, keepdim=True).values).exp()
        return e / e.sum(dim=-1, keepdim=True), torch.max(a, 0).indices

    assert_same_as_eager(stage4_fx.compile(softmax), softmax, torch.randn(4, 5))
    report = stage4_fx.explain(softmax)(torch.randn(4, 5))
    assert (report.graph_count, report.graph_break_count) == (1, 0)


def test_random_ops_give_eager_numbers_under_the_same_seed():
    def f(x):
        return F.dropout(x, 0.5, training=True) + torch.rand(3), torch.randn_like(x)

    x = torch.randn(3)
    torch.manual_seed(7)
    expected = f(x)
    compiled = stage4_fx.compile(f)
    torch.manual_seed(7)
    actual = compiled(x)
    torch.testing.assert_close(actual, expected)


def remove_dropout(gm, example_inputs):
    """The custom backend of the seed documents: it deletes dropout from the graph."""
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target is F.dropout:
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
    gm.recompile()
    return gm.forward


def test_a_backend_can_delete_the_dropout_nodes():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.9), nn.ReLU()).train()
    x = torch.randn(2, 4)
    ours = stage4_fx.compile(model, backend=remove_dropout)(x)
    torch._dynamo.reset()
    torchs = torch.compile(model, backend=remove_dropout)(x)
    expected = model[2](model[0](x))  # no dropout at all
    torch.testing.assert_close(ours, expected)
    torch.testing.assert_close(torchs, expected)


# --- guards read only what exists before the call ------------------------------------------


def test_fresh_objects_do_not_recompile_every_call():
    class Point:
        def __init__(self, x):
            self.x = x

    def f(x):
        d = dict.fromkeys(["a", "b"], 1)
        p = Point(x * d["a"])
        scale = (lambda v: v * 2)(p.x)
        print(end="")  # a break: `p` and `scale` go to the resume function
        return scale + p.x

    x = torch.randn(3)
    compiles, _ = compiles_of(f, (x,), (x.clone(),), (x.clone(),))
    assert compiles == 2  # the frame and its resume function, once each


# --- no silent fallback ---------------------------------------------------------------------


def test_an_internal_error_raises_in_strict_mode(monkeypatch):
    def broken(self, inst):
        raise RuntimeError("a bug in a handler")

    monkeypatch.setattr(vm.InstructionTranslator, "BINARY_OP", broken)
    with pytest.raises(RuntimeError, match="a bug in a handler"):
        stage4_fx.compile(lambda x: x + 1)(torch.ones(2))


def test_an_internal_error_warns_once_and_explain_lists_it(monkeypatch):
    def broken(self, inst):
        raise RuntimeError("a bug in a handler")

    monkeypatch.setattr(vm.InstructionTranslator, "BINARY_OP", broken)
    monkeypatch.setattr(stage3_guards.config, "strict", False)

    def f(x):
        return x + 1

    compiled = stage4_fx.compile(f)
    with pytest.warns(stage3_guards.CompilerWarning, match="a bug in a handler"):
        torch.testing.assert_close(compiled(torch.ones(2)), f(torch.ones(2)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled(torch.ones(2))  # no second warning
    with pytest.warns(stage3_guards.CompilerWarning):  # explain compiles anew
        report = stage4_fx.explain(f)(torch.ones(2))
    assert [b.kind for b in report.break_reasons] == ["compiler_error"]
    assert report.break_reasons[0].eager_frame


def test_a_frame_that_raises_runs_eagerly_and_says_so():
    def f(x):
        return x + torch.ones(5)  # eager raises: the sizes do not match

    compiled = stage4_fx.compile(f)
    with pytest.raises(RuntimeError):
        compiled(torch.ones(3))
    (record,) = compiled.options.breaks
    assert record.kind == "eager_error" and record.eager_frame and "RuntimeError" in record.reason


def test_fullgraph_and_backend_errors_are_raised_on_every_call(monkeypatch):
    monkeypatch.setattr(stage3_guards.config, "strict", False)  # they are not compiler bugs

    def f(x):
        print(end="")
        return x + 1

    compiled = stage4_fx.compile(f, fullgraph=True)
    for _ in range(2):
        with pytest.raises(stage4_fx.GraphBreakError, match="print"):
            compiled(torch.ones(2))

    def broken(gm, example_inputs):
        raise ValueError("this backend fails")

    compiled = stage4_fx.compile(lambda x: x + 1, backend=broken)
    for _ in range(2):
        with pytest.raises(stage4_fx.BackendCompilerFailed, match="this backend fails"):
            compiled(torch.ones(2))


def test_inplace_given_by_position_is_in_place():
    def f(m):
        n = m * 1
        F.relu(n, True)
        F.hardtanh(n, -0.5, 0.5, True)
        return n

    assert_same_as_eager(stage4_fx.compile(f), f, torch.randn(6))


def test_list_backends_lists_the_inductors():
    assert {"eager", "inductor", "inductor_cpp"} <= set(stage4_fx.list_backends())
    import stage6_inductor_triton

    assert stage4_fx.lookup_backend("inductor") is stage6_inductor_triton.inductor


def test_in_place_dunders_change_the_tensor():
    def f(x, y):
        x.__iadd__(y)
        x.__imul__(2)
        x.__isub__(y)
        return x

    assert_same_as_eager(stage4_fx.compile(f), f, torch.ones(3), torch.ones(3))


@pytest.mark.parametrize(
    "backend, says",
    [
        (lambda gm, inputs: None, "not a callable"),
        (lambda gm, inputs: 42, "not a callable"),
        (lambda gm, inputs: lambda *args: (), "returned ()"),
        (lambda gm, inputs: lambda *args: (1, 2, 3), "3 values"),
    ],
)
def test_a_backend_that_returns_the_wrong_thing_is_told_so(backend, says):
    compiled = stage4_fx.compile(lambda x: x + 1, backend=backend)
    with pytest.raises(stage4_fx.BackendCompilerFailed, match=says):
        compiled(torch.ones(2))


def test_reset_gives_back_the_compiled_graphs_and_the_generated_sources():
    import linecache

    def f(x):
        return x * 2

    compiled = stage4_fx.compile(f)
    compiled(torch.ones(2))
    installed = [name for name in globals() if name.startswith("__compiled_fn_")]
    assert installed
    generated = [name for name in linecache.cache if name.startswith("<minidynamo ")]
    assert generated
    stage4_fx.reset()
    assert not [name for name in globals() if name.startswith("__compiled_fn_")]
    left = [name for name in linecache.cache if name.startswith("<minidynamo ")]
    assert not left, left


def test_a_compile_error_is_raised_in_its_own_thread_only():
    import threading

    def picky(gm, example_inputs):
        if example_inputs[0].shape[0] == 3:
            raise ValueError("no graphs of 3 rows")
        return gm.forward

    # dynamic=False: each size is a graph of its own (one symbolic graph would serve them all)
    compiled = stage4_fx.compile(lambda x: x * 2, backend=picky, dynamic=False)
    outcomes = {}

    def call(rows):
        try:
            for _ in range(20):
                compiled(torch.ones(rows))
            outcomes[rows] = "ok"
        except stage4_fx.BackendCompilerFailed as error:
            outcomes[rows] = str(error)

    threads = [threading.Thread(target=call, args=(rows,)) for rows in (3, 4, 5, 6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert "no graphs of 3 rows" in outcomes[3]
    assert [outcomes[rows] for rows in (4, 5, 6)] == ["ok"] * 3


def test_a_thousand_compile_and_reset_rounds_keep_memory_flat():
    import gc
    import linecache
    import os

    def resident_mb():
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    def rounds(first, count):
        for i in range(first, first + count):
            namespace = {"torch": torch}
            source = f"def f(x):\n    y = x * {i % 7 + 1}\n    print(end='')\n    return y + 1\n"
            exec(source, namespace)  # a new function, with a graph break: two frames to compile
            stage4_fx.compile(namespace["f"])(torch.ones(4))
            stage4_fx.reset()

    rounds(0, 100)  # warm up: imports, caches, allocator pools
    gc.collect()
    before, entries = resident_mb(), len(linecache.cache)
    rounds(100, 1000)
    gc.collect()
    # A reset gives back what each round compiled: the bound leaves room for the allocator's
    # noise only, and the sources each round generated must have left linecache too.
    assert resident_mb() - before < 4.0
    assert len(linecache.cache) <= entries


# --- Hugging Face patterns (from a sweep of its model configurations) -----------------------


def one_graph(fn, *args):
    """`fn` compiles to one graph with no break, and gives eager's result."""
    report = stage4_fx.explain(fn)(*args)
    assert (report.graph_count, report.graph_break_count) == (1, 0), report.break_reasons
    stage4_fx.reset()
    assert_same_as_eager(stage4_fx.compile(fn), fn, *args)


def test_finfo_of_a_dtype_is_a_constant():
    one_graph(lambda x: x.masked_fill(x > 0, torch.finfo(x.dtype).min), torch.randn(4))
    one_graph(lambda x: x.clamp(max=torch.iinfo(torch.int8).max), torch.randn(4) * 300)


def test_an_int_plus_equals_a_tensor_makes_a_new_tensor():
    def total(xs):
        acc = 0
        for x in xs:
            acc += x * 2  # int has no __iadd__: `acc = acc + x * 2`
        return acc

    one_graph(total, [torch.randn(3), torch.randn(3)])


def test_torch_probes_of_other_tracers_are_answered():
    def fn(x):
        torch._C._log_api_usage_once("minidynamo.test")
        if torch._C._are_functorch_transforms_active() or torch._C._get_tracing_state():
            return x
        return x + 1

    one_graph(fn, torch.randn(4))


def test_bytes_keys_and_os_environ_are_guarded():
    import os

    table = {b"scale": 2.0}

    def fn(x):
        if os.environ.get("MINIDYNAMO_TEST_FLAG", "0") == "1":
            return x + 1
        return x * table[b"scale"]

    one_graph(fn, torch.randn(4))
    compiled, x = stage4_fx.compile(fn), torch.randn(4)
    compiled(x)
    os.environ["MINIDYNAMO_TEST_FLAG"] = "1"
    try:
        torch.testing.assert_close(compiled(x), x + 1)
    finally:
        del os.environ["MINIDYNAMO_TEST_FLAG"]


class OwnEq:
    """A key with its own `==` and hash: no guard can check a dict's keys cheaply then."""

    def __eq__(self, other):
        return isinstance(other, OwnEq)

    def __hash__(self):
        return 7


class Table(dict):
    pass


def test_a_value_no_guard_can_check_is_explained():
    table = Table({OwnEq(): 1.0, "a": 3.0})

    def fn(x):
        return x * table["a"]

    report = stage4_fx.explain(fn)(torch.randn(2))
    assert [b.kind for b in report.break_reasons] == ["unguardable_value"]
    assert report.break_reasons[0].eager_frame


class Hooked(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x).relu()


def test_forward_hooks_are_traced_into_the_graph():
    model, x = Hooked(), torch.randn(2, 4)
    model.lin.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    model.lin.register_forward_hook(lambda mod, args, out: out - args[0].sum())
    model.register_forward_pre_hook(
        lambda mod, args, kwargs: ((args[0] + 1,), kwargs), with_kwargs=True
    )
    model.register_forward_hook(lambda mod, args, kwargs, out: out * 3, with_kwargs=True)
    one_graph(model, x)


def test_removing_or_adding_a_hook_recompiles():
    model, x = Hooked(), torch.randn(2, 4)
    handle = model.lin.register_forward_hook(lambda mod, args, out: out * 10)
    compiled = stage4_fx.compile(model)
    torch.testing.assert_close(compiled(x), model(x))
    handle.remove()
    torch.testing.assert_close(compiled(x), model(x))
    model.lin.register_forward_hook(lambda mod, args, out: out * -1)
    torch.testing.assert_close(compiled(x), model(x))


def test_a_global_forward_hook_is_traced():
    model, x = Hooked(), torch.randn(2, 4)
    handle = nn.modules.module.register_module_forward_hook(lambda mod, args, out: out + 1)
    try:
        one_graph(model, x)
    finally:
        handle.remove()


def test_a_backward_hook_is_a_graph_break_that_says_so():
    model, x = Hooked(), torch.randn(2, 4, requires_grad=True)
    model.lin.register_full_backward_hook(lambda mod, grad_in, grad_out: None)
    report = stage4_fx.explain(model)(x)
    assert "backward hooks" in report.break_reasons[0].reason
    stage4_fx.reset()
    assert_same_as_eager(stage4_fx.compile(model), model, x)


class Layers(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))
        self.n = 2

    def forward(self, x):
        for layer in self.layers[: self.n]:
            x = layer(x)
        return x, len(self.layers[1:]), self.layers[-2:]


def test_a_slice_of_a_module_list_is_its_modules():
    model, x = Layers(), torch.randn(2, 4)
    report = stage4_fx.explain(model)(x)
    assert (report.graph_count, report.graph_break_count) == (1, 0), report.break_reasons
    compiled = stage4_fx.compile(model)
    _, count, rest = compiled(x)
    assert count == 2 and type(rest) is nn.ModuleList and list(rest) == list(model.layers[-2:])
    model.n = 3  # the slice's bound is guarded
    torch.testing.assert_close(compiled(x)[0], model(x)[0])


def test_an_lru_cached_helper_is_traced_through():
    @functools.lru_cache
    def flash_available():
        return False

    def fn(x):
        return x.softmax(-1) if not flash_available() else x

    one_graph(fn, torch.randn(2, 4))


class Scaled:
    k = 5


@functools.lru_cache(None)
def offset(self, x):
    return self.k + x


Scaled.offset = offset  # as Hugging Face sets `logging.Logger.warning_once`


def test_an_lru_cached_method_is_bound_to_its_instance():
    """lru_cache's wrapper binds to an instance as a function does (`_lru_cache_wrapper`'s
    __get__): the VM passed the first argument as `self` (a TypeError eager never raises,
    and the frame ran eagerly)."""
    scaled = Scaled()
    one_graph(lambda x: x * scaled.offset(2), torch.randn(3))


@functools.lru_cache
def cached_scale():
    return 3


def test_an_lru_cached_function_returned_is_the_cache_itself():
    def fn(x):
        return x * cached_scale(), cached_scale

    result, returned = stage4_fx.compile(fn)(torch.ones(2))
    torch.testing.assert_close(result, torch.full((2,), 3.0))
    assert returned is cached_scale


def test_the_state_of_an_lru_cache_is_a_break_with_a_reason():
    def fn(x):
        return x + cached_scale.cache_info().currsize

    compiled = stage4_fx.compile(fn)
    torch.testing.assert_close(compiled(torch.ones(2)), fn(torch.ones(2)))
    report = stage4_fx.explain(fn)(torch.ones(2))
    assert "`cache_info` of an lru_cache" in str(report), str(report)


class OnceLogger(logging.Logger):
    """Hugging Face's logger: `logging.Logger.warning_once` is an lru_cache'd function, so a
    message is logged at its first call only (transformers/utils/logging.py)."""


@functools.lru_cache(None)
def warning_once(self, *args, **kwargs):
    self.warning(*args, **kwargs)


OnceLogger.warning_once = warning_once
padding_logger = OnceLogger("minidynamo.tests.padding")


def pad_to_window(x, window):  # LED's `_pad_to_window_size`
    padding = (window - x.shape[-1] % window) % window
    if padding > 0:
        padding_logger.warning_once(f"padded from {x.shape[-1]} to {x.shape[-1] + padding}")
    return F.pad(x, (0, padding))


def padded_encoder(x):
    y = pad_to_window(x.sin(), 8)
    return y.cos() * 2


def test_a_warning_logged_once_is_not_logged_again_by_the_compiled_call():
    """The break runs the call of the lru_cache'd `warning_once` itself, whose cache says
    the message was logged already: the VM ran the function under it (the message came
    again, and its frame made one break more than torch.compile's)."""
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    padding_logger.addHandler(handler)
    try:
        warning_once.cache_clear()
        x = torch.randn(2, 5)
        expected = padded_encoder(x)
        assert len(records) == 1  # eager logs it, once
        torch.testing.assert_close(stage4_fx.compile(padded_encoder)(x), expected)
        assert len(records) == 1, [r.getMessage() for r in records]
        ours = stage4_fx.explain(padded_encoder)(x)
        theirs = torch._dynamo.explain(padded_encoder)(x)
        torch._dynamo.reset()
        counts = (ours.graph_count, ours.graph_break_count)
        assert counts == (theirs.graph_count, theirs.graph_break_count), str(ours)
        assert len(records) == 1, [r.getMessage() for r in records]
        warning_once.cache_clear()  # not logged yet: the compiled call logs it, once
        stage4_fx.reset()
        torch.testing.assert_close(stage4_fx.compile(padded_encoder)(x), expected)
        assert len(records) == 2
    finally:
        padding_logger.removeHandler(handler)


def test_tensor_type_converts_and_names():
    one_graph(lambda x: x.type(torch.float64) * 2, torch.randn(4))
    one_graph(lambda x: (x + 1, x.type()), torch.randn(4))
    one_graph(lambda x: x.type("torch.DoubleTensor") * 2, torch.randn(4))
    one_graph(lambda x: x.type("torch.BFloat16Tensor") + 1, torch.randn(4))
    # The tensor's own type: the tensor itself, which eager then writes in place.
    one_graph(lambda x: x.type("torch.FloatTensor").add_(1), torch.randn(4))
    report = stage4_fx.explain(lambda x: x.type("torch.sparse.FloatTensor"))(torch.randn(4))
    assert "does not map" in report.break_reasons[0].reason


class ScaledGelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return F.gelu(x) * scale

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ctx.scale * (x > 0), None


class Square(torch.autograd.Function):  # the newer style: forward without ctx
    @staticmethod
    def forward(x):
        return x * x

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad):
        return 2 * ctx.saved_tensors[0] * grad


def test_an_autograd_function_without_gradients_is_its_forward():
    def fn(x):
        return ScaledGelu.apply(x, 2.0) + Square.apply(x)

    with torch.no_grad():
        one_graph(fn, torch.randn(4, requires_grad=True))
    one_graph(fn, torch.randn(4))  # grad mode on, but nothing requires grad


def test_an_autograd_function_with_gradients_is_a_break_and_keeps_its_backward():
    def fn(x):
        return ScaledGelu.apply(x.sin(), 2.0).sum()

    x = torch.randn(4, requires_grad=True)
    report = stage4_fx.explain(fn)(x)
    assert "backward would be lost" in report.break_reasons[0].reason
    stage4_fx.reset()
    compiled = stage4_fx.compile(fn)
    compiled(x).backward()
    expected = torch.autograd.grad(fn(x), x)[0]
    torch.testing.assert_close(x.grad, expected)


def test_installed_model_code_is_compiled_and_libraries_are_not():
    import os.path

    import numpy
    import transformers.activations

    from stage4_fx.compile import is_user_code

    assert is_user_code(transformers.activations.GELUActivation.forward.__code__)
    assert not is_user_code(os.path.join.__code__)  # the standard library
    assert not is_user_code(numpy.testing.assert_allclose.__code__)  # never model code
    assert not is_user_code(torch.nn.Linear.forward.__code__)


def test_an_installed_packages_frame_after_a_break_gets_its_own_graph():
    import sysconfig

    namespace = {}
    source = "def layer(x):\n    print('logged')\n    return x.relu() * 2\n"
    filename = f"{sysconfig.get_paths()['purelib']}/some_models/layer.py"  # as if installed
    exec(compile(source, filename, "exec"), namespace)
    layer = namespace["layer"]

    def fn(x):
        return layer(x + 1) - 1  # the print breaks inside layer: the call runs as Python ...

    report = stage4_fx.explain(fn)(torch.randn(4))
    ops = [str(op) for graph_ops in report.ops_per_graph for op in graph_ops]
    assert any("relu" in op for op in ops), ops  # ... and layer's frame is compiled too


class Named:
    def __str__(self):  # called by print, in the part of fn that runs as Python
        return "named" if self.__class__.__name__ == "Named" else "other"


def test_a_frame_with_nothing_to_compile_runs_as_it_is():
    def fn(x):
        y = x.sin()
        print(Named())
        return y.cos()

    counters.reset()
    compiled = stage4_fx.compile(fn)
    for _ in range(3):
        x = torch.randn(4)
        torch.testing.assert_close(compiled(x), fn(x))
    # fn and its resume function compiled once each; Named.__str__ (not compiled by the user,
    # no tensor work) is met once, found empty, and left alone from then on
    assert (counters.compiled, counters.skipped, counters.recompiles) == (2, 1, 0)


def test_an_audit_hook_is_not_compiled_for_every_event(tmp_path):
    # filelock installs an audit hook on 3.12+ that compares the event's name: compiled, it
    # would recompile for every new event, then warn about the recompile limit
    script = tmp_path / "audit.py"
    script.write_text(
        "import sys, warnings, torch, stage4_fx\n"
        "from stage3_guards import counters\n"
        "def hook(event, args):\n"
        "    if event in ('os.fork', 'os.forkpty'):\n"
        "        raise RuntimeError(event)\n"
        "sys.addaudithook(hook)\n"
        "warnings.simplefilter('error')\n"
        "def fn(x, path):\n"
        "    with open(path) as f:\n"  # a graph break: open() runs as Python, events fire
        "        text = f.read()\n"
        "    return x * len(text), compile('1', 'f', 'eval'), sys._getframe().f_code.co_name\n"
        "compiled = stage4_fx.compile(fn)\n"
        "for _ in range(12):\n"
        "    compiled(torch.ones(2), __file__)\n"
        "print(counters.skipped, counters.recompiles)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "0"]


def test_a_function_marked_constant_is_called_while_tracing():
    calls = []

    @functools.lru_cache
    @torch.compiler.assume_constant_result  # as transformers marks `is_torch_available`
    def installed(name):
        calls.append(name)
        return name == "torch"

    def fn(x):
        return x + 1 if installed("torch") else x

    counters.reset()
    compiled = stage4_fx.compile(fn)
    x = torch.randn(3)
    torch.testing.assert_close(compiled(x), x + 1)
    torch.testing.assert_close(compiled(x), x + 1)
    assert calls == ["torch"] and counters.compiled == 1  # once, at trace time


class Config:
    """Hugging Face's PreTrainedConfig: attribute names mapped in a Python __getattribute__."""

    attribute_map: typing.ClassVar = {"hidden": "hidden_size"}
    reads: typing.ClassVar = []

    def __init__(self):
        self.hidden_size = 4

    def __getattribute__(self, key):
        Config.reads.append(key)
        if key != "attribute_map" and key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        return super().__getattribute__(key)


def test_a_compiled_getattribute_does_not_call_itself():
    config = Config()

    def fn(x):
        try:  # a break in a `try` block: the frame runs as Python, config's frames compile
            print("logged")
        finally:
            pass
        return x * config.hidden

    x = torch.ones(2)
    compiled = stage4_fx.compile(fn)
    torch.testing.assert_close(compiled(x), x * 4)
    Config.reads.clear()
    torch.testing.assert_close(compiled(x), x * 4)
    # Eager reads `hidden` once; the compiled frame read `__dict__` through its own
    # __getattribute__ too, which read it again, 400 frames deep.
    assert Config.reads == ["hidden"], Config.reads[:5]


def test_locals_is_the_frames_own_variables():
    def fn(x, scale=2.0):
        y = x * scale

        def inner():
            return y

        return y + 1, sorted(locals()), vars()["scale"]

    one_graph(fn, torch.randn(3))


def test_a_function_that_reads_its_own_frame_is_not_cut():
    def find_spec(x, fullname="torch"):  # setuptools' _distutils_hack does this
        print("a break before locals()")
        method_name = "spec_for_{fullname}".format(**locals())
        return x + 1, method_name

    report = stage4_fx.explain(find_spec)(torch.randn(3))
    assert [b.kind for b in report.break_reasons] == ["reads_its_own_frame"]
    stage4_fx.reset()
    # a resume function would have run locals() on its own variables: KeyError 'fullname'
    assert_same_as_eager(stage4_fx.compile(find_spec), find_spec, torch.randn(3))


def test_dir_without_arguments_reads_the_frame_and_with_one_does_not():
    def names(x):
        y = x + 1
        print("a break before dir()")
        return y, sorted(dir())  # in a resume function: its arguments' names (___stack0)

    def attributes(x):
        y = x + 1
        print("a break before dir(x)")
        return y * 2, sorted(dir(x)) == sorted(dir(torch.Tensor)), "T" in dir(x)

    report = stage4_fx.explain(names)(torch.randn(3))
    assert [b.kind for b in report.break_reasons] == ["reads_its_own_frame"]
    stage4_fx.reset()
    assert_same_as_eager(stage4_fx.compile(names), names, torch.randn(3))
    report = stage4_fx.explain(attributes)(torch.randn(3))
    assert "reads_its_own_frame" not in [b.kind for b in report.break_reasons]  # still cut
    assert report.graph_count == 2
    stage4_fx.reset()
    assert_same_as_eager(stage4_fx.compile(attributes), attributes, torch.randn(3))


def pick_float(table, _):
    return table[float]


def test_a_resume_function_that_cannot_load_its_values_runs_eagerly_and_says_why():
    # huggingface_hub's type validator had a dict keyed by classes on the stack at a break
    # (those load now); a dict keyed by a tensor cannot be loaded into the VM
    def fn(x):
        y = x + 1
        return y * pick_float({x: 1, float: 2}, print("logged"))  # a tensor key

    compiled = stage4_fx.compile(fn)
    torch.testing.assert_close(compiled(torch.ones(2)), fn(torch.ones(2)))
    report = stage4_fx.explain(fn)(torch.ones(2))
    kinds = [b.kind for b in report.break_reasons]
    assert "stops_in_resume_prologue" in kinds, report


class CacheBase:
    def __init__(self, n):
        self.n = n


class CacheChild(CacheBase):
    def __init__(self, x, scale=2):  # as transformers' DynamicCache.__init__
        layers = [scale]
        print("building")  # a break: the rest of __init__ runs in a resume function ...
        super().__init__(len(layers) * scale)  # ... whose super() reads its first local


def test_super_without_arguments_after_a_break():
    def fn(x):
        return x * CacheChild(x).n

    assert_same_as_eager(stage4_fx.compile(fn), fn, torch.ones(2))
    report = stage4_fx.explain(fn)(torch.ones(2))
    assert not any(b.eager_frame for b in report.break_reasons), report


def test_a_module_built_in_forward_after_torch_compile_ran_is_one_graph():
    """CodeGen's attention calls `nn.Softmax(dim=-1)(x)`. Once torch.compile has run in the
    process, torch's `Module.__init__` also notes each new module for torch.compile
    (`install_generation_tagging_init`, torch/_dynamo/mutation_guard.py), in a table of
    weak references: left out of the trace (torch_api/queries.py), not a break at
    `weakref.ref` (CodeGen: 9 graphs and 7 breaks in a sweep after other models)."""
    from torch._dynamo import mutation_guard

    mutation_guard.install_generation_tagging_init()  # what every torch.compile call does

    def fn(x):
        return torch.nn.Softmax(dim=-1)(x) * 2

    explained = stage4_fx.explain(fn)(torch.randn(3, 4))
    assert (explained.graph_count, explained.graph_break_count) == (1, 0), explained.break_reasons
    assert_same_as_eager(stage4_fx.compile(fn, fullgraph=True), fn, torch.randn(3, 4))


def test_annotations_of_a_nested_function_are_evaluated_as_generic_aliases():
    """`def helper(node, leaves: list[Any])` inside a function (torch's pytree.tree_flatten,
    which Mamba's forward reaches): the definition evaluates `list[Any]`, a generic alias of
    a builtin class, made from the objects its key stands for."""

    def fn(x):
        def helper(a: list[typing.Any], b: dict[str, int]) -> tuple[int, ...]:
            return a

        return x * len(helper([1, 2], {}))

    one_graph(fn, torch.randn(3))


class Level(enum.IntEnum):
    HIGH = 3


def test_a_numpy_function_of_numbers_is_computed_while_tracing():
    """CTRL's `inputs_embeds *= np.sqrt(self.d_model_size)`: a NumPy ufunc of Python numbers is
    a pure function, folded as torch.compile folds it (was a break, and CTRL 3 graphs and 6
    breaks against torch.compile's 2 and 1). Its np.float64 reaches the graph as the float it
    equals, as an IntEnum member does as its int: FX writes constants as source."""
    numpy = pytest.importorskip("numpy")
    width = 32
    one_graph(lambda x: x * numpy.sqrt(width) + Level.HIGH, torch.randn(3))
    # a NumPy bool is no constant of the VM: a break that says so, and eager's answer
    explained = stage4_fx.explain(lambda x: x * numpy.isnan(1.0))(torch.randn(3))
    assert explained.graph_break_count >= 1
    assert "numpy.isnan returned" in str(explained.break_reasons[0])


def test_a_function_that_calls_torch_stack_is_cut_at_a_break():
    """`torch.stack(...)` is no `inspect.stack()`: frame readers are known by what the
    globals hold, not by an attribute's name (Mamba's scan ran eagerly, whole)."""

    def scan(x):
        print("a break")
        return torch.stack([x, x * 2])

    report = stage4_fx.explain(scan)(torch.randn(3))
    assert "reads_its_own_frame" not in [b.kind for b in report.break_reasons]
    assert report.graph_count == 1  # the stack after the break, in the resume function
    stage4_fx.reset()
    assert_same_as_eager(stage4_fx.compile(scan), scan, torch.randn(3))


def test_frame_functions_are_found_under_any_name():
    def by_module(x):
        print("a break")
        return x + 1, len(inspect.stack()) > 0

    def imported(x):
        print("a break")
        return x + 1, here().f_code.co_name  # `here` a global: inspect.currentframe

    for fn in (by_module, imported):
        report = stage4_fx.explain(fn)(torch.randn(3))
        assert "reads_its_own_frame" in [b.kind for b in report.break_reasons], fn
        stage4_fx.reset()
        assert_same_as_eager(stage4_fx.compile(fn), fn, torch.randn(3))


aten = torch.ops.aten  # as torch's own modules alias it (torch/_higher_order_ops)


def test_an_operator_reached_through_an_alias_of_its_namespace_is_recorded():
    """`aten.slice(...)` with `aten` a global alias of `torch.ops.aten`: the namespace and its
    packets are torch's, recorded as ops, not objects whose `__call__` the VM inlines (it
    stopped at the packet's pybind11 function)."""
    packet = aten.slice
    one_graph(lambda x: aten.slice(x, 0, 0, 2) * 2 + packet.Tensor(x, 0, 1, 3), torch.randn(4))


def test_a_function_made_in_the_trace_has_its_annotations():
    """`h.__annotations__` of a function the traced code defines: the dict of its annotations
    (MAKE_FUNCTION's 0x04 tuple), or CPython's empty dict kept for the next read; made again
    with them when it leaves the function."""

    def make(x):
        def annotated(b: int, c: "str" = "x") -> float:
            return b

        def bare(b):
            return b

        bare.__annotations__["z"] = 1
        return x * len(annotated.__annotations__), annotated, bare

    one_graph(lambda x: make(x)[0], torch.randn(3))
    _, annotated, bare = stage4_fx.compile(make, fullgraph=True)(torch.randn(3))
    assert annotated.__annotations__ == {"b": int, "c": "str", "return": float}
    assert bare.__annotations__ == {"z": 1}
