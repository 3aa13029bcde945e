"""`compile_fx(gm, example_inputs)`: the torch.compile backend (torch/_inductor/compile_fx.py).

`compile_graph` is the pipeline, one specialisation of one graph: lower
(graph_lowering.py) -> fuse (scheduler.py) -> C++ (codegen_cpp.py) -> g++ and the disk
cache (kernel_cache.py) -> a Python wrapper that calls the kernels (wrapper.py).
Stage 6 runs the same function with its Triton writer and loader.

`CompiledGraph` is what the backend returns. The compiled code is specialised to the
inputs' sizes, strides and dtypes (and the values of Python-number inputs); a call with
different ones compiles another specialisation. A graph traced with symbolic sizes
compiles one code for all of them where it can (symbolic/code.py). A call that needs
autograd (an input requires grad, grad mode on) runs a forward and a backward graph,
traced and split by stage 4's training/aot.py, each compiled here (torch's `compile_fx`
hands its graphs to `aot_autograd` the same way); so does a call under autocast, whose
casts the ATen trace writes down (like_eager/autocast.py). Graphs the kernels cannot run
are run by torch, whole: graphs whose writes we cannot follow (into a module's tensors,
into an input that shares memory with another; writes into inputs and their views are
written back, like_eager/functionalize.py), or whose tensors are not on the CPU, and
every graph when there is no C++ compiler (after one warning). Each such reason is
logged once and kept in `CompiledGraph.torch_reasons` (like_eager/in_torch.py).
"""

import ctypes
import dataclasses
import functools
import logging

import torch
import torch.fx

from stage1_eval_frame.logs import get_logger
from stage3_guards import SameArguments
from stage4_fx.training.aot import AotGraph, needs_autograd

from . import kernel_cache
from .codegen_cpp import PRELUDE, CppKernel
from .graph_lowering import GraphLowering
from .ir import ExternKernel
from .like_eager.autocast import enters_autocast, under_autocast
from .like_eager.in_place import shares_written_memory
from .like_eager.in_torch import RunsInTorch, devices_of
from .lowering import EagerOnly
from .performance import graph_cache, memory_plan
from .performance.attention_masks import fusable_attention_masks
from .rules import Rules
from .scheduler import FusedKernel, Scheduler
from .symbolic.code import compile_symbolic
from .training.autograd import TrainingGraphs
from .training.in_torch import as_traced
from .wrapper import WrapperCode

log = get_logger("kernels")


@dataclasses.dataclass
class CompiledCode:
    """One specialisation: the kernels' source, the wrapper source, and the callable."""

    source: str
    wrapper_source: str
    kernel_names: list[str]
    call: object
    path: object = None  # where the compiled kernels are (a library here, a module in stage 6)
    prelude: str = PRELUDE  # the helpers every source starts with
    extern_names: tuple[str, ...] = ()  # the ops that call torch (`matmul`, `cumsum`)
    torch_reason: str | None = None  # why the graph runs in torch instead, if it does
    written_inputs: tuple[int, ...] = ()  # the inputs the kernels write into (in place)
    fits: object = None  # symbolic code (sizes.py): `fits(args)`, whether a call can run it

    @property
    def code(self) -> str:
        """The whole output code, as inductor prints it: wrapper first, then the kernels."""
        if self.torch_reason:
            return self.wrapper_source
        kernels = self.source.removeprefix(self.prelude).strip()
        return f"# {self.path}\n{self.wrapper_source}\n'''\n{kernels}\n'''\n"


def write_cpp(kernels: list[FusedKernel], dtypes) -> tuple[str, dict[str, dict[str, str]]]:
    """The C++ code writer: one source for all kernels, and each kernel's arguments (name ->
    "in", "out" or "size")."""
    writers = [CppKernel(k, dtypes) for k in kernels]
    source = "\n\n".join([PRELUDE, *[w.generate() for w in writers]]) + "\n"
    return source, {k.name: dict(w.args) for k, w in zip(kernels, writers, strict=True)}


def load_cpp(source: str, params: dict[str, dict[str, str]]):
    """The loader: compile `source` (or find it in the disk cache); its kernels, by name."""
    library, path = kernel_cache.load(source)
    kernels = {}
    for name, names in params.items():
        kernels[name] = getattr(library, name)
        # a buffer's address, or a symbol's value (`"size"`, sizes.py)
        argtypes = [
            ctypes.c_int64 if mode == "size" else ctypes.c_void_p for mode in names.values()
        ]
        kernels[name].argtypes, kernels[name].restype = argtypes, None
    return kernels, path


@graph_cache.cached  # a graph compiled by an earlier process is loaded (performance/)
def compile_graph(
    gm: torch.fx.GraphModule,
    args,
    write=write_cpp,
    load=load_cpp,
    *,
    prefix: str = "cpp",
    prelude: str = PRELUDE,
    wrapper=WrapperCode,
    rules: Rules | None = None,
) -> CompiledCode:
    """lower -> fuse -> `write` the kernels -> `load` them -> the `wrapper` that calls them.

    Stage 6 passes its Triton writer, loader, prelude, wrapper and the GPU's `rules`; the
    rest is shared. A writer raises `EagerOnly` for a kernel it cannot write: the graph
    runs in torch.
    """
    try:
        graph = GraphLowering(gm, args, rules).run()
    except EagerOnly as error:
        return runs_in_torch(gm, error)
    verbose = log.isEnabledFor(logging.INFO)
    if verbose:
        log.info("IR before fusion:\n%s", Scheduler(graph, fuse=False, prefix=prefix))
    scheduler = Scheduler(graph, prefix=prefix)
    memory_plan.write_in_place(graph, scheduler.steps)
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
        try:
            loaded, path = load(source, params)
        except kernel_cache.CompilerNotFound as error:
            warn_once(str(error))
            return runs_in_torch(gm, error)
        code.namespace.update(loaded)
    if code.symbols:  # symbolic code: which calls it fits (sizes.py)
        wrapper_source += "\n\n" + code.fits()
    exec(compile(wrapper_source, f"<minidynamo wrapper {id(graph)}>", "exec"), code.namespace)
    externs = tuple(b.op_name for b in graph.buffers if isinstance(b, ExternKernel))
    compiled = CompiledCode(
        source, wrapper_source, [k.name for k in kernels], code.namespace["call"], path, prelude,
        externs, written_inputs=tuple(graph.written_inputs), fits=code.namespace.get("fits"),
    )  # fmt: skip
    log.info("output code:\n%s", compiled.code)
    return compiled


