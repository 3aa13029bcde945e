"""The disk cache: a second process compiles nothing; a missing compiler is one warning."""

import os
import subprocess
import sys

import pytest
import torch

from stage5_inductor_cpp import CompilationError, backend, compile_fx, kernel_cache
from tests.stage5.helpers import kernel_logs

# Its kernel is cpp_fused_sin_mul_relu_0 whatever k is: only the constant differs.
SCRIPT = """
import torch
from stage5_inductor_cpp import compile_fx, kernel_cache
def f(a):
    return (a.sin() * {k}).relu()
x = torch.linspace(-3, 3, 64)
torch.testing.assert_close(compile_fx(torch.fx.symbolic_trace(f), [x])(x), f(x))
print(kernel_cache.stats["compiled"])
"""


def process_env(cache_dir):
    """This environment, with the repository first on the path and the cache in `cache_dir`."""
    env = dict(os.environ, MINIDYNAMO_CACHE_DIR=str(cache_dir))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_script(script, cache_dir) -> subprocess.CompletedProcess:
    """`script` in a new Python process, with the cache in `cache_dir`."""
    return subprocess.run(
        [sys.executable, "-c", script], env=process_env(cache_dir), capture_output=True, text=True
    )


def run_process(cache_dir, k):
    """SCRIPT with `k` in a new process: how many libraries it compiled."""
    out = run_script(SCRIPT.format(k=k), cache_dir)
    assert out.returncode == 0, out.stderr
    return int(out.stdout.split()[-1])


def test_second_process_compiles_nothing(tmp_path):
    assert run_process(tmp_path, 3) == 1
    assert run_process(tmp_path, 3) == 0
    files = [p for p in tmp_path.iterdir() if p.is_file()]  # meta/: stage 2's answers
    assert sorted(p.suffix for p in files) == [".cpp", ".so"]  # no temporary left


def test_parallel_processes_share_the_cache(tmp_path):
    env = process_env(tmp_path)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SCRIPT.format(k=5)], env=env, stdout=subprocess.PIPE
        )
        for _ in range(3)
    ]
    assert all(p.wait() == 0 for p in procs)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


# What the first call imports: torch's Python meta functions import torch._dynamo and sympy.
FIRST_CALL = """
import sys, torch
import stage5_inductor_cpp
def chain(a, b):
    return torch.relu(torch.sin(a) * torch.cos(b) + a * 0.5 - b)
a, b = torch.randn(64), torch.randn(64)
before = set(sys.modules)
result = stage5_inductor_cpp.compile(chain)(a, b)
print(sorted({"torch._dynamo", "sympy"} & (set(sys.modules) - before)))
torch.testing.assert_close(result, chain(a, b))  # which imports sympy itself
"""


def test_a_warm_process_compiles_without_importing_torch_dynamo(tmp_path):
    """Stage 2 keeps the meta answers on disk (its meta_cache.py): the second process
    traces and lowers the same function without torch's Python meta functions."""
    cold = run_script(FIRST_CALL, tmp_path)
    assert cold.returncode == 0, cold.stderr
    assert "torch._dynamo" in cold.stdout
    warm = run_script(FIRST_CALL, tmp_path)
    assert warm.returncode == 0, warm.stderr
    assert warm.stdout == "[]\n"


@pytest.mark.parametrize("how", ["CXX", "PATH"])
def test_without_a_compiler_the_graphs_run_in_torch_after_one_warning(how, tmp_path, monkeypatch):
    """A missing compiler is one message (which compiler, how to get one), not a traceback;
    the program still runs."""
    monkeypatch.setenv("MINIDYNAMO_CACHE_DIR", str(tmp_path))
    if how == "CXX":
        missing = str(tmp_path / "no-such-g++")
        monkeypatch.setenv("CXX", missing)
    else:
        missing = "g++"
        monkeypatch.delenv("CXX", raising=False)
        monkeypatch.setenv("PATH", str(tmp_path))
        backend.warn_once.cache_clear()  # the message names g++, as an earlier test's may have
    with kernel_logs() as messages:
        for fn in (lambda a: a.exp() * 7.25, lambda a: a.exp() * 8.5):
            x = torch.randn(8)
            compiled = compile_fx(torch.fx.symbolic_trace(fn), [x])
            torch.testing.assert_close(compiled(x), fn(x))
            (reason,) = compiled.torch_reasons
            assert repr(missing) in reason and "apt-get install g++" in reason and "CXX" in reason
    assert len([m for m in messages if m.startswith("cannot run the C++ compiler")]) == 1


def test_failing_compiler_shows_its_error(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIDYNAMO_CACHE_DIR", str(tmp_path))
    with pytest.raises(CompilationError, match="failed"):
        kernel_cache.load("this is not C++\n")


def test_cache_directory_is_user_overridable(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIDYNAMO_CACHE_DIR", str(tmp_path / "here"))
    compile_fx(torch.fx.symbolic_trace(lambda a: a.cos() * 3.5), [torch.randn(8)])
    assert list((tmp_path / "here").glob("*.so"))
