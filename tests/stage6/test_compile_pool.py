"""Kernels compiled in worker processes: the request a worker compiles is the binary the
parent's own compile then finds on Triton's disk cache.

Triton compiles for a GPU target without a GPU (only its compiler and ptxas), so the
workers run here for real; the parent's side of a graph (Triton's hook telling what a
launch would compile) needs the GPU's driver and runs on the GPU machine.
"""

import os

import pytest
import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from stage6_inductor_triton.performance import compile_pool
from stage6_inductor_triton.performance.compile_pool import CompilePool

KERNEL = """
import triton
import triton.language as tl


@triton.jit
def double(in_ptr, out_ptr, n, XBLOCK: tl.constexpr):
    x = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    tl.store(out_ptr + x, tl.load(in_ptr + x, mask=x < n) * 2, mask=x < n)
"""
TARGET = GPUTarget("cuda", 90, 32)
SIGNATURE = {"in_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "XBLOCK": "constexpr"}
ALIGNED = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]}


@pytest.fixture
def workers(tmp_path, monkeypatch):
    """A pool of two workers on an empty Triton cache of this test's own."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    pool = CompilePool(2)
    yield pool
    pool.close()


def module_file(tmp_path, source=KERNEL):
    path = tmp_path / "kernels.py"
    path.write_text(source)
    return str(path)


def request(path, xblock=1024, warps=4, name="double"):
    return (path, name, SIGNATURE, {(3,): xblock}, ALIGNED, {"num_warps": warps}, TARGET)


def compile_here(path, xblock=1024, warps=4):
    """The parent's compile of the same request; whether it found the binary on disk."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"kernels_{xblock}_{warps}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    hits = []
    with triton.knobs.compilation.scope():
        triton.knobs.compilation.listener = lambda **info: hits.append(info["cache_hit"])
        source = ASTSource(module.double, SIGNATURE, {(3,): xblock}, ALIGNED)
        compiled = triton.compile(source, target=TARGET, options={"num_warps": warps})
    return compiled, hits


def test_a_workers_compile_is_found_by_the_parents(workers, tmp_path):
    path = module_file(tmp_path)
    futures = [workers.submit(request(path, xblock)) for xblock in (256, 512, 1024)]
    assert [f.result(timeout=120) for f in futures] == [None, None, None]
    for xblock in (256, 512, 1024):
        compiled, hits = compile_here(path, xblock)
        assert hits == [True], f"XBLOCK={xblock}: compiled again in the parent"
        assert "cubin" in compiled.asm
    _, hits = compile_here(path, 1024, warps=8)  # another configuration: not on disk
    assert hits == [False]


def test_a_compile_error_is_reported_and_the_worker_goes_on(workers, tmp_path):
    broken = module_file(tmp_path, KERNEL.replace("* 2", "* undefined_name"))
    reason = workers.submit(request(broken)).result(timeout=120)
    assert reason is not None and "undefined_name" in reason
    good = tmp_path / "good"
    good.mkdir()
    assert workers.submit(request(module_file(good))).result(timeout=120) is None


def test_a_dead_worker_is_replaced(workers, tmp_path):
    path = module_file(tmp_path)
    assert workers.submit(request(path, 256)).result(timeout=120) is None
    for process in list(workers.processes):
        process.kill()
        process.wait()
    reasons = [workers.submit(request(path, x)).result(timeout=120) for x in (512, 1024)]
    assert all("died" in r for r in reasons)
    # the replacements compile
    assert workers.submit(request(path, 2048)).result(timeout=120) is None
    _, hits = compile_here(path, 2048)
    assert hits == [True]


