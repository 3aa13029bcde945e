"""Guard functions' sources kept on disk: a fresh process does not write them again.

`compile_guards` writes a cache entry's guard function from its guards. Writing it parses
every check back into a syntax tree (`SharedReads`, which reads each shared source once):
a ResNet's thousands of checks took a quarter of a warm training start. The source
depends only on what the writer reads of the guards and on the writer's own code, so it
is kept in `$MINIDYNAMO_CACHE_DIR/guards/<hash>.json`, keyed by all of that:

* each guard's checks, its text (the comment above them, without the addresses that
  reprs hold), whether it is a tensor check,
  the names its checks use for objects, and the sources it reads, by type and name,
  down to the local or global each starts from;
* the function's name, and the files of the writer (guard_function.py, generated.py,
  guards.py, and stage 2's sources.py): a change there is a new key.

The file holds its key; a file whose key is another (a clash of hashes), or that is cut
short, is not used and is written again. The objects the checks name are never in the
file: the source is compiled with this process's (torch's FX graph cache keeps code the
same way, apart from the values it runs on).
"""

import hashlib
import json
import pathlib

from stage2_symbolic_vm.performance.meta_cache import directory as meta_directory
from stage2_symbolic_vm.performance.meta_cache import read_kept, write_kept

FORMAT = 1  # changes when the files' meaning does
STAGES = pathlib.Path(__file__).parent.parent.parent
WRITER = hashlib.sha256(
    b"".join(
        (STAGES / name).read_bytes()
        for name in (
            "stage3_guards/guard_function.py",
            "stage3_guards/generated.py",
            "stage3_guards/guards.py",
            "stage2_symbolic_vm/sources.py",  # the sources' names and local names
        )
    )
).hexdigest()
stats = {"written": 0, "from_disk": 0}  # what the tests count


def key_of(guards: list, comments: list[str], function_name: str, tensor_checks: set[int]) -> str:
    """Everything the guard function's source is made of (`comments`: the guards' texts as
    the source writes them; `tensor_checks`: the ids of the guards checked as tensors)."""
    described = []
    for guard, text in zip(guards, comments, strict=True):
        sources, source = [], guard.source
        while source is not None:
            sources.append([type(source).__qualname__, source.name()])
            source = getattr(source, "base", None)
        checks, tensor = list(guard.code), id(guard) in tensor_checks
        described.append([checks, text, tensor, sorted(guard.names), sources])
    return json.dumps([FORMAT, WRITER, function_name, described])


def path_of(key: str) -> pathlib.Path:
    return meta_directory().parent / "guards" / f"{hashlib.sha256(key.encode()).hexdigest()}.json"


def recall(key: str) -> str | None:
    """The source kept for `key`, or None (never written, another key's, or damaged)."""
    source = (read_kept(path_of(key), key) or {}).get("source")
    if not isinstance(source, str):
        return None
    stats["from_disk"] += 1
    return source


def remember(key: str, source: str):
    stats["written"] += 1
    write_kept(path_of(key), key, {"source": source})
