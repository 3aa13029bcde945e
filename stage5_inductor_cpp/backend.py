"""`compile_fx(gm, example_inputs)`: the torch.compile backend (torch/_inductor/compile_fx.py).

lower (graph.py) -> fuse (scheduler.py) -> C++ (codegen_cpp.py) -> g++ and the disk
cache (cache.py) -> a Python wrapper that calls the kernels (wrapper.py).

The compiled code is specialised to the inputs' sizes, strides and dtypes (and the
values of Python-number inputs); a call with different ones compiles another
specialisation. Graphs the kernels cannot run are run by torch, whole: graphs that
mutate their inputs, that need autograd, or whose tensors are not on the CPU.
"""

import ctypes
import dataclasses
import logging
import operator

import torch
import torch.fx

from stage1_eval_frame.logs import get_logger

from . import cache
from .codegen_cpp import PRELUDE, CppKernel
from .graph import EagerOnly, GraphLowering
from .scheduler import FusedKernel, Scheduler
from .wrapper import WrapperCode

log = get_logger("kernels")

IN_PLACE_OPERATORS = {
    operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
    operator.imod, operator.ipow, operator.iand, operator.ior, operator.ixor, operator.setitem,
}  # fmt: skip


# operator.and_ & co. end with "_" but do not mutate
OPERATORS = {f for f in vars(operator).values() if callable(f)} - IN_PLACE_OPERATORS


def mutation_in(gm: torch.fx.GraphModule) -> str | None:
    """Why the graph may write to a tensor (our buffers are never aliased), or None."""
    for node in gm.graph.nodes:
        name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
        if node.op in ("call_function", "call_method") and (
            node.target in IN_PLACE_OPERATORS
            or (name.endswith("_") and not name.startswith("_") and node.target not in OPERATORS)
            or "out" in node.kwargs
        ):
            return f"{node.name} ({name}) writes to a tensor in place"
        if node.op == "call_module" and getattr(gm.get_submodule(node.target), "inplace", False):
            return f"{node.name} is an in-place module"
    return None


@dataclasses.dataclass
class CompiledCode:
    """One specialisation: the kernels' source, the wrapper source, and the callable."""

    source: str
    wrapper_source: str
    kernel_names: list[str]
    call: object
    path: object = None  # where the compiled kernels are (a library here, a module in stage 6)
    prelude: str = PRELUDE  # the helpers every source starts with

    @property
    def code(self) -> str:
        """The whole output code, as inductor prints it: wrapper first, then the kernels."""
        kernels = self.source.removeprefix(self.prelude).strip()
        return f"# {self.path}\n{self.wrapper_source}\n'''\n{kernels}\n'''\n"


def specialization_key(args):
    key = []
    for arg in args:
        if isinstance(arg, torch.Tensor):
            key.append((tuple(arg.shape), arg.stride(), arg.dtype, arg.device))
        elif isinstance(arg, (int, float, bool)) or arg is None:
            key.append((type(arg), arg))
        else:
            return None
    return tuple(key)


class CompiledGraph:
    """What `compile_fx` returns: call it with the graph's inputs, get the graph's outputs."""

    def __init__(self, gm: torch.fx.GraphModule, example_inputs):
        self.gm = gm
        self.specializations: dict = {}
        self.last: CompiledCode | None = None
        self.whole_graph_reason = mutation_in(gm)
        if self.whole_graph_reason:
            log.info("running the graph in torch: %s", self.whole_graph_reason)
        else:
            self.specialize(list(example_inputs))

    def eager_reason(self, args) -> str | None:
        if self.whole_graph_reason:
            return self.whole_graph_reason
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if reason := self.device_reason(tensors):
            return reason
        if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
            return "autograd needs the graph (the kernels have no backward)"
        return None

    def device_reason(self, tensors) -> str | None:
        """Why the kernels cannot run on these tensors' devices; stage 6 runs CUDA too."""
        if any(t.device.type != "cpu" for t in tensors):
            return "a tensor is not on the CPU"
        return None

    def compile_graph(self, gm: torch.fx.GraphModule, args) -> CompiledCode:
        """One specialisation's code; stage 6 overrides this to write Triton instead."""
        return compile_graph(gm, args)

    def specialize(self, args):
        if self.eager_reason(args):
            return None
        key = specialization_key(args)
        if key is None:
            return None
        if key not in self.specializations:
            self.specializations[key] = self.compile_graph(self.gm, args)
        self.last = self.specializations[key]
        return self.last

    def __call__(self, *args):
        compiled = self.specialize(args)
        if compiled is None:
            return self.gm(*args)
        return compiled.call(list(args))

    @property
    def code(self) -> str:
        """The output code of the latest specialisation (what `MINIDYNAMO_LOGS=kernels` prints)."""
        return self.last.code if self.last else "# the graph runs in torch"


