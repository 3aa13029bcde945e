"""`stage4_fx.disable`, torch's `torch.compiler.disable`, `is_compiling()` and `id()`.

Each program is compared with eager (values, exceptions) and its graph and break counts with
`torch._dynamo.explain` on the same program: never more than torch's.
"""

import pytest
import torch
import torch._dynamo  # imported before any compiled call: torch.compiler.disable imports it

import stage1_eval_frame
import stage4_fx
from stage3_guards import counters
from tests.oracle import assert_same_as_eager

X = torch.randn(4, 3, generator=torch.Generator().manual_seed(0))


pytestmark = pytest.mark.usefixtures("fresh_compiles_here_and_in_torch")


def counts(explain, fn, *args):
    report = explain(fn)(*args)
    return report.graph_count, report.graph_break_count, [str(b) for b in report.break_reasons]


def check(fn, *args, reason=None, torch_fn=None):
    """Same as eager, and no more graphs and breaks than torch.compile (on `torch_fn`, the same
    program with torch's own disable, where ours is one torch does not know)."""
    assert_same_as_eager(lambda: stage4_fx.compile(fn)(*args), lambda: fn(*args))
    ours = counts(stage4_fx.explain, fn, *args)
    theirs = counts(torch._dynamo.explain, torch_fn or fn, *args)
    assert ours[:2] <= theirs[:2] and ours[0] <= theirs[0], (ours, theirs)
    if reason is not None:
        assert any(reason in r for r in ours[2]), ours[2]
    return ours


def nested_def(disable):
    def fn(x):
        @disable
        def h(y):
            return y * 2

        return h(x + 1) + 1

    return fn


@pytest.mark.parametrize(
    "disable",
    [stage4_fx.disable, torch.compiler.disable],
)
def test_a_nested_def_disabled_as_a_decorator(disable):
    by = "stage4_fx.disable" if disable is stage4_fx.disable else "torch.compiler.disable"
    fn = nested_def(disable)
    graphs, breaks, _ = check(
        fn, X, reason=f"`h` is marked disabled ({by})", torch_fn=nested_def(torch.compiler.disable)
    )
    assert (graphs, breaks) == (2, 1)


def helper(y):
    return y.cos() * 2


OURS_AS_CALL = stage4_fx.disable(helper)
TORCHS = torch.compiler.disable(helper)


def test_disable_as_a_call_on_a_global():
    def fn(x):
        return OURS_AS_CALL(x.sin()) + 1

    def torch_fn(x):
        return TORCHS(x.sin()) + 1

    graphs, breaks, _ = check(fn, X, reason="`helper` is marked disabled", torch_fn=torch_fn)
    assert (graphs, breaks) == (2, 1)


def test_a_disabled_function_is_never_compiled():
    """Its frame and, recursively, the frames it calls run with the hook off."""
    seen = []

    @stage4_fx.disable
    def outer(y):
        seen.append(stage1_eval_frame.get_eval_frame())
        return helper(y)

    compiled = stage4_fx.compile(lambda x: outer(x) + 1)
    torch.testing.assert_close(compiled(X), outer(X) + 1)
    assert seen[0] is None
    assert stage1_eval_frame.get_eval_frame() is None
    assert stage4_fx.explain(outer)(X).graph_count == 0


def inner_sin(y):
    return y.sin() + 1


def test_not_recursive_compiles_the_frames_it_calls():
    def make(disable):
        @disable(recursive=False)
        def outer(y):
            return inner_sin(y) * 2

        return lambda x: outer(x + 1) - 1

    ours = check(make(stage4_fx.disable), X, torch_fn=make(torch.compiler.disable))
    assert ours[:2] == (3, 1)  # before, inner_sin (compiled), after


def test_nested_disabled_calls():
    @stage4_fx.disable
    def a(y):
        return b(y) + 1

    @stage4_fx.disable
    def b(y):
        return y * 3

    def make(first):
        return lambda x: first(x.exp()).relu()

    @torch.compiler.disable
    def ta(y):
        return tb(y) + 1

    @torch.compiler.disable
    def tb(y):
        return y * 3

    assert check(make(a), X, torch_fn=make(ta))[:2] == (2, 1)


class WithDisabledMethod(torch.nn.Module):
    def __init__(self, disable):
        super().__init__()
        self.fc = torch.nn.Linear(3, 3)
        self.scale = disable(self.scale_by_two)

    def scale_by_two(self, y):
        return y * 2

    def forward(self, x):
        return self.scale(self.fc(x)).relu()


def test_a_disabled_method_of_a_module():
    ours = WithDisabledMethod(stage4_fx.disable)
    theirs = WithDisabledMethod(torch.compiler.disable)
    theirs.load_state_dict(ours.state_dict())
    graphs, breaks, _ = check(ours, X, reason="`scale_by_two` is marked disabled", torch_fn=theirs)
    assert (graphs, breaks) == (2, 1)


def test_a_disabled_function_that_raises():
    @stage4_fx.disable
    def fails(y):
        raise ValueError("no")

    def fn(x):
        return fails(x + 1)

    with pytest.raises(ValueError, match="no"):
        fn(X)
    with pytest.raises(ValueError, match="no"):
        stage4_fx.compile(fn)(X)


def test_torch_disable_keeps_our_hook_and_compiles_the_resume():
    """torch's wrapper calls torch's set_eval_frame: ours is still in place after it returns,
    so the code after the call is compiled in a resume function; the function it wraps is
    not (the callback sees torch's wrapper as its caller: stage4_fx/compile.py)."""

    @torch.compiler.disable
    def plain(y):
        return y * 2

    def fn(x):
        y = plain(x + 1)
        return y.sin() + 1

    compiled = stage4_fx.compile(fn)
    torch.testing.assert_close(compiled(X), fn(X))
    report = stage4_fx.explain(fn)(X)
    assert (report.graph_count, report.graph_break_count) == (2, 1)


@pytest.mark.parametrize(
    "is_compiling",
    [stage4_fx.is_compiling, torch.compiler.is_compiling, torch._dynamo.is_compiling],
)
def test_is_compiling(is_compiling):
    def fn(x):
        return x + 1 if is_compiling() else x - 1

    assert not is_compiling()
    torch.testing.assert_close(stage4_fx.compile(fn)(X), X + 1)
    torch.testing.assert_close(fn(X), X - 1)
    assert stage4_fx.explain(fn)(X).graph_count == 1


def test_id_of_an_outside_object_is_a_guarded_constant():
    module, items = torch.nn.Linear(3, 3), [1]

    def fn(x, m, xs):
        return x + (id(m) == id(m)) + (id(xs) > 0)

    assert check(fn, X, module, items)[:2] == (1, 0)
    compiled = stage4_fx.compile(fn)
    compiled(X, module, items)
    before = counters.compiled
    compiled(X, torch.nn.Linear(3, 3), items)  # another module: the "id" guard fails
    assert counters.compiled == before + 1


def test_the_number_of_an_id_made_in_the_trace_is_a_break_with_a_reason():
    def fn(x):  # an id made in the trace keys dicts and compares; its number is unknown
        return x + (id([1]) > 0)

    report = stage4_fx.explain(fn)(X)
    assert any("id() made in the trace" in str(b) for b in report.break_reasons)
    torch.testing.assert_close(stage4_fx.compile(fn)(X), fn(X))
