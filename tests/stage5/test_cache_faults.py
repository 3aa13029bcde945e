"""The kernel cache when things go wrong: damaged or foreign files, a directory that cannot be
written, an interrupted compile, processes racing to build one kernel.

A damaged library can kill the process that maps it (SIGBUS), so the loads run in
subprocesses; each test's cache is a directory of its own.
"""

import subprocess
import sys

import pytest
import torch

from stage5_inductor_cpp import compile_fx, kernel_cache
from tests.stage5.helpers import assert_lowered, kernel_logs
from tests.stage5.test_cache import SCRIPT, process_env, run_script


def libraries(cache_dir) -> set:
    return set(cache_dir.glob("*.so"))


def test_a_library_cut_short_is_compiled_again(tmp_path):
    assert run_script(SCRIPT.format(k=3), tmp_path).stdout == "1\n"
    (library,) = libraries(tmp_path)
    data = library.read_bytes()
    library.write_bytes(data[: len(data) // 2])  # a crash, a full disk: the loader would SIGBUS
    out = run_script(SCRIPT.format(k=3), tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "1\n" and "does not match its name" in out.stderr
    (rebuilt,) = libraries(tmp_path)
    assert rebuilt.stat().st_size == len(data)


def test_another_graphs_library_copied_over_an_entry_is_compiled_again(tmp_path):
    assert run_script(SCRIPT.format(k=3), tmp_path).returncode == 0
    (library,) = libraries(tmp_path)
    assert run_script(SCRIPT.format(k=5), tmp_path).returncode == 0
    (other,) = libraries(tmp_path) - {library}
    library.write_bytes(other.read_bytes())  # same kernel name and signature: a wrong answer
    out = run_script(SCRIPT.format(k=3), tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "1\n" and "does not match its name" in out.stderr


def test_another_graphs_library_renamed_to_an_entrys_key_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIDYNAMO_CACHE_DIR", str(tmp_path))
    source = 'extern "C" int answer() { return 1; }\n'
    _, path = kernel_cache.load(source)
    key = kernel_cache.library_key(source)
    foreign = kernel_cache.library_name("0" * 32, path.read_bytes()).removeprefix("0" * 32)
    (tmp_path / f"{key}{foreign}").write_bytes(path.read_bytes())  # its own digest, our key
    path.unlink()
    assert kernel_cache.cached_library(tmp_path, key) is None


@pytest.mark.parametrize("under", ["MINIDYNAMO_CACHE_DIR", "HOME"])
def test_a_cache_directory_that_cannot_be_written_is_replaced_for_the_process(
    under, tmp_path, monkeypatch
):
    """A directory below a file (as /etc/passwd/x) cannot be made, by root either."""
    (tmp_path / "a_file").write_text("")
    monkeypatch.setenv(under, str(tmp_path / "a_file" / "cache"))
    if under == "HOME":
        monkeypatch.delenv("MINIDYNAMO_CACHE_DIR")
    with kernel_logs() as messages:
        for fn in (lambda a: a.cos() * 1.25, lambda a: a.cos() * 2.5):  # two graphs: one warning
            compiled = compile_fx(torch.fx.symbolic_trace(fn), [torch.ones(8)])
            torch.testing.assert_close(compiled(torch.ones(8)), fn(torch.ones(8)))
            assert_lowered(compiled)
    warnings = [m for m in messages if "cannot be written" in m]
    assert len(warnings) == 1 and "MINIDYNAMO_CACHE_DIR" in warnings[0]
    assert (
        kernel_cache.cache_dir() != tmp_path / "a_file" / "cache"
        and kernel_cache.cache_dir().is_dir()
    )


def test_an_interrupted_compile_leaves_no_temporary_and_the_next_one_works(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIDYNAMO_CACHE_DIR", str(tmp_path))
    source = 'extern "C" int answer() { return 42; }\n'
    key = kernel_cache.library_key(source)
    (tmp_path / f"{key}.x1y2z3.so.tmp").write_bytes(b"left by a process killed in g++")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(kernel_cache.subprocess, "run", interrupted)
        with pytest.raises(KeyboardInterrupt):
            kernel_cache.load(source)
    assert [p.name for p in tmp_path.glob("*.tmp")] == [f"{key}.x1y2z3.so.tmp"]
    library, path = kernel_cache.load(source)  # the stray temporary is not taken for a library
    assert library.answer() == 42 and path.suffix == ".so"


RACE = """
import os, pathlib, sys, time
import torch
from stage5_inductor_cpp import compile_fx
def f(a, b):
    return (a.exp() - b).softmax(-1) * 0.625
x, y = torch.linspace(-2, 2, 96).reshape(8, 12), torch.linspace(0, 1, 12)
print("ready", flush=True)
while not pathlib.Path(sys.argv[1]).exists():
    time.sleep(0.01)
torch.save(compile_fx(torch.fx.symbolic_trace(f), [x, y])(x, y), sys.argv[2])
"""


def test_four_processes_racing_to_build_one_new_kernel_all_get_it(tmp_path):
    cache_dir, go = tmp_path / "cache", tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACE, str(go), str(tmp_path / f"result{i}.pt")],
            env=process_env(cache_dir),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    assert all(p.stdout.readline() == "ready\n" for p in procs)  # imports done: start at once
    go.touch()
    for p in procs:
        assert p.wait() == 0, p.stderr.read()
    x, y = torch.linspace(-2, 2, 96).reshape(8, 12), torch.linspace(0, 1, 12)
    for i in range(4):
        result = torch.load(tmp_path / f"result{i}.pt")
        torch.testing.assert_close(result, (x.exp() - y).softmax(-1) * 0.625)
    assert not list(cache_dir.glob("*.tmp"))
    for library in cache_dir.glob("*.so"):
        key = library.name.split(".")[0]
        assert kernel_cache.library_name(key, library.read_bytes()) == library.name
