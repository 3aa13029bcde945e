"""The Python wrapper: allocate buffers, call kernels and externs in order, return the outputs.

It is generated as source (inductor's `WrapperCodeGen` does the same) so that the
whole program can be printed and read:

    def call(args):
        arg0, arg1 = args
        buf0 = empty_strided((16777216,), (1,), dtype=torch.float32)
        cpp_fused_sin_cos_mul_add_sub_relu_0(arg0.data_ptr(), arg1.data_ptr(), buf0.data_ptr())
        return (buf0,)

A buffer whose last reader has run is handed to the next allocation of the same
layout (`buf4 = buf1  # reuse`), as inductor's wrapper reuses dead buffers, or deleted
(performance/memory_plan.py).
"""

import math

import torch

from .ir import BufferView
from .like_eager.externs import ExternValue, with_layout
from .like_eager.functionalize import WriteBack
from .performance import memory_plan
from .scheduler import ExternCall, FusedKernel
from .symbolic.code import fits_source, symbol_sources
from .symbolic.sizes import is_symbolic, sizes_text, text

# Another layout of a tensor's elements, `reinterpret(t, size, stride, offset)`, for the
# kernels and externs of the wrapper: `offset` counts from its first element, not its
# storage's. torch's C++ function, as inductor's wrappers call it (`reinterpret_tensor`):
# `as_strided` costs twice as much, and a model's wrapper makes a hundred such views a call.
# Its result shares the storage but is no view to autograd (no `_base`, a version counter
# of its own), so what the wrapper returns is made by `view` instead.
reinterpret = torch._C._dynamo.guards._reinterpret_tensor


def view(tensor, size, stride, offset):
    """`reinterpret` as a real view: a returned view of an input is one, as in eager."""
    return torch.as_strided(tensor, size, stride, tensor.storage_offset() + offset)


