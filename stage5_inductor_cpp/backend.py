"""`compile_fx(gm, example_inputs)`: the torch.compile backend (torch/_inductor/compile_fx.py).

lower (graph.py) -> fuse (scheduler.py) -> C++ (codegen_cpp.py) -> g++ and the disk
cache (cache.py) -> a Python wrapper that calls the kernels (wrapper.py).

The compiled code is specialised to the inputs' sizes, strides and dtypes (and the
values of Python-number inputs); a call with different ones compiles another
specialisation. A call that needs autograd (an input requires grad, grad mode on) runs
a forward and a backward graph, traced and split by stage 4's aot.py, each compiled
here (torch's `compile_fx` hands its graphs to `aot_autograd` the same way). Graphs the
kernels cannot run are run by torch, whole: graphs whose writes we cannot follow (into a
module's tensors, into an input that shares memory with another; writes into inputs and
their views are written back, functionalize.py), that run under autocast, or whose
tensors are not on the CPU, and every graph when there is no C++ compiler (after one
warning). Each such reason is logged once and kept in `CompiledGraph.torch_reasons`.
"""

import collections
import ctypes
import dataclasses
import functools
import logging

import torch
import torch.fx
import torch.utils._pytree as pytree

from stage1_eval_frame.logs import get_logger
from stage3_guards import SameArguments, config
from stage4_fx.training.aot import AotGraph, aot_autograd, needs_autograd

from . import kernel_cache
from .codegen_cpp import PRELUDE, CppKernel
from .graph_lowering import EagerOnly, GraphLowering, LoweringError
from .ir import ExternKernel
from .like_eager.layouts import same_elements
from .scheduler import FusedKernel, Scheduler
from .symbolic.sizes import SymbolicUnsupported, symbols_of
from .training.aten import DECOMPOSITIONS, as_torch_calls
from .wrapper import WrapperCode

log = get_logger("kernels")
recompile_log = get_logger("recompiles")


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


def devices_of(args) -> set[torch.device]:
    return {a.device for a in args if isinstance(a, torch.Tensor)}


def cpu_scalars(args) -> tuple[torch.device | None, tuple[int, ...]]:
    """The one device other than the CPU, and where 0-dim CPU tensors sit among its tensors:
    eager takes them as numbers there, and so do inductor's kernels; ours read them from
    the device, so they are copied there for the call (`on_device`)."""
    others = {a.device for a in args if isinstance(a, torch.Tensor) and a.device.type != "cpu"}
    if len(others) != 1:
        return None, ()
    positions = tuple(
        i
        for i, a in enumerate(args)
        if isinstance(a, torch.Tensor) and a.device.type == "cpu" and a.dim() == 0
    )
    return next(iter(others)), positions


def on_device(args, positions, device) -> list:
    """`args`, with the CPU scalars at `positions` copied to `device`."""
    moved = list(args)
    for i in positions:
        moved[i] = torch.empty((), dtype=args[i].dtype, device=device).copy_(args[i])
    return moved


