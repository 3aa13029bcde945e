"""Compile C++ with the system compiler, keep the library on disk, load it with ctypes.

A library's name starts with a key, a hash of everything that decides its contents
(source, compiler, flags, host CPU), so a second process with the same graph finds it and
compiles nothing (torch/_inductor/codecache.py does the same). How the files survive a
crash, a full disk, another process and a read-only home (a digest of the library in its
name, atomic renames, a directory of the process's own) is robustness/cache_files.py.
A missing compiler raises `CompilerNotFound`: backend.py then runs the graphs in torch.
"""

import ctypes
import functools
import hashlib
import os
import pathlib
import platform
import subprocess

from stage1_eval_frame.logs import get_logger
from stage4_fx.tools import progress

from .robustness.cache_files import (
    cache_dir,
    cached_library,
    host_cpu,
    library_name,
    temporary_path,
    write_atomically,
)

log = get_logger("kernels")

FLAGS = [
    "-O3", "-march=native", "-fopenmp", "-std=c++17", "-shared", "-fPIC",
    "-fno-math-errno",  # lets sqrt and the SIMD math calls vectorize; errno is never read
    "-fwrapv",  # integer overflow wraps, as in torch, instead of being undefined
    # Round every op as torch's separate kernels do: g++ would fuse `a * b + c` of two ops
    # into one FMA, whose unrounded product does not overflow (inductor's cpp_builder.py too).
    "-ffp-contract=off",
]  # fmt: skip
LIBS = ["-lmvec"] if platform.system() == "Linux" and platform.machine() == "x86_64" else []

stats = {"compiled": 0, "loaded": 0}  # what the tests count: a warm cache compiles nothing


class CompilationError(RuntimeError):
    """The C++ compiler rejected the generated source."""


class CompilerNotFound(CompilationError):
    """There is no C++ compiler to run: the graphs run in torch instead (backend.py)."""


def compiler() -> str:
    return os.environ.get("CXX", "g++")


def library_key(source: str) -> str:
    text = "\n".join([source, compiler(), *FLAGS, *LIBS, host_cpu()])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@functools.cache
def _load(path: str) -> ctypes.CDLL:
    stats["loaded"] += 1
    return ctypes.CDLL(path)


def load(source: str) -> tuple[ctypes.CDLL, pathlib.Path]:
    """The compiled library of `source` (from the disk cache when it is there) and its path."""
    directory = cache_dir()
    key = library_key(source)
    library = cached_library(directory, key) or compile_library(source, directory, key)
    return _load(str(library)), library


def compile_library(source: str, directory: pathlib.Path, key: str) -> pathlib.Path:
    cpp = directory / f"{key}.cpp"
    write_atomically(cpp, source.encode())
    with temporary_path(directory, f"{key}.", ".so.tmp") as tmp:
        command = [compiler(), *FLAGS, str(cpp), "-o", str(tmp), *LIBS]
        progress.step("the C++ compiler builds the kernels")
        log.info("compiling %s", " ".join(command))
        try:
            result = subprocess.run(command, capture_output=True, text=True)
        except OSError as error:  # not found, not executable
            raise CompilerNotFound(
                f"cannot run the C++ compiler {compiler()!r}: {error.strerror}. The C++ "
                f"backend needs one, with OpenMP: install g++ (`apt-get install g++` on "
                f"Debian or Ubuntu), or set CXX to a compiler's path. Until then the graphs "
                f"run in torch."
            ) from None
        if result.returncode != 0:
            raise CompilationError(
                f"C++ compilation failed (exit {result.returncode}).\n"
                f"  command: {' '.join(command)}\n  source:  {cpp}\n{result.stderr[-3000:]}"
            )
        library = directory / library_name(key, tmp.read_bytes())
        os.replace(tmp, library)
    stats["compiled"] += 1
    return library
