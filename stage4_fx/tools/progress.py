"""Progress a person can see: what is being compiled, which step, how long so far.

A compile that lasts longer than `THRESHOLD_S` shows it on stderr: the function, the step
(tracing, lowering, the C++ compiler, Triton's kernels k of n) and the time so far. On a
terminal that is one line, redrawn in place by tqdm; elsewhere (a CI log, a notebook's
stderr) each step is a plain line, and its count of items one more line at most every
`PLAIN_EVERY_S` and at its last item, so that a log is not a line per kernel. A quick
compile prints nothing. `MINIDYNAMO_PROGRESS=0`
turns it off; `MINIDYNAMO_LOGS` keeps the details of each step.

Stage 4 opens a compile around each frame it converts and around the first call of what
the backend made (stage 6 compiles and tunes its kernels there, on their first launch);
the backends say their steps with `step()`. A compile that starts inside another one (the
forward and backward graphs of a training frame) reports to the outer one's line.
"""

import contextlib
import os
import sys
import time

THRESHOLD_S = 2.0  # a compile quicker than this shows nothing
PLAIN_EVERY_S = 5.0  # off a terminal, a step's count is printed at most this often


def enabled() -> bool:
    return os.environ.get("MINIDYNAMO_PROGRESS", "1") not in ("0", "")


def on_terminal() -> bool:
    return sys.stderr.isatty()


class Progress:
    """One compile's line: `what`, its current step, and how many of its items are done."""

    def __init__(self, what: str):
        self.what, self.started = what, time.perf_counter()
        self.text, self.done, self.total = "starting", 0, None
        self.bar = None  # tqdm's line, on a terminal, once shown
        self.shown = False
        self.printed = (None, 0.0)  # off a terminal: the step last printed, and when

    def update(self, text: str | None = None, done: int | None = None, total: int | None = None):
        if text is not None and text != self.text:
            self.text, self.done, self.total = text, 0, None
        self.done = self.done if done is None else done
        self.total = self.total if total is None else total
        if time.perf_counter() - self.started >= THRESHOLD_S:
            self.show()

    def line(self) -> str:
        count = f" {self.done}/{self.total}" if self.total else ""
        return f"minidynamo: {self.what}: {self.text}{count}"

    def show(self):
        elapsed = time.perf_counter() - self.started
        self.shown = True
        tqdm = _tqdm() if on_terminal() else None
        if tqdm is None:
            step, at = self.printed
            last = self.total is not None and self.done == self.total
            if step != self.text or last or elapsed - at >= PLAIN_EVERY_S:
                print(f"{self.line()} ({elapsed:.1f} s)", file=sys.stderr, flush=True)
                self.printed = (self.text, elapsed)
            return
        if self.bar is None:
            self.bar = tqdm(file=sys.stderr, bar_format="{desc} [{elapsed}]", leave=False)
            self.bar.start_t -= elapsed  # tqdm's clock starts with the compile's
        self.bar.set_description_str(self.line(), refresh=True)

    def close(self):
        if not self.shown:
            return
        if self.bar is not None:
            self.bar.close()
        elapsed = time.perf_counter() - self.started
        print(f"minidynamo: {self.what}: done in {elapsed:.1f} s", file=sys.stderr, flush=True)


def _tqdm():
    """tqdm's progress bar class, imported when a compile is first slow enough to show; None
    where it is not installed (a dependency of minidynamo, but a plain line will do)."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


_current: Progress | None = None  # the outermost compile in progress


@contextlib.contextmanager
def compiling(what: str):
    """A compile the user waits for: shown once it lasts longer than THRESHOLD_S."""
    global _current
    if not enabled() or _current is not None:  # off, or inside another compile: its line
        yield
        return
    _current = progress = Progress(what)
    try:
        yield
    finally:
        _current = None
        progress.close()


def step(text: str, done: int | None = None, total: int | None = None):
    """The compile in progress is at `text` (with `done` of `total` items, where counted)."""
    if _current is not None:
        _current.update(text, done, total)


def advance(text: str, total: int):
    """One more of the `total` items of step `text` is done (a kernel compiled)."""
    if _current is not None:
        done = _current.done + 1 if _current.text == text else 1
        _current.update(text, done, total)
