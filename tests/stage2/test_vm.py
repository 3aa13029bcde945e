"""What the VM promises stages 3 and 4: sources, assumptions, and precise stops."""

import math

import pytest
import torch
import torch.nn.functional as F

from stage2_symbolic_vm import BREAK_KINDS, Unsupported, VMState, replay, trace
from stage2_symbolic_vm.sources import Assumption, ClosureSource, GlobalSource, LocalSource
from tests.oracle import assert_equal_values, assert_same_as_eager

W = torch.randn(4)


def kinds(recorded):
    return {(a.kind, a.source.name() if a.source else None) for a in recorded.assumptions}


def check_replay(fn, *args):
    recorded = trace(fn, *args)
    assert_same_as_eager(
        lambda *a: replay(recorded, fn, *a), fn, *args, captured=lambda: recorded.nodes
    )
    return recorded


def test_trace_prints_like_fx():
    def f(x):
        return torch.sin(x) + W

    recorded = check_replay(f, torch.randn(2, 4))
    assert str(recorded).splitlines() == [
        "%0 = input L['x']  # float32[2, 4]",
        "%1 = torch.sin(%0)  # float32[2, 4]",
        "%2 = input G['W']  # float32[4]",
        "%3 = operator.add(%1, %2)  # float32[2, 4]",
        "return %3",
    ]
    assert all(n.meta.device.type == "meta" for n in recorded.nodes)  # no real computation


def test_only_used_arguments_are_assumed():
    def f(x, n, unused, flag):
        return x * n

    recorded = check_replay(f, torch.randn(3), 2, 5, True)
    assert ("constant", "L['n']") in kinds(recorded)
    assert ("tensor", "L['x']") in kinds(recorded)
    assert not any(source in ("L['unused']", "L['flag']") for _, source in kinds(recorded))
    assert Assumption("grad_mode") in recorded.assumptions


def test_containers_types_and_globals_are_assumed():
    def f(xs, d, n):
        total = d["a"]
        for v in xs:
            total = total + v
        return total * isinstance(n, int), helper_scale(total)

    recorded = check_replay(f, [torch.randn(3), torch.randn(3)], {"a": torch.ones(3)}, 4)
    found = kinds(recorded)
    assert {("type", "L['xs']"), ("length", "L['xs']"), ("dict_keys", "L['d']")} <= found
    assert {
        ("type", "L['n']"),
        ("function", "G['helper_scale']"),
        ("tensor", "L['xs'][1]"),
    } <= found
    assert ("constant", "L['n']") not in found  # isinstance needs the type, not the value


def helper_scale(t, k=3):
    return t * k


def test_default_dtype_is_assumed_by_factories_and_int_to_float():
    def f(x):
        return torch.ones(2) + (x * 0.5).sum()

    assert Assumption("default_dtype") in check_replay(f, torch.arange(4)).assumptions


def test_closure_cells_and_module_parameters_have_sources():
    k = torch.randn(4)

    def closure(x):
        return x + k

    assert trace(closure, torch.randn(4)).inputs[1].source == ClosureSource("k", 0)
    check_replay(closure, torch.randn(4))

    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    recorded = check_replay(model.forward, torch.randn(5, 4))
    names = [n.source.name() for n in recorded.inputs]
    assert names[0] == "L['input']" and "F.__self__._modules['0']._parameters['weight']" in names


def test_shapes_dtypes_and_python_control_flow_are_static():
    def f(x):
        if x.dim() == 2 and x.shape[0] > 1 and x.dtype == torch.float32:
            x = F.relu(x)
        for row in x:  # iterating a tensor unrolls over its first dimension
            x = x + row
        return x, x.size(-1), math.floor(x.shape[1] / 3)

    recorded = check_replay(f, torch.randn(3, 4))
    assert recorded.output[1:] == (4, 1)


def test_in_place_ops_on_fresh_tensors_are_recorded():
    def f(x):
        y = x * 2
        y += 1
        y[0] = 0.0
        y.relu_()
        return y

    check_replay(f, torch.randn(3, 4))


