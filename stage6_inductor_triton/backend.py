"""`compile_fx(gm, example_inputs)`: stage 5's pipeline with Triton at the end.

lower (stage 5's graph_lowering.py, with the GPU's rules) -> fuse (stage 5's
scheduler.py) -> Triton (codegen_triton.py) -> import the module (runtime.py), its
kernels compiling in worker processes meanwhile (performance/compile_pool.py) -> a
Python wrapper that launches the kernels with their grids (stage 5's wrapper, with
devices and launches, launcher.py) -> tune on first call (performance/autotune.py).
Nothing before the code generation is new: stage 5's `compile_graph`
runs with this stage's code writer and loader, as inductor's Triton backend is a
second codegen of its C++ one.

CUDA tensors run compiled Triton; CPU tensors run the same kernels under Triton's
interpreter (slow: for reading and testing). Graphs the kernels cannot run are run
by torch, whole, as in stage 5 (writes into inputs, autograd, autocast, tensors on
several devices), and so are graphs with a kernel the Triton codegen does not handle;
`torch_reasons` and the log say why.
"""

import functools
import math
import re

import torch
import torch.fx

from stage1_eval_frame.logs import get_logger
from stage5_inductor_cpp.backend import CompiledCode, CompiledGraph, compile_graph
from stage5_inductor_cpp.like_eager.devices import kernel_device
from stage5_inductor_cpp.rules import CPU_RULES, Rules
from stage5_inductor_cpp.scheduler import FusedKernel
from stage5_inductor_cpp.symbolic.sizes import sizes_text, text
from stage5_inductor_cpp.wrapper import WrapperCode

from .checks.typecheck import with_dtype_asserts
from .codegen_triton import TritonUnsupported, generate_source, module_source, variants
from .launcher import EAGER_NUMERICS, KernelLauncher, grid
from .like_eager.cpu_scalars import as_caller_sees, cpu_scalars, on_device
from .performance.autotune import configs_for
from .performance.compile_pool import argument_types, pool, precompile
from .performance.cudagraphs import CudaGraph, CudaGraphRunner, Rerun
from .prelude import prelude_for
from .runtime import load_module, source_path

log = get_logger("kernels")


class TritonWrapperCode(WrapperCode):
    """Stage 5's wrapper; buffers are allocated on the device, kernels launched on a grid.

    On a GPU the body runs under a device guard, and buffers come from
    `empty_strided_cuda`, as in inductor's wrappers: torch's C++ allocation without the
    dispatcher (`torch._C._dynamo.guards._empty_strided_cuda`), on the current device,
    which the guard makes the kernels' own. `torch.empty_strided(..., device='cuda:0')`
    parses the device and dispatches on each of the hundreds of allocations of a training
    step."""

    def __init__(self, graph, scheduler, kernel_params, device: torch.device):
        super().__init__(graph, scheduler, kernel_params)
        self.device = device
        self.placement = f", device='{device}'"
        self.namespace.update(grid=grid)
        if device.type == "cuda":
            self.namespace.update(empty_strided_cuda=torch._C._dynamo.guards._empty_strided_cuda)
            index = device.index if device.index is not None else torch.cuda.current_device()
            self.guard = f"torch.cuda._DeviceGuard({index})"

    def allocation(self, layout) -> str:
        if self.device.type != "cuda":
            return super().allocation(layout)
        size, stride = sizes_text(layout.size), sizes_text(layout.stride)
        return f"empty_strided_cuda({size}, {stride}, {layout.dtype})"

    def launch(self, step: FusedKernel) -> str:
        args = ", ".join(self.kernel_params[step.name])
        return f"{step.name}.run({args}, grid=grid({text(math.prod(step.outer))}))"


