"""The Python wrapper: allocate buffers, call kernels and externs in order, return the outputs.

It is generated as source (inductor's `WrapperCodeGen` does the same) so that the
whole program can be printed and read:

    def call(args):
        arg0, arg1 = args
        buf0 = empty_strided((16777216,), (1,), dtype=torch.float32)
        cpp_fused_sin_cos_mul_add_sub_relu_0(arg0.data_ptr(), arg1.data_ptr(), buf0.data_ptr())
        return (buf0,)

A buffer whose last reader has run is handed to the next allocation of the same
layout (`buf4 = buf1  # reuse`), as inductor's wrapper reuses dead buffers.
"""

import math

import torch
import torch.utils._pytree as pytree

from .graph_lowering import ExternValue
from .ir import BufferView, ExternKernel, Layout
from .like_eager.functionalize import WriteBack
from .scheduler import ExternCall, FusedKernel
from .symbolic.code import fits_source, symbol_sources
from .symbolic.sizes import is_symbolic, sizes_text, text


def reinterpret(tensor, size, stride, offset):
    """A view of `tensor`'s elements: `offset` counts from its first element, not its storage's."""
    return torch.as_strided(tensor, size, stride, tensor.storage_offset() + offset)


def with_layout(tensor, size, stride):
    """Kernels index with the strides the meta functions promised; copy in the rare other case."""
    if tuple(tensor.stride()) == stride or math.prod(size) <= 1:
        return tensor
    return torch.empty_strided(size, stride, dtype=tensor.dtype, device=tensor.device).copy_(tensor)


def same_memory(view: Layout, layout: Layout) -> bool:
    """Whether `view` is another order of `layout`'s elements: the same addresses, static."""

    def dims(one: Layout) -> list[tuple]:  # (stride, size) of the dims that move, sorted
        pairs = zip(one.stride, one.size, strict=True)
        return sorted((stride, size) for stride, size in pairs if size != 1)

    numbers = [*view.size, *view.stride, *layout.size, *layout.stride]
    return (
        view != layout
        and view.offset == layout.offset == 0
        and view.dtype == layout.dtype
        and all(isinstance(n, int) for n in numbers)  # not symbols (sizes.py)
        and 0 not in view.size  # no elements: nothing to compare
        and dims(view) == dims(layout)
    )


def names_in(value) -> list[str]:
    """The buffers an extern argument or an output refers to by name."""
    leaves = pytree.tree_leaves(value, is_leaf=lambda v: isinstance(v, (BufferView, ExternValue)))
    return [v.buffer.name for v in leaves if isinstance(v, (BufferView, ExternValue))]


