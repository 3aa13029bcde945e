"""Guards one kind at a time: their text, their code, and that they fail exactly when they must."""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from stage2_symbolic_vm.sources import (
    Assumption,
    BuiltinSource,
    GlobalSource,
    ItemSource,
    LocalSource,
)
from stage3_guards import GUARD_BUILDERS, GuardError, build_guards, failure_reason

X = LocalSource("x")


def guard_for(kind, value, source=X):
    (guard,) = build_guards([Assumption(kind, source)], {"x": value}, {"g": value})
    return guard


def passes(guard, value):
    return guard.failure({"x": value}, {"g": value}, None) is None


# ---------------------------------------------------------------------------
# The printed forms are part of the interface: exact text.


def test_tensor_match_text_and_code():
    guard = guard_for("tensor", torch.zeros(4, 8))
    assert str(guard) == "local 'x' TENSOR_MATCH: float32, cpu, size=(4, 8), stride=(8, 1)"
    assert guard.code == [
        "type(L['x']) is torch.Tensor",
        "L['x'].dtype is torch.float32",
        "L['x'].device == cpu",
        "L['x'].size() == (4, 8)",
        "L['x'].stride() == (8, 1)",
        "L['x'].requires_grad is False",
    ]


def test_tensor_match_mentions_subclasses_and_requires_grad():
    weight = torch.nn.Parameter(torch.zeros(3))
    guard = guard_for("tensor", weight, GlobalSource("g"))
    assert str(guard) == (
        "global 'g' TENSOR_MATCH: Parameter, float32, cpu, size=(3,), stride=(1,), "
        "requires_grad=True"
    )


@pytest.mark.parametrize(
    ("kind", "value", "text", "code"),
    [
        ("type", [1], "local 'x' TYPE_MATCH: list", ["type(L['x']) is list"]),
        ("id", math, "local 'x' ID_MATCH: <module 'math'>", ["L['x'] is math"]),
        ("constant", 3, "local 'x' CONSTANT_MATCH: 3", ["type(L['x']) is int", "L['x'] == 3"]),
        ("constant", True, "local 'x' CONSTANT_MATCH: True", ["L['x'] is True"]),
        ("constant", None, "local 'x' CONSTANT_MATCH: None", ["L['x'] is None"]),
        (
            "constant",
            "ab",
            "local 'x' CONSTANT_MATCH: 'ab'",
            ["type(L['x']) is str", "L['x'] == 'ab'"],
        ),
        ("length", [1, 2], "local 'x' LENGTH_CHECK: 2", ["len(L['x']) == 2"]),
        ("dict_keys", {"a": 1}, "local 'x' DICT_KEYS: ['a']", ["list(L['x'].keys()) == ['a']"]),
    ],
)
def test_guard_text_and_code(kind, value, text, code):
    guard = guard_for(kind, value)
    assert str(guard) == text
    assert guard.code == code


def test_constant_tuple_checks_every_item_by_type_and_value():
    guard = guard_for("constant", (1, 2.5))
    assert guard.code == [
        "type(L['x']) is tuple",
        "len(L['x']) == 2",
        "type(L['x'][0]) is int",
        "L['x'][0] == 1",
        "type(L['x'][1]) is float",
        "L['x'][1] == 2.5",
    ]


def test_global_state_guards():
    (grad, dtype) = build_guards([Assumption("grad_mode"), Assumption("default_dtype")], {}, {})
    assert str(grad) == "GRAD_MODE: enabled"
    assert grad.code == ["torch.is_grad_enabled() is True"]
    assert str(dtype) == "DEFAULT_DTYPE: float32"
    assert dtype.code == ["torch.get_default_dtype() is torch.float32"]
    with torch.no_grad():
        assert grad.failure({}, {}, None) == "grad mode changed: expected enabled, got disabled"
    torch.set_default_dtype(torch.float64)
    try:
        assert dtype.failure({}, {}, None) == (
            "default dtype changed: expected float32, got float64"
        )
    finally:
        torch.set_default_dtype(torch.float32)


def test_every_assumption_kind_has_a_builder():
    assert set(GUARD_BUILDERS) == set(Assumption.KINDS)


# ---------------------------------------------------------------------------
# Recompile reasons: exact text.


@pytest.mark.parametrize(
    ("new", "reason"),
    [
        (torch.zeros(8), "size of local 'x' changed: expected 4, got 8"),
        (torch.zeros(4, 1), "size of local 'x' changed: expected 4, got (4, 1)"),
        (
            torch.zeros(4, dtype=torch.int64),
            "dtype of local 'x' changed: expected float32, got int64",
        ),
        (torch.zeros(8)[::2], "stride of local 'x' changed: expected 1, got 2"),
        (
            torch.zeros(4).requires_grad_(),
            "requires_grad of local 'x' changed: expected False, got True",
        ),
        (
            torch.nn.Parameter(torch.zeros(4)),
            "type of local 'x' changed: expected Tensor, got Parameter",
        ),
        (3, "type of local 'x' changed: expected Tensor, got int"),
    ],
)
def test_tensor_failure_reasons(new, reason):
    assert guard_for("tensor", torch.zeros(4)).failure({"x": new}, {}, None) == reason


