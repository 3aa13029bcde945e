"""Dynamic shapes in the JIT: a size seen to change becomes a symbol, guarded by relations.

Each test states one rule of stage2_symbolic_vm/dynamic_shapes/shapes.py and stage 3's guards
(torch's automatic dynamic): the first compile is static, a size that changes
makes one more compile with that dim symbolic, sizes 0 and 1 stay static, int
arguments become symbols the same way, `mark_dynamic` / `mark_static` and the
config switches, the guards' text and the recompile reasons.
"""

import sys

import pytest
import torch

import stage2_symbolic_vm
import stage3_guards
from stage3_guards import counters, jit
from tests.oracle import assert_same_as_eager


def rows_times_two(x):
    return x.view(x.size(0), -1) * 2 + x.size(0)


def test_the_first_call_is_static_and_a_new_size_makes_the_dim_dynamic():
    f = jit(rows_times_two)
    assert_same_as_eager(f, rows_times_two, torch.randn(4, 3))
    [static] = f.cache.entries
    assert not static.trace.shapes.active  # meta tensors, no ShapeEnv
    assert_same_as_eager(f, rows_times_two, torch.randn(5, 3))
    assert f.cache.recompile_reasons == [
        "size of local 'x' changed: expected (4, 3), got (5, 3); dim 0 of local 'x' is now dynamic"
    ]
    dynamic = f.cache.entries[0]
    assert dynamic.trace.shapes.active
    assert "size=(s" in str(dynamic.guards.guards[-2])  # TENSOR_MATCH, dim 0 a symbol
    for rows in (6, 9, 100):
        assert_same_as_eager(f, rows_times_two, torch.randn(rows, 3))
    assert counters.compiled == 2


def test_eleven_batch_sizes_compile_twice_where_every_size_recompiled_before():
    f = jit(rows_times_two)
    for rows in range(2, 13):
        assert_same_as_eager(f, rows_times_two, torch.randn(rows, 3))
    assert (counters.compiled, counters.recompiles, counters.eager) == (2, 1, 0)


def scaled_by_rows(x):
    return x * x.size(0)


def test_sizes_0_and_1_stay_static():
    f = jit(scaled_by_rows)
    for rows in (4, 5, 1, 0, 7):
        assert_same_as_eager(f, scaled_by_rows, torch.randn(rows, 3))
    assert counters.compiled == 4  # 4; symbolic (5 and 7); 1; 0
    assert f.cache.recompile_reasons[1:] == [
        "L['x'].size()[0] >= 2 failed: L['x'].size()[0] = 1",  # the symbolic entry's guard
        "size of local 'x' changed: expected (1, 3), got (0, 3)",  # the newest entry's
    ]
    one = f.cache.entries[1].guards
    assert "size=(1, 3)" in str(one.guards[-1]) or "size=(1, 3)" in one.source


def test_the_guards_are_relations_printed_as_source():
    def add_rows(x, y):
        return (x + y).sum(0)

    f = jit(add_rows)
    f(torch.randn(2, 4), torch.randn(2, 4))
    f(torch.randn(3, 4), torch.randn(3, 4))
    guards = f.cache.entries[0].guards
    [shape_guard] = [g for g in guards.guards if g.kind == "SHAPE_ENV"]
    assert shape_guard.code == [
        "L['y'].size()[0] == L['x'].size()[0]",  # `x + y` relied on it
        "L['x'].size()[0] >= 2",
    ]
    assert "L['x'].size()[0] >= 2" in guards.source  # in the generated function, readable
    assert f(torch.randn(7, 4), torch.randn(7, 4)).shape == (4,)
    assert counters.compiled == 2
    with pytest.raises(RuntimeError):  # eager's error, not a wrong answer
        f(torch.randn(7, 4), torch.randn(6, 4))


def test_the_guards_log_shows_them(caplog):
    f = jit(rows_times_two)
    with caplog.at_level("INFO", logger="minidynamo.guards"):
        f(torch.randn(4, 3))
        f(torch.randn(5, 3))
    text = caplog.text
    assert "TENSOR_MATCH: float32, cpu, size=(s" in text
    assert "SHAPE_ENV: L['x'].size()[0] >= 2" in text


