"""Backends: `backend(gm, example_inputs) -> callable`, exactly torch.compile's protocol.

A backend gets the FX graph of one captured region and real example values of
its inputs, and returns something to call with those inputs instead of the
graph. `eager` returns the graph itself; a user's function may print the
graph, rewrite it (remove dropout) or hand it to a real compiler; torch's own
backends (`"inductor"`, `"aot_eager"`) are found through torch's registry, so
they work here unchanged. torch/_dynamo/backends/registry.py is the original.
"""

import importlib.metadata
from collections.abc import Callable

import torch

from stage1_eval_frame.logs import get_logger
from stage3_guards import CompileError

_BACKENDS: dict[str, Callable] = {}
log = get_logger("graph")


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


def list_backends() -> list[str]:
    """Our backends: registered, or declared by an installed package (torch's own are
    reachable by name too, see `lookup_backend`)."""
    return sorted(set(_BACKENDS) | set(_entry_points()))


def lookup_backend(backend) -> Callable:
    """A backend from a name or a callable: ours first, then torch's registry."""
    if callable(backend):
        return backend
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a name or a callable, not {backend!r}")
    if backend not in _BACKENDS and backend in (entry_points := _entry_points()):
        _BACKENDS[backend] = entry_points[backend].load()
    if backend in _BACKENDS:
        return _BACKENDS[backend]
    try:
        found = torch._dynamo.lookup_backend(backend)
        log.info("backend %r is torch's own, not minidynamo's", backend)
        return found
    except Exception as error:  # torch raises InvalidBackend (its own class) for unknown names
        raise ValueError(
            f"unknown backend {backend!r}: ours are {list_backends()}, and torch does not know it "
            f"either ({type(error).__name__}). Pass a callable `backend(gm, example_inputs)`, "
            "or register one with `stage4_fx.register_backend`."
        ) from error


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
