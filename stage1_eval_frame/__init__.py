"""Stage 1: a PEP 523 frame evaluator — see every Python frame before it runs.

CPython lets a program replace the function that evaluates frames (PEP 523).
This stage installs one, written in C, that calls a Python callback for each
new Python function frame. The callback may let the frame run, return a
replacement callable whose result becomes the call's, or answer `SKIP`: run
it, and never show me this code object again (a mark in C, so that frames
nobody will compile cost nothing after their first call). TorchDynamo starts
exactly here; so does every later stage.

The core, in reading order:

    _eval_frame.c   the evaluator: each new frame shown to the callback, its answer carried out
    skip_marks.c    the memory of SKIP answers: marks on a code object, one per callback
    hook.py         eval_frame(callback) and disabled(): the hook as context managers
    logs.py         MINIDYNAMO_LOGS=...: one logger per topic, which every stage uses
    __main__.py     python -m stage1_eval_frame: watch a program's frames, then swap one

It has no subpackages: all of it is the idea.

    >>> import stage1_eval_frame as ef
    >>> with ef.eval_frame(lambda frame: print(frame.code.co_name)):
    ...     some_function()
"""

import sys

if not ((3, 11) <= sys.version_info[:2] <= (3, 13)):
    raise ImportError(
        f"minidynamo supports CPython 3.11, 3.12 and 3.13; this is {sys.version.split()[0]}. "
        "Its frame hook reads CPython's internal frame layout, which changes between versions."
    )

from ._eval_frame import (
    SKIP,
    Frame,
    call_unhooked,
    clear_skip_marks,
    evaluator,
    get_eval_frame,
    set_eval_frame,
    skip_code,
    skip_marks,
)
from .hook import disabled, eval_frame

__all__ = [
    "SKIP",
    "Frame",
    "call_unhooked",
    "clear_skip_marks",
    "disabled",
    "eval_frame",
    "evaluator",
    "get_eval_frame",
    "set_eval_frame",
    "skip_code",
    "skip_marks",
]
