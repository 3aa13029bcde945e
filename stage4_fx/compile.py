"""`compile(fn, backend=..., fullgraph=...)`: the frontend of torch.compile, end to end.

While a compiled function runs, the stage-1 hook shows every new frame to
`callback`. User code goes to the stage-3 cache of its code object (one cache
per `compile()` call, so two backends never share entries); a miss calls
`convert_frame` (convert.py). Frames of torch, of the standard library and
of a few packages that are never model code run as they are, as Dynamo's skip
rules decide (torch/_dynamo/trace_rules.py): compiling them would only find
breaks. Other installed packages (`transformers`) are model code: compiled.
Resume functions are user code: they are caught and compiled like any frame.
"""

import dis
import functools
import importlib.util
import os
import sys
import sysconfig
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

import stage1_eval_frame
import stage2_symbolic_vm
import stage3_guards
from stage1_eval_frame import SKIP, clear_skip_marks, set_eval_frame, skip_code
from stage1_eval_frame.logs import get_logger
from stage2_symbolic_vm.torch_api.module_hooks import hooks_of
from stage3_guards import FrameCache, counters
from stage3_guards.generated import forget_sources

from . import fx_graph, resume
from .backends import lookup_backend, with_mode
from .breaks import GraphBreak
from .convert import INSTALLED, CompiledFrame, convert_frame
from .fx_graph import format_graph

bytecode_log = get_logger("bytecode")
graph_log = get_logger("graph")
breaks_log = get_logger("breaks")

_live_options = weakref.WeakSet()


@dataclass(eq=False)
class CompileOptions:
    """What one `compile()` call asked for, its caches, and what it compiled (for explain)."""

    backend: Callable
    fullgraph: bool = False
    dynamic: bool | None = None  # torch's meaning: None automatic, True symbols first, False never
    caches: dict = field(default_factory=dict)  # code -> stage-3 FrameCache
    frames: list[CompiledFrame] = field(default_factory=list)
    breaks: list[GraphBreak] = field(default_factory=list)
    entry_codes: set = field(default_factory=set)  # compiled even if in a library
    disabled_codes: set = field(default_factory=set)  # called by torch's disable: never compiled

    def __post_init__(self):
        _live_options.add(self)
        self.callback = make_callback(self)  # one per compile(): its SKIP marks are its own

    def add_entry_codes(self, *codes):
        """Compile these codes even if they live in a library; a SKIP mark our callback may
        have set on one of them before goes."""
        for code in codes:
            self.entry_codes.add(code)
            clear_skip_marks(code)

    def record_frame(self, entry: CompiledFrame):
        self.frames.append(entry)
        log_frame(entry)

    def record_break(self, code, graph_break: GraphBreak):
        self.breaks.append(graph_break)
        breaks_log.info("graph break in %s:\n%s", code.co_qualname, graph_break)


# Code that is never compiled, as torch/_dynamo/trace_rules.py decides: torch itself, the
# standard library, our own stages, and a few packages that are never model code. Other
# installed packages are compiled: Hugging Face's `transformers` is model code, and a frame
# of it that starts after a graph break deserves a graph of its own. Torch's own
# dependencies (sympy, which `import torch._dynamo` loads, perhaps inside a compiled call)
# are torch's code.
THIRD_PARTY_SKIPS = ("numpy", "pytest", "_pytest", "pluggy", "hypothesis", "tqdm", "pandas")
THIRD_PARTY_SKIPS += ("sympy", "mpmath", "networkx", "filelock", "fsspec", "jinja2", "triton")
THIRD_PARTY_SKIPS += ("typing_extensions",)
_PACKAGES = (torch, stage1_eval_frame, stage2_symbolic_vm, stage3_guards)
_SKIPPED_DIRS = tuple(os.path.dirname(p.__file__) + os.sep for p in _PACKAGES)
_SKIPPED_DIRS += (os.path.dirname(__file__) + os.sep,)
_SKIPPED_DIRS += tuple(
    location + os.sep
    for name in THIRD_PARTY_SKIPS
    if (spec := importlib.util.find_spec(name)) is not None
    for location in spec.submodule_search_locations or ()
)
_STDLIB_DIR = sysconfig.get_paths()["stdlib"] + os.sep
_SITE_DIRS = tuple({sysconfig.get_paths()[k] + os.sep for k in ("purelib", "platlib")})
_is_user_code = weakref.WeakKeyDictionary()  # code -> bool, decided once per code object