def as_caller_sees(call, args, positions, device):
    """`call(*args)` run with the CPU scalars at `positions` on `device`, as if run on
    `args`: a scalar the graph writes into is written back into the caller's tensor, and
    an output that shares memory with one is that view of the caller's tensor."""
    moved = on_device(args, positions, device)
    versions = [moved[i]._version for i in positions]
    result = call(*moved)
    for i, version in zip(positions, versions, strict=True):
        if moved[i]._version != version:  # written in place (our wrappers bump it, as eager)
            args[i].copy_(moved[i])
    copies = {moved[i].untyped_storage().data_ptr(): args[i] for i in positions}

    def original(value):
        if isinstance(value, torch.Tensor) and value.untyped_storage().data_ptr() in copies:
            base = copies[value.untyped_storage().data_ptr()]
            return base.as_strided(value.shape, value.stride(), value.storage_offset())
        return value

    return pytree.tree_map(original, result)


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
        self.same_arguments: SameArguments | None = None  # the last specialisation's check
        self.torch_reasons: list[str] = []  # why calls ran in torch, not in our kernels
        self.training: AotGraph | None = None  # the forward and backward graphs (autograd)
        self.parts: list[CompiledGraph] = []  # their compiled graphs
        self.symbolic: CompiledCode | None = None  # the code for every value of the symbols
        self.per_size_reason: str | None = None  # why a graph with symbols has none
        # A training graph's kernels are those of its two graphs, compiled at its first call.
        example_inputs = list(example_inputs)
        device, self.scalar_positions = cpu_scalars(example_inputs)
        example_inputs = on_device(example_inputs, self.scalar_positions, device)
        if needs_autograd(example_inputs):
            return
        if any(isinstance(a, torch.SymInt) for a in example_inputs):
            self.compile_symbolic(gm, example_inputs)
        else:
            self.specialize(example_inputs)

    def compile_symbolic(self, gm: torch.fx.GraphModule, example_inputs):
        """A graph with symbolic sizes (issue 13): its kernels take the symbols as arguments.

        It is compiled now, while the frontend builds the frame's guards: a decision the
        lowering takes on a symbol's value is a guard of the ShapeEnv, and so of the frame
        (sizes.py). Where the kernels cannot take the symbols, each call's sizes get their
        own specialisation, as a static graph's new shapes do; the reason is logged."""
        placeholders = gm.graph.find_nodes(op="placeholder")
        args = [  # the tensors as the frontend traced them: FakeTensors with symbolic sizes
            node.meta.get("example_value", arg) if isinstance(arg, torch.Tensor) else arg
            for node, arg in zip(placeholders, example_inputs, strict=True)
        ]
        shape_env = next(a.node.shape_env for a in args if isinstance(a, torch.SymInt))
        try:
            with symbols_of(shape_env):
                code = self.compile_graph(gm, args)
            if code.torch_reason:
                raise SymbolicUnsupported(code.torch_reason)
            if code.fits is None:  # every symbol was pinned to its value by a guard
                raise SymbolicUnsupported("the lowering specialised every symbol")
        except Exception as error:  # any: the per-size code is still correct
            # SymbolicUnsupported: a kernel cannot take these sizes (sizes.py); TypeError:
            # sympy cannot decide a comparison a lowering wrote for ints; the rest, a lowering
            # that reads sizes as ints. Each size then compiles as a static graph does. An
            # internal error is one still: strict mode (the tests) raises it.
            if config.strict and isinstance(error, LoweringError):
                raise
            self.per_size_reason = f"one specialisation per size: {type(error).__name__}: {error}"
            recompile_log.info("%s", self.per_size_reason)
            return
        self.symbolic = code

    def ran_in_torch(self, reason: str):
        """Say why the graph runs in torch: once per reason, in the log and `torch_reasons`."""
        if reason not in self.torch_reasons:
            self.torch_reasons.append(reason)
            log.info("running the graph in torch: %s", reason)

    def eager_reason(self, args) -> str | None:
        """Why these arguments cannot run the kernels this call (autocast), or None."""
        # Autocast picks each op's dtype as it runs (a bfloat16 matmul, a float32 sum);
        # kernels compiled for float32 would read its results as float32.
        if not any(map(torch.is_autocast_enabled, AUTOCAST_DEVICES)):
            return None  # the usual case: no pass over the tensors' devices
        for device in sorted(
            {a.device.type for a in args if isinstance(a, torch.Tensor)} or {"cpu"}
        ):
            if torch.is_autocast_enabled(device):
                return f"autocast is on for {device}: torch picks each op's dtype as it runs"
        return None

    def device_reason(self, devices: set[torch.device]) -> str | None:
        """Why the kernels cannot run on the tensors' devices; stage 6 runs CUDA too."""
        if any(d.type != "cpu" for d in devices):
            return "a tensor is not on the CPU"
        return None

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
        if reason := self.eager_reason(args):
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

    def train(self, args):
        """A call that needs autograd: the forward and backward graphs of stage 4's aot.py,
        each compiled by this class (their ATen ops made torch calls, aten.py)."""
        reason = self.eager_reason(args) or self.device_reason(devices_of(args))
        if reason:
            self.ran_in_torch(reason)
            return self.gm(*args)
        if self.training is None:
            self.training = aot_autograd(
                self.gm, self.compile_part, DECOMPOSITIONS, self.ran_in_torch
            )
        return self.training(*args)

    def compile_part(self, gm: torch.fx.GraphModule, args) -> "CompiledGraph":
        """A forward or backward graph, compiled as any graph; its reasons to run in torch
        are this graph's."""
        part = self.new_graph(as_torch_calls(gm), args)
        for reason in part.torch_reasons:
            self.ran_in_torch(reason)
        part.torch_reasons = self.torch_reasons
        self.parts.append(part)
        return part

    def new_graph(self, gm: torch.fx.GraphModule, args) -> "CompiledGraph":
        """A graph compiled as this one is (stage 6 passes its mode on)."""
        return type(self)(gm, args)

    def __call__(self, *args):
        if self.scalar_positions and (found := cpu_scalars(args))[1]:  # a GPU's graph
            return as_caller_sees(self, args, found[1], found[0])
        if needs_autograd(args):
            return self.train(args)
        compiled = self.specialize(args)
        if compiled is None:
            return self.gm(*args)
        return compiled.call(list(args))

    @property
    def code(self) -> str:
        """The output code of the latest specialisation (what `MINIDYNAMO_LOGS=kernels` prints)."""
        if self.last:
            return self.last.code
        return "\n".join(f"# the graph runs in torch: {reason}" for reason in self.torch_reasons)


