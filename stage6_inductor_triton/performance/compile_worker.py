"""A worker process of compile_pool.py: compiles Triton kernels into Triton's disk cache.

Run as a script (`python compile_worker.py`), not as a module of the package, so that it
imports Triton and nothing else: no torch, no CUDA. It compiles for the target it is
told (`GPUTarget`), which needs no GPU, only Triton's compiler and `ptxas`. Inductor's
workers (torch/_inductor/compile_worker/) do the same, for the same reason: a process
that touches the GPU would hold a CUDA context of its own.

The protocol, on stdin and stdout: a request is a 4-byte length and a pickle of
(module path, kernel name, signature, constants, attributes, options, target); the
reply is the same framing around None (compiled, now on disk) or the error's text.
The end of the input (the parent has gone, or closed the pipe) ends the worker.
"""

import importlib.util
import pickle
import struct
import sys

import triton
from triton.compiler import ASTSource

HEADER = struct.Struct("<I")


def read(stream):
    """One framed pickle from `stream`; EOFError at its end."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        raise EOFError("the other process closed the pipe")
    return pickle.loads(stream.read(HEADER.unpack(header)[0]))


def frame(value) -> bytes:
    """`value` as one message: its pickle, after its length."""
    data = pickle.dumps(value)
    return HEADER.pack(len(data)) + data


def write(stream, message: bytes):
    stream.write(message)
    stream.flush()


_modules: dict = {}  # path -> the generated module, loaded once per worker


def kernel(path: str, name: str):
    """The `@triton.jit` function `name` of the generated module at `path`. Triton reads
    its source through `inspect`, which finds the file through the module."""
    if path not in _modules:
        spec = importlib.util.spec_from_file_location(f"minidynamo_worker_{len(_modules)}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        _modules[path] = module
    return getattr(_modules[path], name)


def compile_request(path, name, signature, constants, attrs, options, target):
    """Compile one configuration of one kernel as the parent's `JITFunction.run` would: the
    same source, signature, constants, attributes and options give the same cache key, so
    the parent's own compile then finds the binary on disk."""
    source = ASTSource(kernel(path, name), signature, constants, attrs)
    triton.compile(source, target=target, options=options)


def main():
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # whatever Triton prints must not enter the replies
    while True:
        try:
            request = read(stdin)
        except EOFError:
            return
        try:
            compile_request(*request)
            reply = None
        except Exception as error:  # reported to the parent, which compiles it itself
            reply = f"{type(error).__name__}: {error}"
        write(stdout, frame(reply))


if __name__ == "__main__":
    main()
