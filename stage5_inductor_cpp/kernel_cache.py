"""Compile C++ with the system compiler, keep the library on disk, load it with ctypes.

A library is named `<key>.<digest>.so`. The key is a hash of everything that decides
its contents (source, compiler, flags, host CPU), so a second process with the same
graph finds it and compiles nothing (torch/_inductor/codecache.py does the same). The
digest is a hash of the key and the library's bytes, checked before the library is
loaded: the loader maps whatever file it is given, and a library cut short (a full
disk, a crash) kills the process with SIGBUS at the first page past its end, while
another graph's library copied over it runs the wrong kernels. A file that does not
match its name is logged, removed and compiled again.

Files are written to a temporary name and renamed with `os.replace`, which is atomic:
a process running in parallel sees no library or a whole one, never half of one. A
temporary is removed on the way out, Ctrl-C included, and nothing reads one.

A cache directory that cannot be written (a read-only HOME, `MINIDYNAMO_CACHE_DIR`
below a file) is replaced by a temporary directory for the process, with one warning.
A missing compiler raises `CompilerNotFound`: backend.py then runs the graphs in torch.
"""

import atexit
import contextlib
import ctypes
import functools
import hashlib
import os
import pathlib
import platform
import shutil
import subprocess
import tempfile
import threading

from stage1_eval_frame.logs import get_logger

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


# ----------------------------------------------------------------------------- the directory

_fallbacks: dict[pathlib.Path, pathlib.Path] = {}  # unusable directory -> this process's own
_fallbacks_lock = threading.Lock()


def cache_dir() -> pathlib.Path:
    """The cache directory, created; a temporary one for this process if it cannot be written."""
    default = pathlib.Path.home() / ".cache" / "minidynamo"
    directory = pathlib.Path(os.environ.get("MINIDYNAMO_CACHE_DIR", default))
    with _fallbacks_lock:
        if directory in _fallbacks:
            return _fallbacks[directory]
        try:
            directory.mkdir(parents=True, exist_ok=True)
            tempfile.TemporaryFile(dir=directory).close()  # mkdir passes on a read-only one
            return directory
        except OSError as error:  # PermissionError, NotADirectoryError, a read-only disk...
            fallback = pathlib.Path(tempfile.mkdtemp(prefix="minidynamo-cache-"))
            atexit.register(shutil.rmtree, fallback, ignore_errors=True)
            log.warning(
                "the kernel cache %s cannot be written (%s): this process uses %s, so the "
                "next one compiles again; set MINIDYNAMO_CACHE_DIR to a writable directory",
                directory, error, fallback,
            )  # fmt: skip
            _fallbacks[directory] = fallback
            return fallback


@contextlib.contextmanager
def temporary_path(directory: pathlib.Path, prefix: str, suffix: str = ".tmp"):
    """A new file's path in `directory`, removed on the way out (an exception or Ctrl-C
    included) unless it was renamed to its final name."""
    fd, name = tempfile.mkstemp(dir=directory, prefix=prefix, suffix=suffix)
    os.close(fd)
    try:
        yield pathlib.Path(name)
    finally:
        with contextlib.suppress(FileNotFoundError):  # renamed: nothing to remove
            os.unlink(name)


def write_atomically(path: pathlib.Path, data: bytes):
    with temporary_path(path.parent, path.name) as tmp:
        tmp.write_bytes(data)
        os.replace(tmp, path)


# ----------------------------------------------------------------------------- the libraries


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


def library_name(key: str, data: bytes) -> str:
    """`<key>.<digest>.so`: the digest covers the key too, so that another graph's library
    renamed with its own digest does not pass either."""
    return f"{key}.{hashlib.sha256(key.encode() + data).hexdigest()[:16]}.so"


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


def cached_library(directory: pathlib.Path, key: str) -> pathlib.Path | None:
    """A library of `key` whose bytes match its name; the others are removed."""
    for path in sorted(directory.glob(f"{key}.*.so")):
        try:
            if library_name(key, path.read_bytes()) == path.name:
                return path
        except FileNotFoundError:  # another process removed it since the glob
            continue
        log.warning(
            "the kernel cache's %s does not match its name (cut short, or another library "
            "copied over it): compiling it again",
            path,
        )
        with contextlib.suppress(FileNotFoundError):  # another process removed it first
            path.unlink()
    return None


def compile_library(source: str, directory: pathlib.Path, key: str) -> pathlib.Path:
    cpp = directory / f"{key}.cpp"
    write_atomically(cpp, source.encode())
    with temporary_path(directory, f"{key}.", ".so.tmp") as tmp:
        command = [compiler(), *FLAGS, str(cpp), "-o", str(tmp), *LIBS]
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