def is_user_code(code) -> bool:
    """Is this frame compiled when it starts? Not if it is torch's, the standard library's
    (whose folder may hold site-packages: that part is not), ours, or a skipped package's."""
    if code not in _is_user_code:
        filename = code.co_filename
        stdlib = filename.startswith(_STDLIB_DIR) and not filename.startswith(_SITE_DIRS)
        library = stdlib or filename.startswith(_SKIPPED_DIRS) or filename.startswith("<frozen")
        _is_user_code[code] = not library
    return _is_user_code[code]


def called_by_torch_disable() -> bool:
    """Whether the frame about to start is called by the wrapper of `torch.compiler.disable`
    (torch/_dynamo/eval_frame.py's `_fn`): the callback's caller is that frame's caller."""
    caller = sys._getframe(2).f_code
    return caller.co_name == "_fn" and caller.co_filename == TORCH_EVAL_FRAME


TORCH_EVAL_FRAME = os.path.join(os.path.dirname(torch.__file__), "_dynamo", "eval_frame.py")


def make_callback(options: CompileOptions):
    """The hook's callback for one `compile()` call (torch: `convert_frame.catch_errors`)."""

    def callback(frame):
        cache = options.caches.get(frame.code)
        if cache is None:
            if not is_user_code(frame.code) and frame.code not in options.entry_codes:
                return SKIP  # never compiled: not shown to this callback again
            if frame.code in options.disabled_codes or called_by_torch_disable():
                options.disabled_codes.add(frame.code)  # torch.compiler.disable's function:
                return None  # it runs as it is (torch's wrapper turns off torch's hook, not ours)
            if torch._C._functorch.peek_interpreter_stack() is not None:  # inside eager vmap:
                return None  # functorch's tensors, not traced; the vmap call broke, with why
            convert = functools.partial(convert_frame, options=options)
            cache = FrameCache(frame.code, convert, options.dynamic, options.fullgraph)
            options.caches[frame.code] = cache
        return cache.lookup(frame)

    return callback


def compile(
    fn=None,
    *,
    backend="eager",
    fullgraph: bool = False,
    dynamic: bool | None = None,
    mode: str | None = None,
):
    """Compile a function or an nn.Module; also a decorator, with or without arguments.

    `backend` is a name (`list_backends()`: ours first, then torch's) or a
    callable `backend(gm, example_inputs) -> callable`. With `fullgraph=True`
    the first graph break raises GraphBreakError (where and why) instead of
    splitting the function. `dynamic` is torch's: None makes a size a symbol once it is seen
    to change (automatic dynamic), True makes every size a symbol from the first call, False
    keeps every size static (but those given to `mark_dynamic`). `mode` is passed to the
    backend as `backend(gm, example_inputs, mode=mode)`, as torch passes it, unless it is
    None or "default": `"reduce-overhead"` makes the inductor record CUDA graphs.
    """
    options = CompileOptions(with_mode(lookup_backend(backend), mode), fullgraph, dynamic)
    if fn is None:
        return functools.partial(_wrap, options=options)
    return _wrap(fn, options)


def optimize(backend, nopython: bool = False) -> "OptimizeContext":
    """`torch._dynamo.optimize`, the older spelling of `compile`: `optimize(backend)(fn)`
    compiles `fn` (or a module) as `compile(fn, backend=backend, fullgraph=nopython)` does,
    and `with optimize(backend):` compiles every frame that starts inside the block."""
    return OptimizeContext(CompileOptions(lookup_backend(backend), fullgraph=nopython))