def test_the_recompiles_log_says_which_dim_became_dynamic(caplog):
    f = jit(rows_times_two)
    with caplog.at_level("INFO", logger="minidynamo.recompiles"):
        f(torch.randn(4, 3))
        f(torch.randn(5, 3))
    assert "dim 0 of local 'x' is now dynamic" in caplog.text


def branchy(x):
    if x.size(0) > 3:  # a branch on a size: guarded, not a graph break
        return x.sum(0)
    return x * 2


def test_a_branch_on_a_size_is_guarded_and_right_on_both_sides():
    f = jit(branchy)
    for rows in (2, 3, 5, 8, 2, 3, 9):
        assert_same_as_eager(f, branchy, torch.randn(rows, 3))
    assert counters.eager == 0
    assert counters.compiled == 3  # static 2; symbolic with rows <= 3; symbolic with rows > 3
    codes = [g.code for e in f.cache.entries for g in e.guards.guards if g.kind == "SHAPE_ENV"]
    assert ["L['x'].size()[0] >= 4"] in codes
    assert ["2 <= L['x'].size()[0] and L['x'].size()[0] <= 3"] in codes


def scale(x, n):
    return x * n + n


def test_an_int_argument_that_changes_becomes_a_symbol():
    f = jit(scale)
    x = torch.randn(3)
    for n in (2, 3, 4, 10, -7, 1, 0):
        assert_same_as_eager(f, scale, x, n)
    # 2; then one graph for every int: an int is not a size, so the trace assumed nothing
    # about it (no `>= 2`), and 1 and 0 need no graph of their own
    assert counters.compiled == 2
    assert f.cache.recompile_reasons == [
        "value of local 'n' changed: expected 2, got 3; local 'n' is now dynamic"
    ]
    symbolic = f.cache.entries[0]
    assert next(str(g) for g in symbolic.guards.guards if g.source is not None) == (
        "local 'n' TYPE_MATCH: int"
    )  # a type, not a value
    assert_same_as_eager(f, scale, x, 2.5)  # a float is not that int: compiled again
    assert counters.compiled == 3


def scale_by_pair(x, pair):
    return x * pair[0] + pair[1]


def test_an_int_in_a_tuple_argument_becomes_a_symbol_of_its_own():
    f = jit(scale_by_pair)
    x = torch.randn(3)
    for b in (2, 3, 4, 9):
        assert_same_as_eager(f, scale_by_pair, x, (b, 1))
    assert counters.compiled == 2
    assert f.cache.recompile_reasons == [
        "value of item 0 of local 'pair' changed: expected 2, got 3; "
        "item 0 of local 'pair' is now dynamic"
    ]
    guards = [str(g) for g in f.cache.entries[0].guards.guards if g.source is not None]
    assert "item 0 of local 'pair' TYPE_MATCH: int" in guards  # a symbol: its type
    assert "item 1 of local 'pair' CONSTANT_MATCH: 1" in guards  # unchanged: its value
    assert_same_as_eager(f, scale_by_pair, x, (5, 2))  # the constant item changed
    assert counters.compiled == 3


def viewed(x, shape):
    return x.view(*shape) * 2


def test_a_shape_tuple_passed_in_keeps_its_changing_int_symbolic():
    f = jit(viewed)
    for rows in (3, 5, 6, 7):
        assert_same_as_eager(f, viewed, torch.randn(rows * 4), (rows, 4))
    assert counters.compiled == 2
    [shape_guard] = [g for g in f.cache.entries[0].guards.guards if g.kind == "SHAPE_ENV"]
    assert "L['x'].size()[0] == 4*L['shape'][0]" in shape_guard.code