def compile_fx(gm: torch.fx.GraphModule, example_inputs) -> CompiledGraph:
    """The backend, for `torch.compile(fn, backend=compile_fx)` and for FX graphs directly."""
    return CompiledGraph(gm, example_inputs)


def runs_in_torch(gm: torch.fx.GraphModule, reason) -> CompiledCode:
    log.info("running the graph in torch: %s", reason)
    return CompiledCode("", f"# the graph runs in torch: {reason}", [], lambda args: gm(*args))


def write_cpp(kernels: list[FusedKernel], dtypes) -> tuple[str, dict[str, list[str]]]:
    """The C++ code writer: one source for all kernels, and each kernel's buffer arguments."""
    writers = [CppKernel(k, dtypes) for k in kernels]
    source = "\n\n".join([PRELUDE, *[w.generate() for w in writers]]) + "\n"
    return source, {k.name: list(w.args) for k, w in zip(kernels, writers, strict=True)}


def load_cpp(source: str, params: dict[str, list[str]]):
    """The loader: compile `source` (or find it in the disk cache); its kernels, by name."""
    library, path = cache.load(source)
    kernels = {}
    for name, names in params.items():
        kernels[name] = getattr(library, name)
        kernels[name].argtypes, kernels[name].restype = [ctypes.c_void_p] * len(names), None
    return kernels, path


def compile_graph(
    gm: torch.fx.GraphModule,
    args,
    write=write_cpp,
    load=load_cpp,
    *,
    prefix: str = "cpp",
    prelude: str = PRELUDE,
    wrapper=WrapperCode,
) -> CompiledCode:
    """lower -> fuse -> `write` the kernels -> `load` them -> the `wrapper` that calls them.

    Stage 6 passes its Triton writer, loader, prelude and wrapper; the rest is shared.
    A writer raises `EagerOnly` for a kernel it cannot write: the graph runs in torch.
    """
    try:
        graph = GraphLowering(gm, args).run()
    except EagerOnly as error:
        return runs_in_torch(gm, error)
    verbose = log.isEnabledFor(logging.INFO)
    if verbose:
        log.info("IR before fusion:\n%s", Scheduler(graph, fuse=False, prefix=prefix))
    scheduler = Scheduler(graph, prefix=prefix)
    if verbose:
        log.info("IR after fusion:\n%s", scheduler)
    kernels = [s for s in scheduler.steps if isinstance(s, FusedKernel)]
    dtypes = {
        b.name: b.layout.dtype
        for b in [*graph.inputs, *graph.buffers]
        if b is not None and b.layout
    }
    dtypes.update({name: t.dtype for name, t in graph.constants.items()})
    try:
        source, params = write(kernels, dtypes)
    except EagerOnly as error:  # stage 6's writer meets an op it cannot write in Triton
        return runs_in_torch(gm, error)
    code = wrapper(graph, scheduler, params)
    wrapper_source = code.generate()
    path = None
    if kernels:
        loaded, path = load(source, params)
        code.namespace.update(loaded)
    exec(compile(wrapper_source, f"<minidynamo wrapper {id(graph)}>", "exec"), code.namespace)
    compiled = CompiledCode(
        source, wrapper_source, [k.name for k in kernels], code.namespace["call"], path, prelude
    )
    log.info("output code:\n%s", compiled.code)
    return compiled