class OptimizeContext:
    """What `optimize` returns: a decorator and a context manager over one set of caches
    (torch: `_TorchDynamoContext` in torch/_dynamo/eval_frame.py)."""

    def __init__(self, options: CompileOptions):
        self.options = options
        self._previous = []  # the callbacks the `with` blocks replaced; they may nest

    def __call__(self, fn):
        return _wrap(fn, self.options)

    def __enter__(self):
        self._previous.append(set_eval_frame(self.options.callback))
        return self

    def __exit__(self, *exc_info):
        set_eval_frame(self._previous.pop())


def _wrap(fn, options: CompileOptions):
    if isinstance(fn, torch.nn.Module):
        return CompiledModule(fn, options)
    if not callable(fn):
        raise TypeError(f"compile() takes a function or an nn.Module, not {type(fn).__name__}")
    code = getattr(fn, "__code__", None)
    if code is not None:  # the function asked for is compiled even if it lives in a library
        options.add_entry_codes(code)
    callback = options.callback

    @functools.wraps(fn)
    def compiled(*args, **kwargs):
        previous = set_eval_frame(callback)
        try:
            return fn(*args, **kwargs)
        finally:
            set_eval_frame(previous)

    skip_code(compiled.__code__)  # the wrapper itself is not user code
    compiled.options = options
    return compiled


class CompiledModule(torch.nn.Module):
    """A module whose calls are compiled (torch: `OptimizedModule`); `_orig_mod` is the original."""

    def __init__(self, module: torch.nn.Module, options: CompileOptions):
        super().__init__()
        self._orig_mod = module
        self.options = options
        forward = getattr(type(module).forward, "__code__", None)
        if forward is not None:  # torch.nn.Sequential's forward lives in torch, yet is the point
            options.add_entry_codes(forward)
        options.add_entry_codes(call_module.__code__)

    def __call__(self, *args, **kwargs):  # not nn.Module's: the wrapper runs no hooks of its own
        return self.forward(*args, **kwargs)

    def forward(self, *args, **kwargs):
        # Not `self._orig_mod`: nn.Module's __getattr__ is a slow path, on every call.
        module = self._modules["_orig_mod"]
        previous = set_eval_frame(self.options.callback)
        try:
            if hooks_of(module):  # compile the hooks with forward, as torch does
                return call_module(module, *args, **kwargs)
            return module(*args, **kwargs)  # nn.Module.__call__ runs forward's frame
        finally:
            set_eval_frame(previous)


def call_module(module, *args, **kwargs):
    """A frame that calls the module: the VM traces nn.Module.__call__, hooks and forward."""
    return module(*args, **kwargs)


skip_code(CompiledModule.forward.__code__)
skip_code(CompiledModule.__call__.__code__)


def reset():
    """Drop every cache: compiled frames, resume functions, counters (torch._dynamo.reset()),
    and give back what compiling took: the compiled graphs put in the user's globals, the
    source text of the generated guard functions."""
    for options in list(_live_options):
        options.caches.clear()
    clear_skip_marks()
    for globals_, name in INSTALLED:
        globals_.pop(name, None)
    INSTALLED.clear()
    resume.clear_cache()
    counters.reset()
    forget_sources()
    fx_graph.forget_sources()


def log_frame(entry: CompiledFrame):
    """MINIDYNAMO_LOGS=bytecode,graph: the classic Dynamo print-out of a compiled frame."""
    name = entry.original.co_qualname
    if bytecode_log.isEnabledFor(20):
        parts = [f"ORIGINAL BYTECODE {name}", dis.Bytecode(entry.original).dis()]
        parts += [f"MODIFIED BYTECODE {name}", dis.Bytecode(entry.code).dis()]
        for resume_fn in entry.resumes:
            parts += [f"RESUME FUNCTION {resume_fn.name}", dis.Bytecode(resume_fn.code).dis()]
        bytecode_log.info("\n".join(parts))
    if graph_log.isEnabledFor(20) and entry.graph is not None:
        graph_log.info("GRAPH of %s\n%s", name, format_graph(entry.graph.gm))