def test_workers_that_all_die_under_a_queue_of_requests_are_replaced(workers, tmp_path):
    """Every thread may be waiting for a worker when one dies: its replacement is started
    by the thread that saw it die, not queued behind the requests (which would wait
    forever)."""
    path = module_file(tmp_path)
    assert workers.submit(request(path, 128)).result(timeout=120) is None
    for process in list(workers.processes):
        process.kill()
        process.wait()
    futures = [workers.submit(request(path, 2**k)) for k in range(8, 14)]
    reasons = [f.result(timeout=180) for f in futures]
    assert sum(r is not None and "died" in r for r in reasons) == 2
    assert reasons.count(None) == 4


def test_a_request_that_cannot_be_sent_is_reported(workers, tmp_path):
    unpicklable = (module_file(tmp_path), "double", SIGNATURE, {(3,): lambda: 0}, {}, {}, TARGET)
    reason = workers.submit(unpicklable).result(timeout=60)
    assert "could not be sent" in reason
    assert workers.submit(request(module_file(tmp_path))).result(timeout=120) is None


def test_no_workers_when_asked_for_none(monkeypatch):
    monkeypatch.setenv("MINIDYNAMO_COMPILE_WORKERS", "0")
    assert compile_pool.worker_count() == 0
    monkeypatch.setattr(compile_pool, "_pool", None)
    assert compile_pool.pool() is None
    monkeypatch.setenv("MINIDYNAMO_COMPILE_WORKERS", "3")
    assert compile_pool.worker_count() == 3
    monkeypatch.setenv("MINIDYNAMO_COMPILE_WORKERS", "many")
    with pytest.raises(ValueError, match="a number of processes"):
        compile_pool.worker_count()
    monkeypatch.delenv("MINIDYNAMO_COMPILE_WORKERS")
    assert 1 <= compile_pool.worker_count() <= min(32, len(os.sched_getaffinity(0)))


def test_a_buffer_without_a_dtype_or_a_size_argument_is_not_precompiled():
    dtypes = {"buf0": torch.float32, "buf1": torch.bfloat16}
    assert compile_pool.argument_types(["buf0", "buf1"], dtypes) == [torch.float32, torch.bfloat16]
    assert compile_pool.argument_types(["buf0", "s0"], dtypes) is None


@pytest.mark.skipif(not torch.cuda.is_available(), reason="Triton's launch path needs the GPU")
def test_a_graphs_kernels_compile_in_the_workers_and_load_from_disk(monkeypatch):
    """Every configuration the tuner times was compiled by a worker: the parent's compiles
    all find their binaries on disk, and the answers are eager's."""
    import torch.fx

    import stage6_inductor_triton
    from stage6_inductor_triton.performance import autotune

    def fn(x, w):
        return torch.softmax(x * w, dim=-1) + x.sum(-1, keepdim=True).sin()

    monkeypatch.setattr(autotune, "BEST", {})
    args = [torch.randn(512, 3000, device="cuda"), torch.randn(3000, device="cuda")]
    before = dict(compile_pool.stats)
    hits = []
    with triton.knobs.compilation.scope():
        triton.knobs.compilation.listener = lambda **info: hits.append(info["cache_hit"])
        compiled = stage6_inductor_triton.compile_fx(torch.fx.symbolic_trace(fn), args)
        torch.testing.assert_close(compiled(*args), fn(*args), rtol=1e-4, atol=1e-4)
    submitted = compile_pool.stats["submitted"] - before["submitted"]
    assert submitted > 1 and compile_pool.stats["failed"] == before["failed"]
    assert hits and all(hits), f"{hits.count(False)} of {len(hits)} compiled in the parent"


def test_a_graph_of_cpu_tensors_starts_no_workers(monkeypatch):
    """CPU tensors run under the interpreter: nothing to compile, no processes."""
    import torch.fx

    import stage6_inductor_triton

    monkeypatch.setattr(compile_pool, "_pool", None)
    args = [torch.randn(8, 100)]
    compiled = stage6_inductor_triton.compile_fx(torch.fx.symbolic_trace(lambda t: t.sin()), args)
    torch.testing.assert_close(compiled(*args), args[0].sin())
    assert compile_pool._pool is None
