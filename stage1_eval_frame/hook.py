"""The Python side of the hook: context managers around `set_eval_frame`."""

import contextlib

from ._eval_frame import set_eval_frame


@contextlib.contextmanager
def eval_frame(callback):
    """Show every new Python frame of this thread to `callback` inside the block.

    `callback(frame)` returns None to let the frame run, a callable that is
    called with `frame.slots` instead, or `SKIP` to let it run and not be asked
    about its code object again. The previous callback comes back after.
    """
    previous = set_eval_frame(callback)
    try:
        yield
    finally:
        set_eval_frame(previous)


@contextlib.contextmanager
def disabled():
    """Turn this thread's hook off inside the block (it comes back after)."""
    with eval_frame(None):
        yield
