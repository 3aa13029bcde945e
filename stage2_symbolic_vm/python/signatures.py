"""`inspect.signature`, one thread at a time, and the lock every `ast.parse` of ours takes.

CPython 3.11 counts the recursion of `ast.parse` in one counter per interpreter: two
threads parsing at once can interleave, and one raises "SystemError: AST constructor
recursion depth mismatch" (CPython gh-106905; later releases count per call).
`inspect.signature` of a builtin parses its `__text_signature__` with `ast.parse`, so the
VM's and the inductors' signatures go through `signature`; stage 3's guard parses
(generated.py) and stage 6's Triton compiles and interpreted launches, which parse their
kernels' source, take `AST_LOCK` too.
"""

import inspect
import threading

AST_LOCK = threading.RLock()


def signature(fn, **options) -> inspect.Signature:
    """`inspect.signature(fn, **options)` (`follow_wrapped=`, `eval_str=`) under `AST_LOCK`."""
    with AST_LOCK:
        return inspect.signature(fn, **options)
