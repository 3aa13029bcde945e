"""The `minidynamo` command: the tour's content, explain's report, and its errors.

Content is checked in-process (`main(argv)` with stdout captured); exit codes and
stderr through a real subprocess, as a user sees them.
"""

import contextlib
import io
import subprocess
import sys
import textwrap

import pytest

from stage6_inductor_triton.tools import cli

SCRIPT = """
import torch

X = torch.linspace(-1, 1, 16)


def scaled(x):
    y = torch.relu(x) * 2
    if y.sum() > 0:
        y = y + 1
    return y.sin()


def main():
    return scaled(X)


def takes_args(x):
    return x


def fails():
    return scaled(X) @ torch.ones(3)
"""


def run_main(*argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(list(argv))
    return code, out.getvalue()


def run_command(*argv):
    return subprocess.run(
        [sys.executable, "-m", "stage6_inductor_triton.tools.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "student_script.py"
    path.write_text(textwrap.dedent(SCRIPT))
    return path


@pytest.fixture(scope="module")
def tour_output():
    code, out = run_main("tour")
    assert code == 0
    return out


def test_tour_has_a_section_per_stage(tour_output):
    for stage in (
        "stage1_eval_frame",
        "stage2_symbolic_vm",
        "stage3_guards",
        "stage4_fx",
        "stage5_inductor_cpp",
        "stage6_inductor_triton",
    ):
        assert stage in tour_output
    assert "Timings" in tour_output and "rough" in tour_output


def test_tour_shows_real_objects(tour_output):
    assert "frame: toy_example(a: float32[64] on cpu" in tour_output  # stage 1
    assert "%1 = torch.abs(%0)" in tour_output and "POP_JUMP" in tour_output  # stage 2
    assert "local 'a' TENSOR_MATCH" in tour_output  # stage 3
    assert "size of local 'a' changed: expected 64, got 128" in tour_output
    assert "Graph Break Count: 1" in tour_output  # stage 4
    assert "branch on the value of tensor" in tour_output
    assert 'extern "C" void cpp_fused_' in tour_output  # stage 5
    assert "@triton.jit" in tour_output and "triton_fused_" in tour_output  # stage 6
    assert "interpreted on the CPU" in tour_output or "compiled for" in tour_output
    assert "Results equal to eager: True" in tour_output


def test_explain_prints_the_full_report(script):
    code, out = run_main("explain", str(script))
    assert code == 0
    for title in cli.SECTIONS.values():
        if title not in ("Frames compiled", "Recompilations"):  # stage 3's jit logs those
            assert title in out, title
    assert "ORIGINAL BYTECODE main" in out and "MODIFIED BYTECODE scaled" in out
    assert "TENSOR_MATCH" in out
    assert "graph breaks: 2" in out  # main is cut at the call, scaled at its branch
    assert "cpp_fused_" in out
    assert "torch.relu" in out  # an FX graph, as Python


def test_missing_file():
    result = run_command("explain", "no/such/script.py")
    assert result.returncode == 2
    assert result.stderr == "minidynamo: error: no such file: no/such/script.py\n"


def test_missing_function_lists_the_functions(script):
    result = run_command("explain", f"{script}:nope")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "no function 'nope'; its functions: scaled, main, takes_args, fails" in result.stderr


def test_a_function_with_arguments_is_refused(script, capsys):
    assert cli.main(["explain", f"{script}:takes_args"]) == 2
    assert "missing a required argument: 'x'" in capsys.readouterr().err


def test_a_script_that_raises_when_called_shows_only_its_frames(script):
    result = run_command("explain", f"{script}:fails")
    assert result.returncode == 1
    assert result.stderr.startswith("Traceback (most recent call last):\n")
    assert f'File "{script}", line 23, in fails\n' in result.stderr
    assert "stage6_inductor_triton" not in result.stderr and "stage4_fx" not in result.stderr
    assert result.stderr.endswith("minidynamo: error: student_script.py raised RuntimeError\n")


def test_a_script_that_raises_at_import(tmp_path, capsys):
    path = tmp_path / "broken.py"
    path.write_text("import torch\n\nraise ValueError('no data file')\n")
    assert cli.main(["explain", str(path)]) == 1
    err = capsys.readouterr().err
    assert f'File "{path}", line 3, in <module>' in err
    assert "ValueError: no data file" in err and "importlib" not in err


@pytest.mark.parametrize(
    "name, content", [("notes.txt", b"this is not python {\n"), ("program", b"\x7fELF\x00\x01")]
)
def test_a_file_that_is_not_python_is_said_so(tmp_path, capsys, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    assert cli.main(["explain", str(path)]) == 1
    err = capsys.readouterr().err
    assert "SyntaxError" in err and "Traceback" not in err and "importlib" not in err
    assert err.endswith(f"minidynamo: error: {name} raised SyntaxError\n")


def test_help_explains_the_commands():
    result = run_command("--help")
    assert result.returncode == 0
    assert "tour" in result.stdout and "explain" in result.stdout
