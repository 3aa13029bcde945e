"""From generated source to kernels that run: on the GPU, or on the CPU under the interpreter.

`@triton.jit` reads the function's source with `inspect` (it compiles the Python
syntax tree, not the bytecode), so generated code must live in a real file: we write
it to the cache directory and run it as a module of that file (inductor's PyCodeCache
does the same). The file is named by a hash of its text, so a second process finds the
same file, and Triton's own cache (`~/.triton/cache`) finds the compiled GPU binaries.
A file there that is not the text it is named after (cut short by a crash or a full
disk) is written again; and the module runs the text we hold, compiled here, rather
than whatever the import system would read (a file, or a `__pycache__` entry as
damaged).

CPU tensors run under Triton's interpreter, which executes the kernel's Python with
numpy arrays standing in for blocks. Whether a function runs interpreted is decided
*when `@triton.jit` decorates it*: triton/runtime/jit.py does
`if knobs.runtime.interpret: return InterpretedFunction(fn)`. So we import the module
for CPU tensors under a `triton.knobs.runtime.scope()` that sets the knob, and nowhere
else. Setting `TRITON_INTERPRET=1` for the whole process before importing triton
would also work, but would turn every Triton kernel of the process, the user's and
those for CUDA tensors, into interpreted ones.

The knob has a second, hidden reach: Triton's own library functions (`tl.sum`,
`tl.max`, `tl.zeros`, ...) are themselves `@triton.jit` functions, decorated once when
triton is imported; an interpreted kernel that calls them fails with "Cannot call
@triton.jit'd outside of the scope of a kernel" unless `TRITON_INTERPRET=1` was set
before that import. So the kernels call only Triton's builtins (`tl.load`,
`tl.reduce`, `tl.where`, ...) and the prelude's helpers, which are decorated with
the module and so take its mode.

The interpreter has no libdevice (its `extern_elementwise` raises), so interpreted
modules get `INTERPRETER_LIBDEVICE`: the few libdevice functions our table uses, done
by torch on the interpreter's arrays.
"""

import functools
import hashlib
import sys
import threading
import types

import torch
import triton
import triton.language as tl
from triton.runtime import interpreter
from triton.runtime.interpreter import TensorHandle

from stage1_eval_frame.logs import get_logger
from stage3_guards.generated import AST_LOCK
from stage5_inductor_cpp import kernel_cache

log = get_logger("kernels")


def source_dir():
    return kernel_cache.cache_dir() / "triton"


def source_path(source: str):
    key = hashlib.sha256(source.encode()).hexdigest()[:32]
    return source_dir() / f"{key}.py", key


# Triton's interpreter is one per process: the `interpret` knob, and the functions of
# `triton.language` it swaps for its own while a kernel runs. Loading a module and running an
# interpreted kernel hold this lock, so that threads compiling at once never see each other's.
INTERPRETER_LOCK = threading.Lock()


@functools.cache
def load_module(source: str, interpreted: bool) -> types.ModuleType:
    """Run `source` as a module of its file in the cache directory; interpreted for CPU tensors."""
    path, key = source_path(source)
    write_source(path, source)
    name = f"minidynamo_triton_{key}{'_interpreted' if interpreted else ''}"
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module  # inspect.getsource finds the file through the module
    code = compile(source, str(path), "exec")
    # the knob is the whole process's; a kernel's decorator may parse its source (AST_LOCK)
    with INTERPRETER_LOCK, AST_LOCK, triton.knobs.runtime.scope():
        triton.knobs.runtime.interpret = interpreted
        exec(code, module.__dict__)
    if interpreted:
        module.libdevice = INTERPRETER_LIBDEVICE
    return module


def _patch_lang_tensor(tensor, scope):
    """Triton 3.6's interpreter, and `.item()` for a scalar used as an int.

    A kernel's int argument (a symbolic size, sizes.py) is a one-element array there, and
    `range(0, s77, RBLOCK)` asks it for `__index__`, which the interpreter answers with
    `int(array)`: numpy 2 refuses that for an array that is not 0-d. Compiled Triton has
    no such step; this keeps the interpreter running the same source."""
    _interpreter_patch(tensor, scope)
    scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.item()))


_interpreter_patch, interpreter._patch_lang_tensor = (
    interpreter._patch_lang_tensor,
    _patch_lang_tensor,
)


def write_source(path, source: str):
    """Make `path` hold `source`, which `inspect` will read: written once, again if damaged."""
    data = source.encode()
    if path.exists():
        if path.read_bytes() == data:
            return
        log.warning(
            "the kernel cache's %s is not the source it is named after: writing it again", path
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    kernel_cache.write_atomically(path, data)


def _torch_elementwise(fn):
    """A libdevice function for the interpreter: torch's `fn` on the arrays inside the blocks."""

    def apply(*args):
        like = next(a for a in args if isinstance(a, tl.core.tensor))
        dtype = torch.as_tensor(like.handle.data).dtype
        tensors = [
            torch.as_tensor(a.handle.data)
            if isinstance(a, tl.core.tensor)
            else torch.tensor(a, dtype=dtype)
            for a in args
        ]
        result = fn(*tensors).to(dtype).numpy()
        return tl.core.tensor(TensorHandle(result, like.handle.dtype.scalar), like.type)

    return apply


# torch's twin of every `libdevice.<name>` in `TritonOverrides` and the prelude (a test checks).
TORCH_LIBDEVICE = types.SimpleNamespace(
    tan=torch.tan, tanh=torch.tanh, atan=torch.atan, atan2=torch.atan2, pow=torch.pow,
    log1p=torch.log1p, expm1=torch.expm1, trunc=torch.trunc, nearbyint=torch.round,
    fmod=torch.fmod, sqrt=torch.sqrt, rsqrt=torch.rsqrt,
    fma=lambda x, y, z: torch.addcmul(z, x, y),  # rounded once, as libdevice's
)  # fmt: skip
INTERPRETER_LIBDEVICE = types.SimpleNamespace(
    **{name: _torch_elementwise(fn) for name, fn in vars(TORCH_LIBDEVICE).items()}
)
