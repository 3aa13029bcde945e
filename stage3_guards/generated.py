"""Turning generated source text into a function, the way Dynamo and Inductor do.

Stage 3 writes two kinds of functions as Python source: the guard function of
a cache entry and the replay of its trace. Both are printable (the logs and
the docs show them), show up by name in tracebacks (their source goes into
`linecache`), and are marked with `skip_code` so the frame hook never tries to
compile the compiler's own output.
"""

import ast
import itertools
import linecache
import re

from stage1_eval_frame import skip_code
from stage2_symbolic_vm.python.signatures import AST_LOCK  # why: its docstring

_serial = itertools.count()
_sources: list[str] = []  # the linecache entries we made, so that a reset can drop them


def compile_function(source: str, name: str, namespace: dict):
    """Define the function `name` written in `source`, with `namespace` as its globals."""
    filename = f"<minidynamo {name} #{next(_serial)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    _sources.append(filename)
    exec(compile(source, filename, "exec"), namespace)  # our own generated code
    function = namespace[name]
    skip_code(function.__code__)
    return function


def forget_sources():
    """Drop the source text of every function generated so far (a reset gives memory back)."""
    for filename in _sources:
        linecache.cache.pop(filename, None)
    _sources.clear()


def identifier(text: str) -> str:
    """`f`, `MyModule.forward`, `<lambda>` -> a valid Python name to build function names from."""
    name = re.sub(r"[\W_]+", "_", text).strip("_")
    return name if name and not name[0].isdigit() else f"fn_{name}"


def parse(code: str, mode: str = "eval") -> ast.AST:
    """`ast.parse`, one thread at a time (`AST_LOCK`)."""
    with AST_LOCK:
        return ast.parse(code, mode=mode)