def test_failure_reason_of_several_guards_is_the_first_failing_one():
    assumptions = [Assumption("constant", LocalSource("n")), Assumption("tensor", X)]
    L = {"x": torch.zeros(2), "n": 3}
    guards = build_guards(assumptions, L, {})
    assert failure_reason(guards, L, {}, None) is None
    assert failure_reason(guards, {**L, "n": 4}, {}, None) == (
        "value of local 'n' changed: expected 3, got 4"
    )
    assert failure_reason(guards, {**L, "n": 3.0}, {}, None) == (
        "value of local 'n' changed: expected 3, got 3.0"
    )


def test_structure_is_checked_before_items():
    xs = ItemSource(LocalSource("xs"), 0)
    assumptions = [Assumption("tensor", xs), Assumption("length", LocalSource("xs"))]
    assumptions.append(Assumption("type", LocalSource("xs")))
    guards = build_guards(assumptions, {"xs": [torch.zeros(1)]}, {})
    assert [g.kind for g in guards] == ["TYPE_MATCH", "LENGTH_CHECK", "TENSOR_MATCH"]
    assert failure_reason(guards, {"xs": 5}, {}, None) == (
        "type of local 'xs' changed: expected list, got int"
    )


def test_unguardable_constants_are_refused():
    with pytest.raises(GuardError, match="cannot guard on a constant of type object"):
        guard_for("constant", object())


# ---------------------------------------------------------------------------
# Properties: a guard passes on what the trace saw, fails on anything it must not mistake.

dtypes = st.sampled_from([torch.float32, torch.float64, torch.int64, torch.bool, torch.float16])
shapes = st.lists(st.integers(0, 4), max_size=3).map(tuple)


@st.composite
def tensors(draw):
    tensor = torch.zeros(draw(shapes), dtype=draw(dtypes))
    if draw(st.booleans()) and tensor.dim() >= 2:
        tensor = tensor.transpose(0, 1)
    if draw(st.booleans()) and tensor.dtype.is_floating_point:
        tensor.requires_grad_()
    return tensor


def same_metadata(a, b):
    return (type(a), a.dtype, a.device, a.shape, a.stride(), a.requires_grad) == (
        type(b), b.dtype, b.device, b.shape, b.stride(), b.requires_grad
    )  # fmt: skip


@given(tensors(), tensors())
def test_tensor_match_passes_exactly_on_equal_metadata(seen, new):
    guard = guard_for("tensor", seen)
    assert passes(guard, seen.detach().clone().requires_grad_(seen.requires_grad))
    assert passes(guard, new) == same_metadata(seen, new)


constants = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-3, 3),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from([0.0, -0.0, 1.0, 1]),
        st.text("ab", max_size=2),
    ),
    lambda items: st.lists(items, max_size=3).map(tuple),
    max_leaves=5,
)


def identical(a, b):
    """Same types and values all the way down; floats by bits (nan == nan, 0.0 != -0.0)."""
    if type(a) is not type(b):
        return False
    if type(a) is tuple:
        return len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b, strict=False))
    if type(a) is float:
        return math.copysign(1, a) == math.copysign(1, b) and (a == b or (a != a and b != b))
    return a == b


@given(constants, constants)
def test_constant_match_passes_exactly_on_identical_values(seen, new):
    guard = guard_for("constant", seen)
    assert passes(guard, seen)
    assert passes(guard, new) == identical(seen, new)


@given(st.dictionaries(st.one_of(st.text("ab", max_size=2), st.integers(0, 2), st.booleans()),
                       st.none(), max_size=3),
       st.dictionaries(st.one_of(st.text("ab", max_size=2), st.integers(0, 2), st.booleans()),
                       st.none(), max_size=3))  # fmt: skip
def test_dict_keys_match_passes_exactly_on_the_same_keys_in_order(seen, new):
    guard = guard_for("dict_keys", seen)
    same = [(type(k), k) for k in seen] == [(type(k), k) for k in new]
    assert passes(guard, new) == same


@pytest.mark.parametrize(
    ("seen", "same", "different"),
    [
        (range(0, 3), range(3), range(0, 3, 2)),
        (range(0), range(0), range(5, 5)),
        (slice(1, None), slice(1, None), slice(1, None, 1)),
        (1 + 0j, complex(1, 0), complex(1, -0.0)),
        (torch.strided, torch.strided, torch.sparse_coo),
        (torch.channels_last, torch.channels_last, torch.contiguous_format),
        (torch.device("cpu"), torch.device("cpu"), torch.device("meta")),
        (frozenset({"a"}), frozenset({"a"}), frozenset({"b"})),
        (float("inf"), float("inf"), float("-inf")),
        (float("nan"), float("nan"), 0.0),
    ],
)
def test_more_constants(seen, same, different):
    guard = guard_for("constant", seen)
    assert passes(guard, same)
    assert not passes(guard, different)


def test_a_global_may_not_shadow_a_guarded_builtin():
    (guard,) = build_guards([Assumption("id", BuiltinSource("range"))], {}, {})
    assert guard.code == ["'range' not in G", "B.range is range"]
    assert guard.failure({}, {"range": 1}, None) == (
        "shadowing by a global of builtin 'range' changed: expected False, got True"
    )