def test_an_int_used_as_a_loop_count_is_specialised_by_its_guard():
    def repeat(x, n):
        for _ in range(n):
            x = x + 1
        return x

    f = jit(repeat)
    for n in (2, 3, 4, 3):
        assert_same_as_eager(f, repeat, torch.zeros(2), n)
    assert counters.compiled == 3  # range(n) needs the number: `L['n'] == 3` is a guard


def test_mark_dynamic_makes_the_first_compile_symbolic():
    f = jit(rows_times_two)
    x = torch.randn(4, 3)
    stage3_guards.mark_dynamic(x, 0)
    assert_same_as_eager(f, rows_times_two, x)
    assert f.cache.entries[0].trace.shapes.active
    for rows in (5, 6, 20):
        assert_same_as_eager(f, rows_times_two, torch.randn(rows, 3))
    assert counters.compiled == 1


def test_torch_s_own_mark_dynamic_is_honoured():
    f = jit(rows_times_two)
    x = torch.randn(4, 3)
    torch._dynamo.mark_dynamic(x, 0)
    f(x)
    f(torch.randn(8, 3))
    assert counters.compiled == 1


def test_mark_static_keeps_a_dim_static():
    f = jit(rows_times_two)
    for rows in (4, 5, 6):
        x = torch.randn(rows, 3)
        stage3_guards.mark_static(x, 0)
        assert_same_as_eager(f, rows_times_two, x)
    assert counters.compiled == 3
    assert not any(entry.trace.shapes.active for entry in f.cache.entries)


def test_mark_dynamic_on_a_dim_the_code_specialises_names_the_line():
    def only_four(x):
        if x.size(0) == 4:
            return x + 1
        return x - 1

    f = jit(only_four)
    x = torch.randn(4, 3)
    stage3_guards.mark_dynamic(x, 0)
    with pytest.raises(stage3_guards.ConstraintViolationError) as error:
        f(x)
    message = str(error.value)
    assert "dim 0 of local 'x' was marked dynamic" in message
    assert f"{__file__}:{only_four.__code__.co_firstlineno + 1}" in message
    assert "if x.size(0) == 4:" in message
    y = torch.randn(5, 3)  # the other side works for every size: no error
    stage3_guards.mark_dynamic(y, 0)
    assert_same_as_eager(f, only_four, y)


def test_a_marked_dim_specialised_by_a_loop_names_the_loop_s_line():
    def per_row(x):
        total = x[0] * 0
        for i in range(x.size(0)):  # range needs the number: the dim is specialised here
            total = total + x[i]
        return total

    x = torch.randn(3, 2)
    stage3_guards.mark_dynamic(x, 0)
    with pytest.raises(stage3_guards.ConstraintViolationError) as error:
        jit(per_row)(x)
    assert f"{__file__}:{per_row.__code__.co_firstlineno + 2}" in str(error.value)
    assert "for i in range(x.size(0)):" in str(error.value)


def test_mark_dynamic_on_a_size_one_dim_is_refused():
    f = jit(rows_times_two)
    x = torch.randn(1, 3)
    stage3_guards.mark_dynamic(x, 0)
    with pytest.raises(stage3_guards.ConstraintViolationError, match="size is 0 or 1"):
        f(x)


def test_assume_static_by_default_off_makes_every_size_a_symbol(monkeypatch):
    monkeypatch.setattr(stage3_guards.config, "assume_static_by_default", False)
    f = jit(rows_times_two)
    for rows, cols in ((4, 3), (5, 6), (9, 2)):
        assert_same_as_eager(f, rows_times_two, torch.randn(rows, cols))
    assert counters.compiled == 1


def test_automatic_dynamic_off_recompiles_every_size(monkeypatch):
    monkeypatch.setattr(stage3_guards.config, "automatic_dynamic_shapes", False)
    f = jit(rows_times_two)
    for rows in (4, 5, 6):
        assert_same_as_eager(f, rows_times_two, torch.randn(rows, 3))
    assert counters.compiled == 3


