"""The progress line of a slow compile (stage4_fx/tools/progress.py): what is compiled, the
step, the time so far; plain lines off a terminal, one redrawn line on one; nothing for a
quick compile or with MINIDYNAMO_PROGRESS=0."""

import pytest
import torch

import stage4_fx
from stage4_fx.tools import progress

pytestmark = pytest.mark.usefixtures("fresh_compiles")


def double_then_add(x):
    return x * 2 + 1


@pytest.fixture
def slow(monkeypatch):
    """Every compile counts as slow: shown from its first step."""
    monkeypatch.setattr(progress, "THRESHOLD_S", 0.0)
    monkeypatch.setenv("MINIDYNAMO_PROGRESS", "1")


def test_a_slow_compile_prints_its_steps_as_plain_lines_off_a_terminal(slow, capsys):
    stage4_fx.compile(double_then_add, backend="eager")(torch.ones(3))
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("minidynamo: compiling double_then_add: tracing (")
    assert "minidynamo: compiling double_then_add: the backend compiles the graph (" in lines[1]
    assert lines[2].startswith("minidynamo: compiling double_then_add: done in ")


def test_the_cpp_compiler_is_a_step(slow, capsys, monkeypatch, tmp_path):
    from stage5_inductor_cpp import compile_fx

    monkeypatch.setenv("MINIDYNAMO_CACHE_DIR", str(tmp_path))  # nothing on disk yet
    stage4_fx.compile(lambda x: (x.sin() + 1).sum(), backend=compile_fx)(torch.ones(3))
    assert ": the C++ compiler builds the kernels (" in capsys.readouterr().err


def test_off_a_terminal_a_count_is_not_a_line_per_item(slow, capsys, monkeypatch):
    monkeypatch.setattr(progress, "PLAIN_EVERY_S", 3600.0)
    with progress.compiling("compiling model"):
        for _ in range(50):
            progress.advance("kernels", 50)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" (")[0] for line in lines[:2]] == [
        "minidynamo: compiling model: kernels 1/50",  # the step begins
        "minidynamo: compiling model: kernels 50/50",  # and ends; nothing between
    ]
    assert len(lines) == 3 and "done in" in lines[2]


def test_on_a_terminal_one_line_is_redrawn(slow, capsys, monkeypatch):
    monkeypatch.setattr(progress, "on_terminal", lambda: True)
    stage4_fx.compile(double_then_add, backend="eager")(torch.ones(3))
    err = capsys.readouterr().err
    assert "\r" in err and "minidynamo: compiling double_then_add: tracing" in err
    assert err.rstrip().splitlines()[-1].startswith("minidynamo: compiling double_then_add: done")


def test_a_quick_compile_and_a_switched_off_one_print_nothing(capsys, monkeypatch):
    stage4_fx.compile(double_then_add, backend="eager")(torch.ones(3))
    monkeypatch.setattr(progress, "THRESHOLD_S", 0.0)
    monkeypatch.setenv("MINIDYNAMO_PROGRESS", "0")
    stage4_fx.compile(double_then_add, backend="eager")(torch.ones(4, 2))
    assert capsys.readouterr().err == ""


def test_a_compile_inside_another_reports_to_its_line(slow, capsys):
    with progress.compiling("compiling outer"):
        progress.step("tracing")
        with progress.compiling("compiling inner"):  # a training frame's forward graph
            progress.advance("kernels", 2)
            progress.advance("kernels", 2)
    err = capsys.readouterr().err
    assert "compiling inner" not in err
    assert "minidynamo: compiling outer: kernels 2/2 (" in err


def test_the_first_call_counts_the_triton_kernels(slow, capsys):
    pytest.importorskip("triton")
    from stage6_inductor_triton import compile_fx

    def two_kernels(x):
        return (x * 2).sum(0) + 1, x.cos()

    stage4_fx.compile(two_kernels, backend=compile_fx)(torch.ones(4, 8))
    err = capsys.readouterr().err
    assert "two_kernels's graph: Triton compiles and tunes the kernels 1/2 (" in err
    assert "two_kernels's graph: Triton compiles and tunes the kernels 2/2 (" in err
