"""Backends: `backend(gm, example_inputs) -> callable`, exactly torch.compile's protocol.

A backend gets the FX graph of one captured region and real example values of
its inputs, and returns something to call with those inputs instead of the
graph. `eager` returns the graph itself; a user's function may print the
graph, rewrite it (remove dropout) or hand it to a real compiler.

A name means ours first: `eager` and `aot_eager` here, `inductor_cpp` (stage 5)
and `inductor` (stage 6), which register themselves on import or are found by
entry point, since stage 4 may not import them. Only a name we do not have is
looked up in torch's registry, and the `graph` log says, for every graph, which
backend compiled it. torch/_dynamo/backends/registry.py is the original.
"""

import functools
import importlib.metadata
import inspect
from collections.abc import Callable

import torch

from stage1_eval_frame.logs import get_logger
from stage3_guards import CompileError

_BACKENDS: dict[str, Callable] = {}
log = get_logger("graph")

# The names the stages above this one give their backends. They are ours even before their
# stage is imported: they never fall through to torch's registry, where the same names mean
# torch's own compilers.
ABOVE = {"inductor_cpp": "stage5_inductor_cpp", "inductor": "stage6_inductor_triton"}
OUR_PACKAGES = (__package__, *ABOVE.values())
# What to do when a backend of ours does not import (its stage needs a package not installed).
WHEN_MISSING = {
    "inductor": "Stage 6 needs Triton: pip install -e '.[triton]'. Or ask for 'inductor_cpp', "
    "stage 5's C++ inductor, which is what 'inductor' runs for CPU tensors.",
}
OWNERS = {"torch": "torch's", **dict.fromkeys(OUR_PACKAGES, "ours")}  # top-level package -> owner


def register_backend(compiler_fn: Callable | None = None, *, name: str | None = None):
    """Add a backend under `name` (default: the function's name); also a decorator.

    @register_backend
    def my_backend(gm, example_inputs):
        return gm.forward
    """

    def register(fn):
        _BACKENDS[name or fn.__name__] = fn
        return fn

    return register if compiler_fn is None else register(compiler_fn)


def _entry_points() -> dict:
    """Backends installed packages declare (`minidynamo.backends`): the inductors of stages 5
    and 6 are found by name this way, without stage 4 importing them (the layering rule)."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group="minidynamo.backends")}


def owner(module: str) -> str:
    """ "ours", "torch's" or "user's", by the top-level package of a backend's module."""
    return OWNERS.get(module.partition(".")[0], "user's")


def origin(backend: Callable) -> str:
    """Where a backend comes from, as the log and `list_backends()` say it:
    `stage4_fx.backends.eager (ours)`, `torch._inductor.compile_fx.compile_fx (torch's)`."""
    fn = backend.func if isinstance(backend, functools.partial) else backend
    module = getattr(fn, "__module__", None) or type(fn).__module__
    name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    return f"{module}.{name} ({owner(module)})"


def list_backends() -> dict[str, str]:
    """Every backend a name reaches, and where it comes from, ours first, then a user's
    (`register_backend`), then torch's for the names only torch's registry has. torch's
    compilers whose names we took ("inductor", "aot_eager") are reached by their object."""
    found = {name: origin(fn) for name, fn in _BACKENDS.items()}
    for name, entry_point in _entry_points().items():
        declared = f"{entry_point.value}, not imported yet ({owner(entry_point.module)})"
        found.setdefault(name, declared)
    for name in torch._dynamo.list_backends(exclude_tags=()):
        found.setdefault(name, "torch._dynamo's registry (torch's)")
    rank = {"ours": 0, "user's": 1, "torch's": 2}

    def order(item):
        name, where = item
        return rank[where[where.rindex("(") + 1 : -1]], name

    return dict(sorted(found.items(), key=order))