def upsampled_halves(x):
    # Both ops' C++ kernels read `sizes()`, an int() of every symbol; torch runs them through
    # its Python kernels instead (as GPT-2's `x @ w` of a 3-d `x` in torch 2.11).
    up = torch.nn.functional.interpolate(x, scale_factor=2.0, mode="nearest")
    return torch.unsafe_chunk(up, 2, 0)[0] * x.size(0)


def test_a_composite_op_keeps_its_sizes_symbolic():
    f = jit(upsampled_halves)
    for batch, width in [(2, 3), (4, 5), (6, 7), (8, 2)]:
        assert_same_as_eager(f, upsampled_halves, torch.randn(batch, 3, width))
    assert (counters.compiled, counters.eager) == (2, 0)  # not one compile per size
    [dynamic, _] = f.cache.entries
    [size_guard] = [g for g in dynamic.guards.guards if g.kind == "SHAPE_ENV"]
    assert "L['x'].size()[0] >= 2" in size_guard.code


def times_weight(x, weight):
    return x @ weight.t()


def compiled_over_two_row_counts(linear):
    """`times_weight` compiled and called with 4 rows, then 5: its entry has dim 0 symbolic."""
    f = jit(times_weight)
    for rows in (4, 5):
        f(torch.randn(rows, 3), linear.weight)
    return f


def test_parameters_keep_their_sizes():
    f = compiled_over_two_row_counts(torch.nn.Linear(3, 2))
    shapes = f.cache.entries[0].trace.shapes
    assert [str(source) for source, _ in shapes.tracked] == ["L['x']", "L['weight']"]
    assert [tuple(fake.shape) for _, fake in shapes.tracked][1] == (2, 3)


def test_tensors_with_symbolic_sizes_are_checked_in_cpp_at_once_too():
    """A trace with symbolic sizes checks its tensors in one C++ call, as a static one does,
    with the symbolic dims left out (torch passes None for them); before, a model's hundreds
    of parameters were read dim by dim in Python on every call."""
    linear = torch.nn.Linear(3, 2)
    f = compiled_over_two_row_counts(linear)
    entry = f.cache.entries[0]
    assert entry.trace.shapes.active
    assert "    if not check_tensors(L_x, L_weight):\n" in entry.guards.source
    check_tensors = entry.check.__globals__["check_tensors"]
    assert check_tensors(torch.randn(9, 3), linear.weight)  # the symbolic dim: any size
    assert not check_tensors(torch.randn(9, 4), linear.weight)  # a static dim changed
    assert not check_tensors(torch.randn(9, 3).t().contiguous().t(), linear.weight)  # a stride
    for rows in (6, 7):
        assert_same_as_eager(f, times_weight, torch.randn(rows, 3), linear.weight)
    assert counters.compiled == 2


def test_a_bare_trace_is_static_unless_marked():
    x = torch.randn(4, 3)
    assert not stage2_symbolic_vm.trace(rows_times_two, x).shapes.active
    stage3_guards.mark_dynamic(x, 0)
    trace = stage2_symbolic_vm.trace(rows_times_two, x)
    assert str(trace).splitlines()[:2] == [
        "%0 = input L['x'].size()[0]  # " + str(trace.nodes[0].meta),
        f"%1 = input L['x']  # float32[{trace.nodes[0].meta}, 3]",
    ]


def test_a_static_frame_keeps_the_fast_path(tmp_path):
    """No ShapeEnv for a frame whose sizes never changed: a warm start (meta answers on disk,
    meta_cache.py) imports neither sympy nor torch._dynamo."""
    import os
    import subprocess

    code = (
        "import sys, torch, stage3_guards\n"
        "f = stage3_guards.jit(lambda x: x * 2 + 1)\n"
        "f(torch.ones(3)); f(torch.ones(3))\n"
        "print(f.cache.entries[0].trace.shapes.active, 'sympy' in sys.modules, "
        "'torch._dynamo' in sys.modules)\n"
    )
    env = {**os.environ, "MINIDYNAMO_CACHE_DIR": str(tmp_path)}
    for _ in range(2):  # cold, then warm
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
        )
    assert result.stdout.split() == ["False", "False", "False"], result.stderr
