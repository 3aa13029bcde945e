"""The wrapper's memory plan: dead buffers reused or deleted, images allocated as they are read.

A dead buffer is `del`eted after its last reader, as inductor's wrapper does: the memory
goes back to the allocator at once, and the next allocation of that size gets it back,
still mapped and in cache. Held to the end of the call instead, every buffer of the graph
is alive at once, and malloc hands the whole heap back to the system when they are freed
together: each call then faults all of it in again. A buffer whose last reader has run is
also handed to the next allocation of the same layout (`buf4 = buf1  # reuse`).
"""

import torch.utils._pytree as pytree

from ..ir import BufferView, ExternKernel, Layout
from ..like_eager.externs import ExternValue
from ..scheduler import ExternCall, FusedKernel


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


def views_to_allocate(wrapper) -> dict[str, Layout]:
    """Kernel outputs to allocate as the one view of them that extern calls and outputs
    read: {buffer name: that view's layout}.

    A channels-last image is a kernel's (N, H, W, C) buffer, read by the convolution as
    an (N, C, H, W) view with channels-last strides: the same memory in another order.
    Allocated as that view, the buffer is passed as it is, where `reinterpret` would
    make a view of it at each read (an `as_strided` call, for each of a training step's
    many images). Kernels see only the address, so their indexing is unchanged.
    Inductor gives such a buffer the view's layout from the start (a `FixedLayout`
    with channels-last strides)."""
    views: dict[str, set] = {}
    steps = [s for s in wrapper.steps if isinstance(s, ExternCall)]
    refs = [leaf for s in steps for leaf in pytree.tree_leaves((s.buffer.args, s.buffer.kwargs))]
    refs += pytree.tree_leaves(wrapper.graph.outputs)
    for v in refs:
        if isinstance(v, BufferView):
            views.setdefault(v.buffer.name, set()).add(v.layout)
    made_as = {}
    for step in wrapper.steps:
        if not isinstance(step, FusedKernel):
            continue
        for buffer in wrapper.allocated(step):
            seen = views.get(buffer.name, set())
            if len(seen) == 1 and same_memory(view := next(iter(seen)), buffer.layout):
                made_as[buffer.name] = view
    return made_as


def plan_memory(wrapper) -> tuple[dict[int, dict[str, str]], dict[int, list[str]]]:
    """For each step, which of its outputs take over a dead buffer ({step: {new: old}}),
    and which buffers die after it ({step: [names]}): an extern that may return a view of
    its arguments keeps them alive, and nothing takes over an output's memory."""
    returned = {
        name for leaf in pytree.tree_leaves(wrapper.graph.outputs) for name in names_in(leaf)
    }
    never = set(returned)  # never handed to another kernel
    last_use, layouts = {}, {}  # layouts: the buffers whose memory is planned here
    for i, step in enumerate(wrapper.steps):
        for buffer in wrapper.allocated(step):
            layouts[buffer.name] = wrapper.made_as.get(buffer.name, buffer.layout)
            last_use[buffer.name] = i  # dies at once if nothing reads it
        if isinstance(step, ExternCall):
            if step.buffer.may_alias:  # its result may be a view of these: keep them
                never |= {v.buffer.name for v in step.buffer.inputs()}
            last_use[step.name] = i
            for name in names_in((step.buffer.args, step.buffer.kwargs)):
                last_use[name] = i
        else:
            for name in wrapper.kernel_params[step.name]:
                last_use[name] = i
    plan, pool, released = {}, [], set()
    for i, step in enumerate(wrapper.steps):
        for name, last in last_use.items():
            if last < i and name in layouts and name not in never and name not in released:
                pool.append(name)
                released.add(name)
        for buffer in wrapper.allocated(step):
            match = next((old for old in pool if layouts[old] == layouts[buffer.name]), None)
            if match is not None:
                pool.remove(match)
                plan.setdefault(i, {})[buffer.name] = match
    named = {
        b.name for b in wrapper.graph.buffers if b.name in layouts or isinstance(b, ExternKernel)
    }
    taken_over = {old for reuse in plan.values() for old in reuse.values()}
    dead = {}
    for name, last in last_use.items():
        if name in named and name not in returned and name not in taken_over:
            dead.setdefault(last, []).append(name)
    return plan, dead