AUTOCAST_DEVICES = ("cpu", "cuda")


def shares_written_memory(args, written: tuple[int, ...]) -> bool:
    """Whether an input written in place shares memory with another input (`f(x, x[0])`)."""
    if not written:
        return False
    storages = [  # 0 for an empty tensor's: it has no memory to share
        address
        for a in args
        if isinstance(a, torch.Tensor) and (address := a.untyped_storage().data_ptr())
    ]
    if len(set(storages)) == len(storages):  # the usual call: no two inputs share memory
        return False
    # (a count per written input is quadratic: ResNet-50's training forward writes 106 of
    # its 320 inputs, and counting took 0.3 ms a call)
    counts = collections.Counter(storages)
    return any(counts[args[i].untyped_storage().data_ptr()] > 1 for i in written)


def compile_fx(gm: torch.fx.GraphModule, example_inputs) -> CompiledGraph:
    """The backend, for `torch.compile(fn, backend=compile_fx)` and for FX graphs directly."""
    return CompiledGraph(gm, example_inputs)


def runs_in_torch(gm: torch.fx.GraphModule, reason) -> CompiledCode:
    """A specialisation that calls the graph module: `CompiledGraph` logs the reason."""
    traced = [node.meta.get("val") for node in gm.graph.nodes if node.op == "placeholder"]
    return CompiledCode(
        "", f"# the graph runs in torch: {reason}", [],
        lambda args: gm(*as_traced(args, traced)), torch_reason=str(reason),
    )  # fmt: skip


def as_traced(args, traced: list) -> list:
    """`args` in the strides a make_fx graph was traced with (`meta["val"]`: a training graph's
    forward or backward, stage 4's aot.py), copied where they differ.

    Such a graph recorded its `view`s for those strides. Our compiled forward hands the
    backward its saved tensors in the layouts our kernels chose (a channels-last image), which
    our compiled backward reads as they are; torch running the graph would raise at the `view`.
    A graph traced from the program (stage 4's frontend) has no `val` and is called as it is:
    it may write into its inputs."""
    return [
        with_traced_strides(a, v)
        if isinstance(a, torch.Tensor) and isinstance(v, torch.Tensor)
        else a
        for a, v in zip(args, traced, strict=False)
    ]


def with_traced_strides(tensor: torch.Tensor, traced: torch.Tensor) -> torch.Tensor:
    if tensor.shape != traced.shape or same_elements(
        tensor.shape, tensor.stride(), traced.stride()
    ):
        return tensor
    copy = torch.empty_strided(
        tensor.shape, traced.stride(), dtype=tensor.dtype, device=tensor.device
    )
    return copy.copy_(tensor)


@functools.cache  # once per message: every graph of a program meets the same missing compiler
def warn_once(message: str):
    log.warning(message)


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
