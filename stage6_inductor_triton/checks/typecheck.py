"""Triton's compiler front end for a CUDA target, on kernels that run under the interpreter.

The interpreter (runtime.py) runs a kernel's Python with numpy arrays for blocks: it
never types the kernel, so numpy's promotions pass where the compiler refuses. A
float32 accumulator updated with a float64 value in a loop is one numpy array
re-assigned; compiled, it is "Loop-carried variable ... has initial type fp32 but is
re-assigned to fp64 in loop". A float64 argument to libdevice's float32 function is
numpy's business there; compiled, it is "Expected dtype ['fp32'] but got fp64".

Those errors come from the first step of Triton's compiler, the front end that turns the
kernel's syntax tree into Triton IR (triton/compiler/code_generator.py): it types every
expression and needs no GPU, only a target to type for. So each kernel the interpreter
launches is first put through it, for an H100, with the argument types a launch on the
GPU would give (`mangle_type`: a tensor's pointer type, an int's width, an int equal
to 1 made a constant): a kernel the GPU would refuse fails here, with the GPU's error.
It costs little per kernel, once, beside the interpreting.
The later steps (layouts, LLVM, ptxas) are not run: they type nothing, and cost far more
(they too run without a GPU: `triton.compile` with this target makes a
cubin here).
"""

import re

import torch
from triton._C.libtriton import ir
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.compiler.compiler import make_backend
from triton.runtime.jit import JITFunction, mangle_type

from ..codegen_triton import TL_DTYPES, TritonKernel

CUDA_TARGET = GPUTarget("cuda", 90, 32)  # an H100 or H200 (compute capability 9.0)


def check_for_cuda(fn: JITFunction, args, meta: dict, num_warps: int):
    """Type `fn` called with `args` and the constants `meta` as Triton's compiler would for
    the GPU; raises its `CompilationError` where the compiler would."""
    signature, constants = {}, dict(meta)
    for name, arg in zip(fn.arg_names, args, strict=False):
        kind = mangle_type(arg, specialize=True)  # "*fp32", "i32", "constexpr" (an int 1)
        signature[name] = kind
        if kind == "constexpr":
            constants[name] = arg
    signature.update(dict.fromkeys(meta, "constexpr"))
    source = ASTSource(fn, signature, constexprs=constants)
    backend = make_backend(CUDA_TARGET)
    parsed = backend.parse_options({"num_warps": num_warps})
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    codegen = backend.get_codegen_implementation(parsed)
    source.make_ir(CUDA_TARGET, parsed, codegen, backend.get_module_map(), context)


def launch_types(args) -> tuple:
    """What the check depends on, of a launch's arguments: a tensor's dtype, an int's type."""
    return tuple(a.dtype if isinstance(a, torch.Tensor) else mangle_type(a, True) for a in args)


def with_dtype_asserts(writer: TritonKernel) -> str:
    """The writer's kernel, each temporary followed by an assertion that Triton types it as
    the writer declared it (`tl.static_assert(tmp3.dtype == tl.float32)`). A float64 that
    slips into a float32 expression crashes only where something checks it (a loop, a
    libdevice call); elsewhere the GPU silently computes in float64. The assertion stops it
    where it starts."""

    def asserted(match: re.Match) -> str:
        indent, name = match.group(1), match.group(2)
        if name not in writer.declared:
            return match.group(0)
        tl_dtype = TL_DTYPES[writer.declared[name]]
        message = f"Triton's type of {name} is not {tl_dtype}, the dtype the writer declared"
        check = f'tl.static_assert({name}.dtype == {tl_dtype}, "{message}")'
        return f"{match.group(0)}\n{indent}{check}"

    return re.sub(r"^( *)(tmp\d+) = .*$", asserted, writer.source, flags=re.MULTILINE)
