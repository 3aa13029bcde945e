"""A graph's Triton compiles, all at once, in worker processes.

Triton compiles a kernel once for each configuration the tuner tries (autotune.py), at
its first launch: one after another, each a fraction of a second of Python, MLIR, LLVM
and `ptxas`, and a ResNet-50 has over a hundred. Threads do little here, since much of
the compiler holds the GIL. So, as inductor does (torch/_inductor/async_compile.py), worker
processes (compile_worker.py) compile every configuration into Triton's disk cache as soon
as the graph's module is loaded, and each first launch then finds its binary on disk.

What to compile is asked of Triton itself. Each configuration is warmed up with the dtypes
of its arguments under `knobs.runtime.jit_cache_hook`, the hook Triton calls before a
compile; the hook keeps the request (signature, constants, attributes, options) and tells
Triton not to compile it here. That is what `JITFunction.run` compiles for aligned tensors
of those dtypes, the common case; a launch on other arguments (an unaligned view) compiles
its own, as it did without the pool. Kernels that take symbolic sizes are left to their
first launch (their integers' specialisation depends on the values).

The pool only fills a cache. A worker that fails or dies means the kernel compiles in this
process at its first launch, raising there what it raises, as without the pool.
`MINIDYNAMO_COMPILE_WORKERS` sets how many workers (0: none); the default is one per core
this process may use, at most 32 (inductor's `compile_threads`).
"""

import atexit
import json
import os
import queue
import subprocess
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import torch
import triton

from stage1_eval_frame.logs import get_logger
from stage3_guards.generated import AST_LOCK

from .compile_worker import frame, read, write

log = get_logger("kernels")

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compile_worker.py")
stats = {"submitted": 0, "failed": 0}  # what the tests count


def worker_count() -> int:
    wanted = os.environ.get("MINIDYNAMO_COMPILE_WORKERS")
    if wanted is None:
        return min(len(os.sched_getaffinity(0)), 32)
    if not wanted.strip().isdigit():
        raise ValueError(f"MINIDYNAMO_COMPILE_WORKERS={wanted!r}: a number of processes (0: none)")
    return int(wanted)


class CompilePool:
    """Worker processes, each driven by a thread of ours that writes its requests and waits
    for its replies (the wait releases the GIL)."""

    def __init__(self, size: int):
        self.pid = os.getpid()  # a forked child starts its own pool
        self.idle: queue.SimpleQueue = queue.SimpleQueue()  # workers waiting for a request
        self.threads = ThreadPoolExecutor(size, thread_name_prefix="minidynamo-compile")
        self.processes: list[subprocess.Popen] = []
        for _ in range(size):  # started in the background: `import triton` takes a second
            self.threads.submit(self.start_worker)

    def start_worker(self):
        try:
            process = subprocess.Popen(
                [sys.executable, WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE
            )
        except OSError as error:  # no processes to be had: this thread's requests fail
            log.warning("a Triton compile worker did not start: %s", error)
            process = None
        else:
            self.processes.append(process)
        self.idle.put(process)

    def submit(self, request: tuple) -> Future:
        """Compile `request` (compile_worker.py's tuple) in a worker: a Future of None, or of
        the reason it was not compiled there."""
        stats["submitted"] += 1
        return self.threads.submit(self.compile, request)

    def compile(self, request: tuple) -> str | None:
        try:
            message = frame(request)
        except Exception as error:  # a constant pickle cannot write: compiled in the parent
            return f"the request could not be sent ({type(error).__name__}: {error})"
        process = self.idle.get()
        if process is None:
            self.idle.put(None)
            return "no worker process"
        try:
            write(process.stdin, message)
            reply = read(process.stdout)
        except (OSError, EOFError, ValueError) as error:
            # The worker died (a crash, the OOM killer): a new one takes its place, started
            # here, since every other thread may be waiting for a worker.
            process.kill()
            self.start_worker()
            return f"the worker process died ({error})"
        self.idle.put(process)
        return reply

    def close(self):
        for process in self.processes:
            if process.poll() is None:
                process.stdin.close()  # the worker reads the end of its input and exits
        self.threads.shutdown(wait=False, cancel_futures=True)


_pool: CompilePool | None = None
_pool_lock = threading.Lock()


def pool() -> CompilePool | None:
    """The process's pool, started at its first use; None when there are to be no workers."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool.pid != os.getpid():
            size = worker_count()
            if size == 0:
                return None
            _pool = CompilePool(size)
            atexit.register(_pool.close)
        return _pool


_capture_lock = threading.Lock()  # the hook is the process's: one capture at a time


def request_for(kernel, args, config, options: dict, target) -> tuple | None:
    """What `kernel` (a `JITFunction`) launched with `config` on tensors of `args`' dtypes
    (and `args`' integers) would compile: the worker's request, or None if it is compiled
    already in this process."""
    found = []

    def hook(*, fn: "triton.runtime.jit.JitFunctionInfo", compile: dict, **_):
        if fn.jit_function is not kernel:
            return None  # another thread's kernel: compiled as usual
        data = json.loads(compile["specialization_data"])
        # JSON made the options' tuples lists (`JITFunction.preload` turns them back too)
        parsed = {k: tuple(v) if isinstance(v, list) else v for k, v in data["options"].items()}
        found.append((compile["signature"], compile["constants"], compile["configs"][0], parsed))
        return True  # do not compile it here

    # (Triton may parse the kernel's source: AST_LOCK, stage 3's generated.py says why)
    with _capture_lock, AST_LOCK, triton.knobs.runtime.scope():
        triton.knobs.runtime.jit_cache_hook = hook
        kernel.warmup(*args, grid=(1,), **config.meta, num_warps=config.num_warps, **options)
    if not found:
        return None
    signature, constants, attrs, parsed = found[0]
    code = kernel.fn.__code__
    return (code.co_filename, code.co_name, signature, constants, attrs, parsed, target)


def precompile(launchers, options: dict):
    """Start compiling every configuration of `launchers` ((launcher, argument dtypes or
    ints) pairs) in the pool; each launcher keeps its futures (`KernelLauncher.pending`)."""
    workers = pool() if launchers else None
    if workers is None:
        return
    target = triton.runtime.driver.active.get_current_target()
    for launcher, args in launchers:
        for config in launcher.configs_to_compile():
            try:
                request = request_for(launcher.fns[config.looped], args, config, options, target)
            except Exception as error:  # the first launch compiles it, and raises it there
                log.info("%s (%s) is not precompiled: %s", launcher.name, config, error)
                continue
            if request is not None:
                launcher.pending.append(workers.submit(request))


def wait(futures: list[Future]):
    """Wait for the compiles of `futures`; a failed one is compiled again where it is used."""
    for future in futures:
        if (reason := future.result()) is not None:
            stats["failed"] += 1
            log.info("a compile worker did not compile a kernel (%s): compiling it here", reason)
    futures.clear()


def argument_types(names: list[str], dtypes: dict) -> list | None:
    """A kernel's arguments as `warmup` takes them (a torch dtype for each buffer), or None
    for a kernel that takes sizes (the worker's request depends on their values)."""
    types = [dtypes.get(name) for name in names]
    return types if all(isinstance(t, torch.dtype) for t in types) else None
