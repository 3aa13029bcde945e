"""`compile_fx(gm, example_inputs)`: stage 5's pipeline with Triton at the end.

lower (stage 5's graph.py) -> fuse (stage 5's scheduler.py) -> Triton (codegen_triton.py)
-> import the module (runtime.py) -> a Python wrapper that launches the kernels with
their grids (stage 5's wrapper, with devices and launches) -> tune on first call
(autotune.py). Nothing before the code generation is new: this is a second codegen
of the same compiler, as inductor's Triton backend is of its C++ one.

CUDA tensors run compiled Triton; CPU tensors run the same kernels under Triton's
interpreter (slow: for reading and testing). Graphs the kernels cannot run are run
by torch, whole, as in stage 5 (mutation, autograd, tensors on several devices), and
so are graphs with a kernel the Triton codegen does not handle (the log says which).
"""

import dataclasses
import logging
import math

import torch
import torch.fx

from stage1_eval_frame.logs import get_logger
from stage5_inductor_cpp.backend import CompiledGraph, eager_call, specialization_key
from stage5_inductor_cpp.graph import EagerOnly, GraphLowering
from stage5_inductor_cpp.scheduler import FusedKernel, Scheduler
from stage5_inductor_cpp.wrapper import WrapperCode

from .autotune import KernelLauncher, configs_for, grid
from .codegen_triton import TritonUnsupported, generate_source, variants
from .prelude import PRELUDE
from .runtime import load_module, source_path

log = get_logger("kernels")


def with_layout(tensor, size, stride):
    """Stage 5's `with_layout`, keeping the tensor's device."""
    if tuple(tensor.stride()) == stride or tensor.numel() <= 1:
        return tensor
    return torch.empty_strided(size, stride, dtype=tensor.dtype, device=tensor.device).copy_(tensor)


class TritonWrapperCode(WrapperCode):
    """Stage 5's wrapper; buffers are allocated on the device, kernels launched on a grid."""

    def __init__(self, graph, scheduler, kernel_params, device: torch.device):
        super().__init__(graph, scheduler, kernel_params)
        self.device = device
        self.namespace.update(grid=grid, with_layout=with_layout)

    def kernel_call(self, step: FusedKernel, reuse: dict[str, str]):
        for node in step.nodes:
            if node.name in step.local:
                continue
            layout = node.buffer.layout
            if node.name in reuse:
                self.lines.append(f"    {node.name} = {reuse[node.name]}  # reuse")
            else:
                self.lines.append(
                    f"    {node.name} = empty_strided({layout.size}, {layout.stride}, "
                    f"dtype={layout.dtype}, device='{self.device}')"
                )
        args = ", ".join(self.kernel_params[step.name])
        self.lines.append(f"    {step.name}.run({args}, grid=grid({math.prod(step.outer)}))")


@dataclasses.dataclass
class TritonCompiledCode:
    """One specialisation: the Triton module, the wrapper source, and the callable."""

    triton_source: str
    wrapper_source: str
    kernel_names: list[str]
    call: object
    module_path: object = None

    @property
    def code(self) -> str:
        """The whole output code, as inductor prints it: wrapper first, then the kernels."""
        kernels = self.triton_source.removeprefix(PRELUDE).strip()
        return f"# {self.module_path}\n{self.wrapper_source}\n'''\n{kernels}\n'''\n"


def device_of(args) -> torch.device | None:
    devices = {a.device for a in args if isinstance(a, torch.Tensor)}
    return next(iter(devices)) if len(devices) == 1 else None


class TritonCompiledGraph(CompiledGraph):
    """Stage 5's compiled graph, for tensors on one device: CUDA, or the CPU (interpreted)."""

    def eager_reason(self, args) -> str | None:
        if self.whole_graph_reason:
            return self.whole_graph_reason
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if tensors and device_of(tensors) is None:
            return "the tensors are on several devices"
        if tensors and device_of(tensors).type not in ("cuda", "cpu"):
            return f"Triton does not run on {device_of(tensors).type}"
        if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
            return "autograd needs the graph (the kernels have no backward)"
        return None

    def specialize(self, args):
        reason = self.eager_reason(args)
        key = specialization_key(args)
        if reason or key is None:
            return None
        key = (key, str(device_of(args) or "cpu"))
        if key not in self.specializations:
            self.specializations[key] = compile_graph(self.gm, args)
        self.last = self.specializations[key]
        return self.last


def compile_fx(gm: torch.fx.GraphModule, example_inputs) -> TritonCompiledGraph:
    """The backend, for `torch.compile(fn, backend=compile_fx)` or `compile_fx(gm, inputs)`."""
    return TritonCompiledGraph(gm, example_inputs)


def compile_graph(gm: torch.fx.GraphModule, args) -> TritonCompiledCode:
    device = device_of(args) or torch.device("cpu")
    try:
        graph = GraphLowering(gm, args).run()
    except EagerOnly as error:
        log.info("running the graph in torch: %s", error)
        return TritonCompiledCode("", "# the graph runs in torch", [], eager_call(gm))
    if log.isEnabledFor(logging.INFO):
        log.info("IR before fusion:\n%s", Scheduler(graph, fuse=False))
    scheduler = Scheduler(graph)
    kernels = [s for s in scheduler.steps if isinstance(s, FusedKernel)]
    for kernel in kernels:  # stage 5 names them cpp_fused_...
        kernel.name = "triton_" + kernel.name.removeprefix("cpp_")
    log.info("IR after fusion:\n%s", scheduler)
    dtypes = {
        b.name: b.layout.dtype
        for b in [*graph.inputs, *graph.buffers]
        if b is not None and b.layout
    }
    dtypes.update({name: t.dtype for name, t in graph.constants.items()})
    writers = [variants(k, dtypes) for k in kernels]  # [kernel] or [kernel, kernel_looped]
    try:
        source = generate_source([w for pair in writers for w in pair])
        if any(list(pair[-1].args) != list(pair[0].args) for pair in writers):
            raise TritonUnsupported("a kernel's variants take different arguments")
    except TritonUnsupported as error:
        log.info("running the graph in torch: %s", error)
        return TritonCompiledCode("", f"# the graph runs in torch: {error}", [], eager_call(gm))
    params = {k.name: list(pair[0].args) for k, pair in zip(kernels, writers, strict=True)}
    wrapper = TritonWrapperCode(graph, scheduler, params, device)
    wrapper_source = wrapper.generate()
    interpreted = device.type == "cpu"
    module = load_module(source, interpreted) if kernels else None
    device_name = "interpreter" if interpreted else torch.cuda.get_device_name(device)
    for kernel, pair in zip(kernels, writers, strict=True):
        fns = {False: getattr(module, pair[0].name), True: getattr(module, pair[-1].name)}
        text = "\n".join(w.source for w in pair)
        configs = configs_for(pair[0].shape)
        wrapper.namespace[kernel.name] = KernelLauncher(
            kernel.name, fns, text, configs, device_name
        )
    exec(compile(wrapper_source, f"<minidynamo wrapper {id(graph)}>", "exec"), wrapper.namespace)
    path = source_path(source)[0] if kernels else None
    compiled = TritonCompiledCode(
        source, wrapper_source, [k.name for k in kernels], wrapper.namespace["call"], path
    )
    log.info("output code:\n%s", compiled.code)
    return compiled
