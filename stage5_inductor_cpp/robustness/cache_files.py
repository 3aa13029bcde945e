"""The kernel cache's files when things go wrong: a crash, a full disk, another process.

A library is named `<key>.<digest>.so` (kernel_cache.py makes the key). The digest is a
hash of the key and the library's bytes, checked before the library is loaded: the
loader maps whatever file it is given, and a library cut short (a full disk, a crash)
kills the process with SIGBUS at the first page past its end, while another graph's
library copied over it runs the wrong kernels. A file that does not match its name is
logged, removed and compiled again.

Files are written to a temporary name and renamed with `os.replace`, which is atomic:
a process running in parallel sees no library or a whole one, never half of one. A
temporary is removed on the way out, Ctrl-C included, and nothing reads one.

A library's key holds the host's CPU (`host_cpu`): `-march=native` builds for this CPU, and
a cache shared by two machines (a home directory on a network disk) must not mix them.

A cache directory that cannot be written (a read-only HOME, `MINIDYNAMO_CACHE_DIR`
below a file) is replaced by a temporary directory for the process, with one warning.
"""

import atexit
import contextlib
import functools
import hashlib
import os
import pathlib
import platform
import shutil
import tempfile
import threading

from stage1_eval_frame.logs import get_logger

log = get_logger("kernels")

_fallbacks: dict[pathlib.Path, pathlib.Path] = {}  # unusable directory -> this process's own
_fallbacks_lock = threading.Lock()


@functools.cache
def host_cpu() -> str:
    """`-march=native` builds for this CPU: a cache shared by two machines must not mix them."""
    try:
        text = pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.machine()
    lines = [ln for ln in text.splitlines() if ln.startswith(("model name", "flags"))]
    return platform.machine() + "".join(sorted(set(lines)))


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


def library_name(key: str, data: bytes) -> str:
    """`<key>.<digest>.so`: the digest covers the key too, so that another graph's library
    renamed with its own digest does not pass either."""
    return f"{key}.{hashlib.sha256(key.encode() + data).hexdigest()[:16]}.so"


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
