"""Compile C++ with the system compiler, keep the library on disk, load it with ctypes.

The library's name is a hash of everything that decides its contents (source,
compiler, flags, host CPU), so a second process with the same graph finds it and
compiles nothing (torch/_inductor/codecache.py does the same). Files are written
to a temporary name and renamed with `os.replace`, which is atomic: a process
running in parallel sees no library or a whole one, never half of one.
"""

import ctypes
import functools
import hashlib
import os
import pathlib
import platform
import subprocess
import tempfile

from stage1_eval_frame.logs import get_logger

log = get_logger("kernels")

FLAGS = [
    "-O3", "-march=native", "-fopenmp", "-std=c++17", "-shared", "-fPIC",
    "-fno-math-errno",  # lets sqrt and the SIMD math calls vectorize; errno is never read
    "-fwrapv",  # integer overflow wraps, as in torch, instead of being undefined
]  # fmt: skip
LIBS = ["-lmvec"] if platform.system() == "Linux" and platform.machine() == "x86_64" else []

stats = {"compiled": 0, "loaded": 0}  # what the tests count: a warm cache compiles nothing


class CompilationError(RuntimeError):
    """The C++ compiler is missing or rejected the generated source."""


def compiler() -> str:
    return os.environ.get("CXX", "g++")


def cache_dir() -> pathlib.Path:
    default = pathlib.Path.home() / ".cache" / "minidynamo"
    return pathlib.Path(os.environ.get("MINIDYNAMO_CACHE_DIR", default))


@functools.cache
def host_cpu() -> str:
    """`-march=native` builds for this CPU: a cache shared by two machines must not mix them."""
    try:
        text = pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.machine()
    lines = [ln for ln in text.splitlines() if ln.startswith(("model name", "flags"))]
    return platform.machine() + "".join(sorted(set(lines)))


def library_key(source: str) -> str:
    text = "\n".join([source, compiler(), *FLAGS, *LIBS, host_cpu()])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def write_atomically(path: pathlib.Path, data: bytes):
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


@functools.cache
def _load(path: str) -> ctypes.CDLL:
    stats["loaded"] += 1
    return ctypes.CDLL(path)


def load(source: str) -> tuple[ctypes.CDLL, pathlib.Path]:
    """The compiled library of `source` (from the disk cache when it is there) and its path."""
    directory = cache_dir()
    key = library_key(source)
    library = directory / f"{key}.so"
    if not library.exists():
        compile_library(source, directory, key)
    return _load(str(library)), library


def compile_library(source: str, directory: pathlib.Path, key: str):
    directory.mkdir(parents=True, exist_ok=True)
    cpp = directory / f"{key}.cpp"
    write_atomically(cpp, source.encode())
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f"{key}.", suffix=".so.tmp")
    os.close(fd)
    command = [compiler(), *FLAGS, str(cpp), "-o", tmp, *LIBS]
    log.info("compiling %s", " ".join(command))
    try:
        result = subprocess.run(command, capture_output=True, text=True)
    except FileNotFoundError:
        os.unlink(tmp)
        raise CompilationError(
            f"C++ compiler {compiler()!r} not found.\n  command: {' '.join(command)}\n"
            f"  source:  {cpp}\nInstall g++ (with OpenMP) or point the CXX variable at one."
        ) from None
    if result.returncode != 0:
        os.unlink(tmp)
        raise CompilationError(
            f"C++ compilation failed (exit {result.returncode}).\n  command: {' '.join(command)}\n"
            f"  source:  {cpp}\n{result.stderr[-3000:]}"
        )
    os.replace(tmp, directory / f"{key}.so")
    stats["compiled"] += 1