class WrapperCode:
    """Writes `call(args)` for one scheduled graph; `namespace` holds what it refers to."""

    def __init__(self, graph, scheduler, kernel_params: dict[str, list[str]]):
        self.graph, self.steps = graph, scheduler.steps
        self.kernel_params = kernel_params  # kernel name -> buffer names, in signature order
        self.namespace = {"torch": torch, "empty_strided": torch.empty_strided}
        self.namespace.update(reinterpret=reinterpret, view=view, with_layout=with_layout)
        self.namespace.update(increment_version=torch.autograd.graph.increment_version, math=math)
        self.namespace.update(graph.constants)
        self.symbols = symbol_sources(graph)  # symbol -> where the wrapper reads it
        self.lines: list[str] = []
        self.made_as = memory_plan.views_to_allocate(self)  # buffer -> the layout it is made with

    def value(self, v, maker="reinterpret") -> str:
        """Python source for an extern argument or (`maker="view"`) an output."""
        if isinstance(v, BufferView):
            if v.layout == self.made_as.get(v.buffer.name, v.buffer.layout):
                return v.buffer.name
            size, stride = sizes_text(v.layout.size), sizes_text(v.layout.stride)
            return f"{maker}({v.buffer.name}, {size}, {stride}, {text(v.layout.offset)})"
        if is_symbolic(v):  # a size computed from symbols (`x.size(0) * 2`)
            return text(v)
        if isinstance(v, ExternValue):
            return v.buffer.name
        if isinstance(v, list) or type(v) is tuple:
            inner = ", ".join(self.value(x, maker) for x in v)
            return f"[{inner}]" if isinstance(v, list) else f"({inner}{',' if len(v) == 1 else ''})"
        if isinstance(v, tuple):  # a named tuple of torch.return_types, as `max(x, 0)` returns
            inner = ", ".join(self.value(x, maker) for x in v)
            return f"{self.value(type(v))}(({inner},))"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k!r}: {self.value(x, maker)}" for k, x in v.items()) + "}"
        if (
            v is None
            or isinstance(v, (bool, int, str))
            or (isinstance(v, float) and math.isfinite(v))
        ):
            return repr(v)
        name = f"const_obj{len(self.namespace)}"
        self.namespace[name] = v
        return name

    def arguments(self) -> list[str]:
        """The lines that name the call's arguments, then its symbols' values (sizes.py)."""
        names = [
            b.name if b is not None else f"_scalar{i}" for i, b in enumerate(self.graph.inputs)
        ]
        lines = []
        if names:  # a graph of constants alone (torch.ones(3) * 2) has no inputs
            lines.append(f"    {', '.join(names)}{',' if len(names) == 1 else ''} = args")
        return lines + [f"    {symbol} = {source}" for symbol, source in self.symbols.items()]

    def generate(self) -> str:
        self.lines += self.arguments()
        free, dead = memory_plan.plan_memory(self)  # dead buffers reused, deleted
        for i, step in enumerate(self.steps):
            if isinstance(step, FusedKernel):
                self.kernel_call(step, free.get(i, {}))
            else:
                self.extern_call(step, free.get(i, {}))
            if dead.get(i):
                self.lines.append(f"    del {', '.join(dead[i])}")
        if written := [self.graph.inputs[i].name for i in self.graph.written_inputs]:
            # as after eager's in-place ops: autograd sees that the caller's tensors changed
            self.lines.append(f"    increment_version(({', '.join(written)},))")
        self.lines.append(f"    return {self.value(self.graph.outputs, 'view')}")
        if self.guard is None:
            return "\n".join(["def call(args):", *self.lines]) + "\n"
        body = [f"    {line}" for line in self.lines]
        return "\n".join(["def call(args):", f"    with {self.guard}:", *body]) + "\n"

    @staticmethod
    def allocated(step) -> list:
        """The buffers a step writes into memory the wrapper gives it: a kernel's outputs
        (not those in registers only, nor stores into an input), an `out=` extern's result."""
        if isinstance(step, ExternCall):
            return [step.buffer] if step.buffer.out else []
        return [
            node.buffer
            for node in step.nodes
            if node.name not in step.local and not isinstance(node.buffer, WriteBack)
        ]

    def kernel_call(self, step: FusedKernel, reuse: dict[str, str]):
        for buffer in self.allocated(step):
            if buffer.name not in step.in_place:
                self.allocate(buffer, reuse)
        self.lines.append(f"    {self.launch(step)}")
        self.lines += [f"    {reuse[new]}" for new in step.in_place]  # `new = old; del old`

    def allocate(self, buffer, reuse: dict[str, str]):
        """`buffer`'s memory: a dead buffer's that holds it (`reuse`), or new memory."""
        if buffer.name in reuse:
            self.lines.append(f"    {reuse[buffer.name]}")
        else:
            layout = self.made_as.get(buffer.name, buffer.layout)
            self.lines.append(f"    {buffer.name} = {self.allocation(layout)}")

    # What a backend changes (stage 6: on the device, on a grid).
    placement = ""  # where buffers are allocated: stage 6 names the device (`, device='cpu'`)
    guard = None  # a context the body runs in: stage 6's `torch.cuda._DeviceGuard(0)`

    def allocation(self, layout) -> str:
        size, stride = sizes_text(layout.size), sizes_text(layout.stride)
        return f"empty_strided({size}, {stride}, dtype={layout.dtype}{self.placement})"

    def launch(self, step: FusedKernel) -> str:
        # buffers by their address; symbols (sizes.py), named as in the wrapper, as ints
        args = [
            name if name in self.symbols else f"{name}.data_ptr()"
            for name in self.kernel_params[step.name]
        ]
        return f"{step.name}({', '.join(args)})"

    def fits(self) -> str:
        """`fits(args)`: whether a call fits symbolic code (symbolic/code.py)."""
        return fits_source(self.graph, self.arguments())

    def extern_call(self, step: ExternCall, reuse: dict[str, str]):
        buffer = step.buffer
        target = f"extern_{buffer.name}"
        self.namespace[target] = buffer.target
        args = [self.value(a) for a in buffer.args]
        args += [f"{k}={self.value(v)}" for k, v in buffer.kwargs.items()]
        if buffer.out:  # into memory planned here, as a kernel's output
            self.allocate(buffer, reuse)
            args.append(f"out={buffer.name}")
            self.lines.append(f"    {target}({', '.join(args)})  # {buffer.op_name}")
            return
        self.lines.append(f"    {buffer.name} = {target}({', '.join(args)})  # {buffer.op_name}")
        if buffer.is_tensor:
            size, stride = sizes_text(buffer.layout.size), sizes_text(buffer.layout.stride)
            self.lines.append(f"    {buffer.name} = with_layout({buffer.name}, {size}, {stride})")
