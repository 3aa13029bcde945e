"""The disk cache: a second process compiles nothing; a missing compiler says what it ran."""

import os
import subprocess
import sys

import pytest
import torch

from stage5_inductor_cpp import CompilationError, cache, compile_fx

SCRIPT = """
import torch
from stage5_inductor_cpp import cache, compile_fx
def f(a):
    return (a.sin() * {k}).relu()
compile_fx(torch.fx.symbolic_trace(f), [torch.randn(64)])
print(cache.stats["compiled"])
"""


def process_env(cache_dir):
    """This environment, with the repository first on the path and the cache in `cache_dir`."""
    env = dict(os.environ, MINIDYNAMO_CACHE_DIR=str(cache_dir))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_process(cache_dir, k):
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(k=k)],
        env=process_env(cache_dir),
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    return int(out.stdout.split()[-1])


def test_second_process_compiles_nothing(tmp_path):
    assert run_process(tmp_path, 3) == 1
    assert run_process(tmp_path, 3) == 0
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".cpp", ".so"]  # no temporary left


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


def test_missing_compiler_names_the_command_and_the_source(tmp_path, monkeypatch):
    monkeypatch.setenv("CXX", "/nonexistent/g++")
    monkeypatch.setenv("MINIDYNAMO_CACHE_DIR", str(tmp_path))
    with pytest.raises(CompilationError) as error:
        compile_fx(torch.fx.symbolic_trace(lambda a: a.exp() * 7.25), [torch.randn(8)])
    message = str(error.value)
    assert "/nonexistent/g++" in message and ".cpp" in message and "CXX" in message


def test_failing_compiler_shows_its_error(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIDYNAMO_CACHE_DIR", str(tmp_path))
    with pytest.raises(CompilationError, match="failed"):
        cache.load("this is not C++\n")


def test_cache_directory_is_user_overridable(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIDYNAMO_CACHE_DIR", str(tmp_path / "here"))
    compile_fx(torch.fx.symbolic_trace(lambda a: a.cos() * 3.5), [torch.randn(8)])
    assert list((tmp_path / "here").glob("*.so"))
