"""`disable(fn)`: a function that always runs in plain Python, never traced or compiled.

As torch.compiler.disable (torch/_dynamo/decorators.py and eval_frame.py's
`DisableContext`): the VM breaks at a call to it, naming it
(stage2_symbolic_vm/torch_api/disabled.py reads the marks set here, which are torch's),
and when its frame starts the hook is off. With `recursive=True` the hook stays off for
every frame it calls too; with `recursive=False` only its own frame runs uncompiled, and
the frames it calls are compiled as usual.
"""

import functools

import torch

from stage1_eval_frame import get_eval_frame, set_eval_frame
from stage2_symbolic_vm.torch_api.disabled import MARK, OURS


def disable(fn=None, *, recursive: bool = True):
    """Mark `fn` never to be compiled; a decorator too, with or without arguments."""
    if fn is None:
        return functools.partial(disable, recursive=recursive)
    fn = getattr(fn, "_torchdynamo_orig_callable", fn)  # disabled twice is disabled once
    if not callable(fn):
        raise TypeError(f"disable() takes a callable, not {type(fn).__name__}")
    run = _run_without_hook if recursive else _run_first_frame_without_hook

    @functools.wraps(fn)
    def disabled(*args, **kwargs):
        return run(fn, args, kwargs)

    # torch's marks (the VM and torch.compile read them), and ours: whose disable it was
    disabled.__dict__.update({MARK: True, OURS: True, "_torchdynamo_orig_callable": fn})
    disabled._torchdynamo_disable_recursive = recursive
    return disabled


disable.__dict__[OURS] = "decorator"  # the VM traces `disable(h)` inside a compiled function


def _run_without_hook(fn, args, kwargs):
    previous = set_eval_frame(None)
    try:
        return fn(*args, **kwargs)
    finally:
        set_eval_frame(previous)


def _run_first_frame_without_hook(fn, args, kwargs):
    """The first frame `fn` starts runs as it is; the callback is back for the frames it calls
    (torch skips the frame its non-recursive wrapper calls, in convert_frame.py)."""
    previous = get_eval_frame()
    if previous is None:
        return fn(*args, **kwargs)

    def first_frame(frame):
        set_eval_frame(previous)
        return None  # run it

    set_eval_frame(first_frame)
    try:
        return fn(*args, **kwargs)
    finally:
        set_eval_frame(previous)


def is_compiling() -> bool:
    """True while the VM traces the code that asks (it answers `torch.compiler.is_compiling()`
    so: stage2_symbolic_vm/torch_api/queries.py), False when the code runs eagerly."""
    return torch.compiler.is_compiling()
