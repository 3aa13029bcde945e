"""The wrapper's memory plan: dead buffers reused or deleted, images allocated as they are read.

A dead buffer is `del`eted after its last reader, as inductor's wrapper does: the memory
goes back to the allocator at once, and the next allocation of that size gets it back,
still mapped and in cache. Held to the end of the call instead, every buffer of the graph
is alive at once, and malloc hands the whole heap back to the system when they are freed
together: each call then faults all of it in again. A buffer whose last reader has run is
also handed to the next allocation its memory holds (`buf4 = buf1  # reuse`), and a
kernel may write an output over an input that dies in it (`buf3 = buf2  # in place`).
"""

import torch.utils._pytree as pytree
from torch.nn import Module

from .. import scheduler
from ..ir import BufferView, ExternKernel, Layout
from ..like_eager.externs import ExternValue
from ..like_eager.functionalize import WriteBack
from ..scheduler import ExternCall, FusedKernel
from ..symbolic.sizes import sizes_text


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


def handed_on(step) -> dict[str, Layout]:
    """The memory a step takes that the wrapper may hand to another buffer once it is dead:
    a kernel's stored outputs and an `out=` extern's (allocated by the wrapper), and the
    result of an extern that torch made anew: a tensor no argument shares memory with,
    from an op (a module may return a tensor it keeps)."""
    if isinstance(step, FusedKernel):
        return {
            node.name: node.buffer.layout
            for node in step.nodes
            if node.name not in step.local and not isinstance(node.buffer, WriteBack)
        }
    buffer = step.buffer
    new = buffer.is_tensor and not buffer.may_alias and not isinstance(buffer.target, Module)
    return {buffer.name: buffer.layout} if new else {}


def outputs(graph) -> set[str]:
    """The buffers the graph returns: never handed on, never deleted."""
    return {name for leaf in pytree.tree_leaves(graph.outputs) for name in names_in(leaf)}


def kept(graph, steps) -> set[str]:
    """Buffers whose memory is never handed on: the graph's outputs, and the arguments of an
    extern whose result may be a view of them."""
    never = outputs(graph)
    for step in steps:
        if isinstance(step, ExternCall) and step.buffer.may_alias:
            never |= {v.buffer.name for v in step.buffer.inputs()}
    return never


def holds(old: Layout, new: Layout) -> bool:
    """Whether memory laid out as `old` holds a buffer laid out as `new`, element for element."""
    return old == new or same_memory(old, new)


def write_in_place(graph, steps) -> None:
    """Outputs each kernel writes over an input that dies in it (`FusedKernel.in_place`).

    A batch norm and ReLU after a convolution read each element of its result once, where
    they write their own; nothing reads the result again. Written into that memory, the
    kernel needs no new buffer (`buf3 = buf2; del buf2  # in place`): on the CPU, a new
    image-sized buffer each call is memory the allocator may hand back to the system and
    fault in again. Inductor's scheduler decides the same (`decide_inplace_update` and
    `can_inplace` in torch/_inductor/scheduler.py). The kernel writes the output through
    the input's pointer, one parameter (kernel_writer.py), so that no two pointers of a
    kernel alias. The conditions: the input is memory the wrapper may hand on
    (`handed_on`, not `kept`), of the output's dtype and addresses (`holds`); no later step
    reads it; and in the kernel only the output's own node reads it, only at the element
    it stores (`other_element`), so each element is read before it is written, by the
    same iteration (and, in Triton, the same thread: the stored value depends on it)."""
    never, layouts, last = kept(graph, steps), {}, {}
    for i, step in enumerate(steps):
        layouts.update(handed_on(step))
        last.update(dict.fromkeys(scheduler.step_reads(step), i))
    for i, step in enumerate(steps):
        if not isinstance(step, FusedKernel):
            continue
        n, stored = len(step.outer), handed_on(step)
        for node in step.nodes:
            if node.name not in stored:
                continue
            for old in sorted(node.reads() - step.produced()):
                readers = [other for other in step.nodes if old in other.reads()]
                if (
                    last[old] == i
                    and old in layouts
                    and old not in never
                    and old not in step.in_place.values()
                    and holds(layouts[old], stored[node.name])
                    and readers == [node]
                    and not any(
                        name == old and scheduler.other_element(name, index, node, node, n)
                        for name, index in node.loads(n)
                    )
                ):
                    step.in_place[node.name] = old
                    break


def plan_memory(wrapper) -> tuple[dict[int, dict[str, str]], dict[int, list[str]]]:
    """For each step, its outputs that take over a dead buffer or write over an input in
    place ({step: {new: the line that binds it, `buf4 = buf1; del buf1  # reuse`}}), and
    the buffers that die after it ({step: [names]}). A dead buffer goes to a pool; an
    allocation takes the first one there whose memory holds it (`holds`), as inductor's
    wrapper reuses buffers."""
    never, layouts, last_use = kept(wrapper.graph, wrapper.steps), {}, {}
    for i, step in enumerate(wrapper.steps):
        made = handed_on(step)
        layouts.update({name: wrapper.made_as.get(name, made[name]) for name in made})
        if isinstance(step, ExternCall):
            names = [step.name, *names_in((step.buffer.args, step.buffer.kwargs))]
        else:
            names = [*(b.name for b in wrapper.allocated(step)), *wrapper.kernel_params[step.name]]
        last_use.update(dict.fromkeys(names, i))
    plan, pool, released, taken_over = {}, [], set(), set()
    for i, step in enumerate(wrapper.steps):
        for name, last in last_use.items():
            if last < i and name in layouts and name not in never and name not in released:
                pool.append(name)
                released.add(name)
        for buffer in wrapper.allocated(step):
            new, how = buffer.name, "in place"
            old = getattr(step, "in_place", {}).get(new)  # dies in this step (write_in_place)
            if old is None:
                how = "reuse"
                old = next((old for old in pool if holds(layouts[old], layouts[new])), None)
            if old is not None:
                if old in pool:
                    pool.remove(old)
                released.add(old)
                taken_over.add(old)
                bound = bound_to(old, layouts[old], layouts[new])
                plan.setdefault(i, {})[new] = f"{new} = {bound}; del {old}  # {how}"
    named = {
        b.name for b in wrapper.graph.buffers if b.name in layouts or isinstance(b, ExternKernel)
    }
    returned = outputs(wrapper.graph)
    dead = {}
    for name, last in last_use.items():
        if name in named and name not in returned and name not in taken_over:
            dead.setdefault(last, []).append(name)
    return plan, dead


def bound_to(old: str, was: Layout, layout: Layout) -> str:
    """The expression a buffer laid out as `layout` is bound to, in the memory of `old`."""
    if was == layout:
        return old
    return f"reinterpret({old}, {sizes_text(layout.size)}, {sizes_text(layout.stride)}, 0)"