def lookup_backend(backend) -> Callable:
    """A backend from a callable, or from a name: ours (registered, then declared by an entry
    point), then torch's registry for a name we do not have."""
    if callable(backend):
        return backend
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a name or a callable, not {backend!r}")
    if backend not in _BACKENDS and backend in (entry_points := _entry_points()):
        _BACKENDS[backend] = load(entry_points[backend])
    if backend in _BACKENDS:
        return _BACKENDS[backend]
    if backend in ABOVE:
        package = ABOVE[backend]
        raise ValueError(
            f"backend {backend!r} is {package}'s, which has not registered it: stage 4 finds it "
            f"by entry point once minidynamo is installed (pip install -e .), or after "
            f"`import {package}`. torch's own {backend!r} is not used in its place; pass "
            f"torch._dynamo.lookup_backend({backend!r}) if that is the one you want."
        )
    return torch_backend(backend)


def load(entry_point) -> Callable:
    """The backend an entry point declares, or why its package does not import here."""
    try:
        return entry_point.load()
    except ImportError as error:
        raise ImportError(
            f"backend {entry_point.name!r} is {entry_point.value}, which does not import here "
            f"({type(error).__name__}: {error}). {WHEN_MISSING.get(entry_point.name, '')}"
        ) from error


def torch_backend(name: str) -> Callable:
    """A backend only torch's registry has (`"cudagraphs"`), or a clear error."""
    try:
        found = torch._dynamo.lookup_backend(name)
    except torch._dynamo.exc.InvalidBackend as error:
        ours = [name for name, where in list_backends().items() if not where.endswith("(torch's)")]
        raise ValueError(
            f"unknown backend {name!r}: ours are {ours}, and torch's registry does not have it "
            "either. Pass a callable `backend(gm, example_inputs)`, or register one with "
            "`stage4_fx.register_backend`."
        ) from error
    log.info("backend %r is %s: minidynamo has none of that name", name, origin(found))
    return found


def with_mode(backend: Callable, mode: str | None) -> Callable:
    """`backend`, called with `mode=mode` unless the mode is None or "default", as torch's
    `_TorchCompileWrapper` calls it. A backend that lists its `modes` is checked now, and
    one that takes no `mode` is refused now, not at the first graph."""
    if mode in (None, "default"):
        return backend
    name = getattr(backend, "__name__", repr(backend))
    modes = getattr(backend, "modes", None)
    if modes is not None and mode not in modes:
        raise ValueError(f"mode={mode!r}: backend {name!r} has the modes {tuple(modes)}")
    parameters = inspect.signature(backend).parameters.values()
    if modes is None and not any(p.name == "mode" or p.kind is p.VAR_KEYWORD for p in parameters):
        raise ValueError(
            f"mode={mode!r}: backend {name!r} takes no `mode` (torch passes it as a keyword). "
            "Leave mode out, or ask for backend='inductor'."
        )
    return functools.partial(backend, mode=mode)


class BackendCompilerFailed(CompileError):
    """The backend raised while compiling a graph; like torch, we tell the user, not hide it."""

    def __init__(self, backend, error: Exception, where: str):
        name = getattr(backend, "__name__", repr(backend))
        super().__init__(
            f"backend {name!r} raised {type(error).__name__}: {error}\n"
            f"  while compiling the graph of {where}.\n"
            "  Try backend='eager' to check the graph itself, or fix the backend."
        )
        self.backend, self.error = backend, error


@register_backend
def eager(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
    """Run the graph as it is: the FX GraphModule's generated `forward`."""
    return gm.forward


@register_backend
def aot_eager(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
    """AOTAutograd with no compiler, as torch's `aot_eager`: each call's graph is traced to
    ATen ops on fake tensors, functionalised, and split into a forward and a backward
    graph (training/aot.py), which run as they are: a debugging aid that separates a bug
    of the tracing and partition from one of a compiler."""
    # Imported on first use: make_fx and fake tensors pull in sympy and torch._dynamo, a
    # start-up cost that a program using only `eager` should not pay.
    from .training.aot import aot_autograd

    return aot_autograd(gm, run_as_is)


def run_as_is(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
    """`aot_eager`'s compiler (torch: `boxed_nop`): the graph itself. training/aot.py calls
    it with the hook off, since autograd may run the backward graph inside a compiled region."""
    return gm.forward