def runs_in_torch(gm: torch.fx.GraphModule, reason) -> CompiledCode:
    """A specialisation that calls the graph module: `CompiledGraph` logs the reason."""
    traced = [node.meta.get("val") for node in gm.graph.nodes if node.op == "placeholder"]
    return CompiledCode(
        "", f"# the graph runs in torch: {reason}", [],
        lambda args: gm(*as_traced(args, traced)), torch_reason=str(reason),
    )  # fmt: skip


# once per message: every graph of a program meets the same missing compiler
warn_once = functools.cache(log.warning)


class CompiledGraph(TrainingGraphs, RunsInTorch):
    """What `compile_fx` returns: call it with the graph's inputs, get the graph's outputs.

    A call the kernels cannot run runs the graph in torch and says why (`ran_in_torch`,
    `device_reason`: like_eager/in_torch.py); a call that needs autograd, or runs under
    autocast, runs the graphs of its ATen trace (`train`: training/autograd.py)."""

    def __init__(self, gm: torch.fx.GraphModule, example_inputs):
        self.gm = fusable_attention_masks(gm)  # before either path reads it
        self.specializations: dict = {}
        self.last: CompiledCode | None = None
        self.same_arguments: SameArguments | None = None  # the last specialisation's check
        self.torch_reasons: list[str] = []  # why calls ran in torch, not in our kernels
        self.training: AotGraph | None = None  # the forward and backward graphs (autograd)
        self.parts: list[CompiledGraph] = []  # their compiled graphs
        self.symbolic: CompiledCode | None = None  # the code for every value of the symbols
        self.per_size_reason: str | None = None  # why a graph with symbols has none
        self.enters_autocast = enters_autocast(gm)
        example_inputs = list(example_inputs)
        if self.through_aten(example_inputs):  # its graphs are compiled at its first call
            return
        if any(isinstance(a, torch.SymInt) for a in example_inputs):
            self.symbolic, self.per_size_reason = compile_symbolic(self, gm, example_inputs)
        else:
            self.specialize(example_inputs)

    def through_aten(self, args) -> bool:
        """A call that needs autograd, or runs under autocast (like_eager/autocast.py), runs
        the graphs of its ATen trace (training/autograd.py)."""
        return needs_autograd(args) or self.enters_autocast or under_autocast()

    def __call__(self, *args):
        if self.through_aten(args):
            return self.train(args)
        compiled = self.specialize(args)
        if compiled is None:
            return self.gm(*args)
        return compiled.call(list(args))

    def compile_graph(self, gm: torch.fx.GraphModule, args) -> CompiledCode:
        """One specialisation's code; stage 6 overrides this to write Triton instead."""
        return compile_graph(gm, args)

    def specialize(self, args) -> CompiledCode | None:
        """The code for these arguments (compiled now if new), or None to run them in torch.

        The last call's specialisation is tried first, checked in C++ (`SameArguments`);
        otherwise the key, which holds every tensor's device, finds or makes one."""
        key = None
        if self.same_arguments is not None and self.same_arguments(args):
            known = self.same_arguments.code
        else:
            key = specialization_key(args)
            known = self.specializations.get(key) if key is not None else None
            if known is None and (reason := self.device_reason(devices_of(args))):
                self.ran_in_torch(reason)
                return None
        if known is None and key is None:
            self.ran_in_torch("an argument is neither a tensor nor a Python number")
            return None
        if known is None and self.symbolic is not None and self.symbolic.fits(args):
            known = self.symbolic  # one code for all sizes: remembered for these by `key`
        if known is None:
            known = self.compile_graph(self.gm, args)
        if key is not None:
            self.specializations.setdefault(key, known)
            self.same_arguments = SameArguments(args, known)
        self.last = known
        if self.last.torch_reason:
            self.ran_in_torch(self.last.torch_reason)
        elif shares_written_memory(args, self.last.written_inputs):
            # out of place, `a.add_(b)` would read b's old values where eager reads new ones
            self.ran_in_torch("an input the graph writes into shares memory with another input")
            return None
        return self.last

    @property
    def code(self) -> str:
        """The output code of the latest specialisation (what `MINIDYNAMO_LOGS=kernels` prints)."""
        if self.last:
            return self.last.code
        return "\n".join(f"# the graph runs in torch: {reason}" for reason in self.torch_reasons)


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


def compile_fx(gm: torch.fx.GraphModule, example_inputs) -> CompiledGraph:
    """The backend, for `torch.compile(fn, backend=compile_fx)` and for FX graphs directly."""
    return CompiledGraph(gm, example_inputs)