def stop(fn, *args) -> Unsupported:
    with pytest.raises(Unsupported) as info:
        trace(fn, *args)
    return info.value


def branch_helper(y):
    z = y * 2
    if z.sum() > 0:
        return z
    return -z


def test_stop_inside_an_inlined_call_keeps_the_root_state_at_the_call():
    def f(x):
        y = x + 1
        return branch_helper(y)

    error = stop(f, torch.randn(3))
    assert error.kind == "data_dependent_branch"
    assert error.lineno == branch_helper.__code__.co_firstlineno + 2
    assert error.filename == __file__ and error.opname.startswith("POP_JUMP")
    assert [loc.function for loc in error.frames] == [
        "test_stop_inside_an_inlined_call_keeps_the_root_state_at_the_call.<locals>.f",
        "branch_helper",
    ]
    state = error.state
    assert isinstance(state, VMState) and state.opname == "CALL"
    assert state.lineno == f.__code__.co_firstlineno + 2
    assert "NULL" in repr(state.stack) and "branch_helper" in repr(
        state.stack
    )  # operands not popped
    assert {"x", "y"} <= set(state.locals)
    assert [str(n) for n in error.trace.nodes][1] == "%1 = operator.add(%0, 1)  # float32[3]"
    assert (
        "y" in str(state) and error.explanation == BREAK_KINDS["data_dependent_branch"].explanation
    )
    kinds = {type(v).__name__ for v in [*state.stack, *state.locals.values()]}
    assert kinds <= {"NullVariable", "UserFunctionVariable", "TensorVariable", "LazyVariable"}


@pytest.mark.parametrize(
    "body, kind",
    [
        (lambda x: x.item(), "item_call"),
        (lambda x: x.tolist(), "item_call"),
        (lambda x: int(x.sum()), "item_call"),
        (lambda x: x.view(torch.tensor(3), -1), "item_call"),  # a size that is a tensor's data
        (lambda x: print(x), "untraceable_call"),
        (lambda x: math.sqrt(x), "untraceable_call"),
        (lambda x: x.nonzero(), "dynamic_shape_op"),
        (lambda x: x[x > 0], "dynamic_shape_op"),
        (lambda x: x + torch.ones(5), "eager_error"),
        (lambda x: x * 2 if x.max() else x, "data_dependent_branch"),
    ],
)
def test_stops_have_a_kind_a_reason_and_a_line(body, kind):
    error = stop(body, torch.randn(3))
    assert error.kind == kind, error
    assert error.kind in BREAK_KINDS and error.reason and error.lineno is not None
    assert error.state.function == "<lambda>"


def test_mutating_an_argument_list_stops():
    def f(xs):
        xs.append(1)
        return xs

    error = stop(f, [torch.ones(1)])
    assert error.kind == "unsupported_mutation" and "local 'xs'" in error.reason


def test_sources_print_as_python_over_L_G_F():
    assert LocalSource("x").name() == "L['x']" and GlobalSource("W").describe() == "global 'W'"


def test_in_place_ops_on_inputs_are_recorded():
    def f(x, y):
        x.add_(1)
        y[0].mul_(2)
        return x

    check_replay(f, torch.randn(3), torch.randn(2, 3))


def test_random_ops_are_recorded_in_program_order():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5))

    def f(x):
        return model(x) + torch.rand(4), torch.randn(2)

    recorded = trace(f, torch.randn(2, 4))
    names = [getattr(n.target, "__name__", n.target) for n in recorded.nodes]
    assert names.index("dropout") < names.index("rand") < names.index("randn")
    torch.manual_seed(0)
    expected = f(torch.ones(2, 4))
    torch.manual_seed(0)
    assert_equal_values(replay(recorded, f, torch.ones(2, 4)), expected)


def test_a_dict_argument_read_only_in_part_is_returned_whole():
    def f(d):
        return {"a": d["a"] * 2, "d": d}, torch.stack(list(d.values()))

    check_replay(f, {"a": torch.ones(2), "b": torch.zeros(2)})