class WrapperCode:
    """Writes `call(args)` for one scheduled graph; `namespace` holds what it refers to."""

    def __init__(self, graph, scheduler, kernel_params: dict[str, list[str]]):
        self.graph, self.steps = graph, scheduler.steps
        self.kernel_params = kernel_params  # kernel name -> buffer names, in signature order
        self.namespace = {"torch": torch, "empty_strided": torch.empty_strided}
        self.namespace.update(reinterpret=reinterpret, with_layout=with_layout)
        self.namespace.update(increment_version=torch.autograd.graph.increment_version)
        self.namespace.update(graph.constants)
        self.symbols = symbol_sources(graph)  # symbol -> where the wrapper reads it
        self.lines: list[str] = []
        self.made_as = self.views_to_allocate()  # buffer name -> the layout it is made with

    def value(self, v) -> str:
        """Python source for an extern argument or an output."""
        if isinstance(v, BufferView):
            if v.layout == self.made_as.get(v.buffer.name, v.buffer.layout):
                return v.buffer.name
            size, stride = sizes_text(v.layout.size), sizes_text(v.layout.stride)
            return f"reinterpret({v.buffer.name}, {size}, {stride}, {text(v.layout.offset)})"
        if is_symbolic(v):  # a size computed from symbols (`x.size(0) * 2`)
            return text(v)
        if isinstance(v, ExternValue):
            return v.buffer.name
        if isinstance(v, list) or type(v) is tuple:
            inner = ", ".join(self.value(x) for x in v)
            return f"[{inner}]" if isinstance(v, list) else f"({inner}{',' if len(v) == 1 else ''})"
        if isinstance(v, tuple):  # a named tuple of torch.return_types, as `max(x, 0)` returns
            inner = ", ".join(self.value(x) for x in v)
            return f"{self.value(type(v))}(({inner},))"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k!r}: {self.value(x)}" for k, x in v.items()) + "}"
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
        free, dead = self.plan_memory()
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
        self.lines.append(f"    return {self.value(self.graph.outputs)}")
        if self.guard is None:
            return "\n".join(["def call(args):", *self.lines]) + "\n"
        body = [f"    {line}" for line in self.lines]
        return "\n".join(["def call(args):", f"    with {self.guard}:", *body]) + "\n"

    def views_to_allocate(self) -> dict[str, Layout]:
        """Kernel outputs to allocate as the one view of them that extern calls and outputs
        read: {buffer name: that view's layout}.

        A channels-last image is a kernel's (N, H, W, C) buffer, read by the convolution as
        an (N, C, H, W) view with channels-last strides: the same memory in another order.
        Allocated as that view, the buffer is passed as it is, where `reinterpret` would
        make a view of it at each read (`as_strided`, microseconds a call, 220 a training
        step of ResNet-50). Kernels see only the address, so their indexing is unchanged.
        Inductor gives such a buffer the view's layout from the start (a `FixedLayout`
        with channels-last strides)."""
        views: dict[str, set] = {}
        steps = [s for s in self.steps if isinstance(s, ExternCall)]
        refs = [
            leaf for s in steps for leaf in pytree.tree_leaves((s.buffer.args, s.buffer.kwargs))
        ]
        refs += pytree.tree_leaves(self.graph.outputs)
        for v in refs:
            if isinstance(v, BufferView):
                views.setdefault(v.buffer.name, set()).add(v.layout)
        made_as = {}
        for step in self.steps:
            if not isinstance(step, FusedKernel):
                continue
            for buffer in self.allocated(step):
                seen = views.get(buffer.name, set())
                if len(seen) == 1 and same_memory(view := next(iter(seen)), buffer.layout):
                    made_as[buffer.name] = view
        return made_as

    def plan_memory(self) -> tuple[dict[int, dict[str, str]], dict[int, list[str]]]:
        """For each step, which of its outputs take over a dead buffer ({step: {new: old}}),
        and which buffers die after it ({step: [names]}).

        A dead buffer is `del`eted after its last reader, as inductor's wrapper does: the
        memory goes back to the allocator at once, and the next allocation of that size gets
        it back, still mapped and in cache. Held to the end of the call instead, every
        buffer of the graph is alive at once, and malloc hands the whole heap back to the
        system when they are freed together: each call then faults all of it in again
        (BERT's small config: 10,000 page faults a call, a quarter of its time).
        """
        returned = {
            name for leaf in pytree.tree_leaves(self.graph.outputs) for name in names_in(leaf)
        }
        never = set(returned)  # never handed to another kernel
        last_use, layouts = {}, {}  # layouts: the buffers whose memory is planned here
        for i, step in enumerate(self.steps):
            for buffer in self.allocated(step):
                layouts[buffer.name] = self.made_as.get(buffer.name, buffer.layout)
                last_use[buffer.name] = i  # dies at once if nothing reads it
            if isinstance(step, ExternCall):
                if step.buffer.may_alias:  # its result may be a view of these: keep them
                    never |= {v.buffer.name for v in step.buffer.inputs()}
                last_use[step.name] = i
                for name in names_in((step.buffer.args, step.buffer.kwargs)):
                    last_use[name] = i
            else:
                for name in self.kernel_params[step.name]:
                    last_use[name] = i
        plan, pool, released = {}, [], set()
        for i, step in enumerate(self.steps):
            for name, last in last_use.items():
                if last < i and name in layouts and name not in never and name not in released:
                    pool.append(name)
                    released.add(name)
            for buffer in self.allocated(step):
                match = next((old for old in pool if layouts[old] == layouts[buffer.name]), None)
                if match is not None:
                    pool.remove(match)
                    plan.setdefault(i, {})[buffer.name] = match
        named = {
            b.name for b in self.graph.buffers if b.name in layouts or isinstance(b, ExternKernel)
        }
        taken_over = {old for reuse in plan.values() for old in reuse.values()}
        dead = {}
        for name, last in last_use.items():
            if name in named and name not in returned and name not in taken_over:
                dead.setdefault(last, []).append(name)
        return plan, dead

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
            self.allocate(buffer, reuse)
        self.lines.append(f"    {self.launch(step)}")

    def allocate(self, buffer, reuse: dict[str, str]):
        """`buffer`'s memory: a dead buffer of its layout (`reuse`), or new memory."""
        if buffer.name in reuse:
            old = reuse[buffer.name]
            self.lines.append(f"    {buffer.name} = {old}; del {old}  # reuse")
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