class TritonKernels:
    """The code writer and loader stage 5's `compile_graph` takes, for one graph on `device`.

    `write` keeps each kernel's variants ([kernel] or [kernel, kernel_looped]) for `load`,
    which launches whichever the tuner picks.
    """

    def __init__(self, device: torch.device):
        self.device = device
        self.variants: dict[str, list] = {}
        self.dtypes: dict[str, torch.dtype] = {}  # buffer name -> dtype, for compile_pool.py
        self.cuda_source = ""  # for CPU tensors: the module that typecheck.py types

    def write(self, kernels: list[FusedKernel], dtypes) -> tuple[str, dict[str, list[str]]]:
        self.dtypes = dtypes
        self.variants = {k.name: variants(k, dtypes) for k in kernels}
        writers = [w for pair in self.variants.values() for w in pair]
        source = generate_source(writers, prelude_for(self.device.type))
        if self.device.type == "cpu":  # the kernels as the GPU would compile them, asserting
            # their dtypes: what Triton's front end types before the interpreter runs them
            kernel_texts = list(map(with_dtype_asserts, writers))
            self.cuda_source = module_source(prelude_for("cuda"), kernel_texts)
        if any(list(pair[-1].args) != list(pair[0].args) for pair in self.variants.values()):
            raise TritonUnsupported("a kernel's variants take different arguments")
        return source, {name: list(pair[0].args) for name, pair in self.variants.items()}

    def load(self, source: str, params: dict[str, list[str]]):
        interpreted = self.device.type == "cpu"
        module = load_module(source, interpreted)
        cuda_module = load_module(self.cuda_source, False) if interpreted else None
        device_name = "interpreter" if interpreted else torch.cuda.get_device_name(self.device)
        launchers, by_text, to_compile = {}, {}, []
        for name, pair in self.variants.items():
            text = "\n".join(w.source for w in pair)
            same = anonymous(text, [pair[0].name, pair[-1].name, *pair[0].args])
            # and the dtypes it computes in: a copy of floats and one of ints read the same,
            # but the copy typecheck.py types asserts the writer's dtypes
            same += repr([sorted(w.declared.items(), key=str) for w in pair])
            if same in by_text:  # the same kernel as one before: one launcher, one binary
                launchers[name] = by_text[same]
                continue
            fns = kernel_fns(module, pair)
            written = [i for i, mode in enumerate(pair[0].args.values()) if mode == "out"]
            configs = configs_for(pair[0].shape, has_looped=len(pair) > 1)
            launchers[name] = KernelLauncher(name, fns, text, configs, device_name, written)
            if cuda_module is not None:  # typed for the GPU before the interpreter runs them
                launchers[name].cuda_fns = kernel_fns(cuda_module, pair)
            elif (types := argument_types(list(pair[0].args), self.dtypes)) is not None:
                to_compile.append((launchers[name], types))
            by_text[same] = launchers[name]
        precompile(to_compile, EAGER_NUMERICS)  # in worker processes, while we go on
        for launcher in by_text.values():  # the progress line counts "kernels k of n"
            launcher.graph_kernels = len(by_text)
        return launchers, source_path(source)[0]


def kernel_fns(module, pair) -> dict:
    """`fns[looped]`: a kernel's function in `module`, and its `_looped` variant's."""
    return {False: getattr(module, pair[0].name), True: getattr(module, pair[-1].name)}


def anonymous(source: str, names: list[str]) -> str:
    """A kernel's source with its own name and its parameters' named by position.

    Two kernels that differ only in these (ResNet's repeated blocks: the same shapes, other
    buffers) do the same work: the wrapper launches the first for both, so Triton compiles
    and the tuner times one kernel, not one per block. Inductor names its kernels'
    parameters `in_ptr0, out_ptr0, ...` and keeps one kernel per source text
    (`src_to_kernel` in torch/_inductor/codegen/wrapper.py) for the same reason."""
    rename = {name: f"_{i}" for i, name in enumerate(dict.fromkeys(names))}
    pattern = r"\b(" + "|".join(map(re.escape, rename)) + r")\b"
    return re.sub(pattern, lambda m: rename[m.group()], source)


# The GPU's rules of the lowering (stage 5's rules.py): on for the graphs of CUDA tensors.
# Those of CPU tensors, which run under Triton's interpreter, follow the CPU's.
GPU_RULES = Rules(
    split_reductions=True,
    stack_sibling_products=True,
    recompute_images=True,
    few_convolutions_keep_eager_layout=True,
    fuse_across_library_calls=True,
    float_variance_of_rows=True,
)


