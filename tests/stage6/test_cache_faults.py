"""The Triton sources in the kernel cache when things go wrong (stage 5's test_cache_faults.py
has the libraries): a file cut short, a damaged `__pycache__` entry, a directory that cannot
be written."""

import importlib.util
import py_compile

import torch

from stage6_inductor_triton import compile_fx, runtime
from tests.stage5.helpers import assert_lowered, kernel_logs


def compile_and_check(k: float):
    x = torch.linspace(-1, 1, 32)
    compiled = compile_fx(torch.fx.symbolic_trace(lambda a: a.tanh() * k), [x])
    torch.testing.assert_close(compiled(x), x.tanh() * k)
    assert_lowered(compiled)
    return compiled


def test_a_source_cut_short_is_written_again(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIDYNAMO_CACHE_DIR", str(tmp_path))
    path = compile_and_check(1.375).last.path
    source = path.read_text()
    path.write_text(source[: len(source) // 2])  # raised SyntaxError from inside the import
    runtime.load_module.cache_clear()  # as a new process: the module is not loaded yet
    with kernel_logs() as messages:
        compile_and_check(1.375)
    assert path.read_text() == source
    assert any("is not the source it is named after" in m for m in messages)


def test_a_damaged_bytecode_file_of_a_source_is_not_read(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIDYNAMO_CACHE_DIR", str(tmp_path))
    path = compile_and_check(2.625).last.path
    bytecode = importlib.util.cache_from_source(str(path))
    py_compile.compile(str(path), cfile=bytecode)  # what an import writes, unless told not to
    with open(bytecode, "r+b") as f:
        f.truncate(20)  # its header still matches the source: the import trusted it
    runtime.load_module.cache_clear()
    compile_and_check(2.625)


def test_a_cache_directory_below_a_file_is_replaced_for_the_process(tmp_path, monkeypatch):
    (tmp_path / "a_file").write_text("")
    monkeypatch.setenv("MINIDYNAMO_CACHE_DIR", str(tmp_path / "a_file" / "cache"))
    path = compile_and_check(3.125).last.path
    assert not path.is_relative_to(tmp_path) and path.exists()