def rules_for(device: torch.device) -> Rules:
    return GPU_RULES if device.type == "cuda" else CPU_RULES


MODES = ("default", "reduce-overhead")  # torch.compile's `mode=`, for the ones we have


def check_mode(mode: str):
    if mode not in MODES:
        raise ValueError(
            f"mode={mode!r}: our inductor has the modes {MODES}. torch's 'max-autotune' "
            "also tries matmul templates; ours tunes its kernels' blocks in every mode."
        )


class TritonCompiledGraph(CompiledGraph):
    """Stage 5's compiled graph, for tensors on one device: CUDA, or the CPU (interpreted).

    With `mode="reduce-overhead"`, each specialisation's kernels are recorded as a CUDA
    graph at its second call and replayed after (cudagraphs.py); on the CPU, a stand-in
    that runs the call again keeps the same rules, for the tests. `cudagraph_reasons` and
    the log say why a call did not replay."""

    def __init__(self, gm: torch.fx.GraphModule, example_inputs, mode: str = "default"):
        check_mode(mode)
        self.mode = mode
        self.cudagraph_reasons: list[str] = []  # why calls did not replay their recording
        example_inputs = list(example_inputs)
        device, self.scalar_positions = cpu_scalars(example_inputs)  # like_eager/cpu_scalars.py
        super().__init__(gm, on_device(example_inputs, self.scalar_positions, device))

    def __call__(self, *args):
        if self.scalar_positions and (found := cpu_scalars(args))[1]:  # copies on the GPU
            return as_caller_sees(super().__call__, args, found[1], found[0])
        return super().__call__(*args)

    def no_replay(self, reason: str):
        """Say why a call did not replay its recording (it recorded again, or ran as it
        is): once per reason."""
        if reason not in self.cudagraph_reasons:
            self.cudagraph_reasons.append(reason)
            log.info("CUDA graph not replayed: %s", reason)

    def new_graph(self, gm: torch.fx.GraphModule, args) -> "TritonCompiledGraph":
        return type(self)(gm, args, mode=self.mode)

    def compile_part(self, gm: torch.fx.GraphModule, args) -> CompiledGraph:
        part = super().compile_part(gm, args)
        for reason in part.cudagraph_reasons:
            self.no_replay(reason)
        part.cudagraph_reasons = self.cudagraph_reasons
        return part

    def device_reason(self, devices: set[torch.device]) -> str | None:
        if not devices:
            return None
        if len(devices) > 1:
            return f"the tensors are on several devices: {sorted(map(str, devices))}"
        (device,) = devices
        if device.type not in ("cuda", "cpu"):
            return f"Triton does not run on {device.type}"
        return None

    def compile_graph(self, gm: torch.fx.GraphModule, args) -> CompiledCode:
        device = kernel_device(gm, args)  # the inputs', or the one its factories name
        if device.type == "cuda":
            pool()  # its workers start while the graph lowers (compile_pool.py)
        kernels = TritonKernels(device)
        code = compile_graph(
            gm,
            args,
            kernels.write,
            kernels.load,
            prefix="triton",
            prelude=prelude_for(device.type),
            wrapper=functools.partial(TritonWrapperCode, device=device),
            rules=rules_for(device),
        )
        if self.mode == "reduce-overhead" and not code.torch_reason:
            if code.fits is not None:  # inductor records one graph per size; not done here
                self.no_replay("the kernels take symbolic sizes: not recorded")
            else:
                recorder = CudaGraph if device.type == "cuda" else Rerun
                code.call = CudaGraphRunner(
                    code.call, code.written_inputs, recorder, self.no_replay
                )
        return code


def compile_fx(gm: torch.fx.GraphModule, example_inputs, mode="default") -> TritonCompiledGraph:
    """The backend, for `torch.compile(fn, backend=compile_fx)` or `compile_fx(gm, inputs)`."""
    return TritonCompiledGraph(gm, example_inputs, mode)


compile_fx.modes = MODES
