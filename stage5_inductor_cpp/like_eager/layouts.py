"""Outputs as eager returns them: with eager's strides, sharing memory where eager's do.

A kernel can store a value with any strides, so an output may as well have those
eager gives it: `(x * 2).permute(1, 0)` has strides (1, 5) in eager, a pointwise op
on a channels-last tensor is channels-last, and a caller may rely on either. The
meta run (meta_run.py) knows eager's strides; here each output lands with them
(inductor's `keep_output_stride`, torch/_inductor/graph.py, follows the FakeTensor's
strides the same way). Intermediate buffers keep the layout the kernels like best.

A view (`y.t()`, `y[:, ::2]`) has no strides of its own: they follow from its base.
So before a view is taken of a computed value whose memory an output shares, that
value lands in memory with eager's strides, and the view then has eager's strides
too; outputs that share memory in eager share it here.

In a graph with 2-D convolutions the images between them are stored channels-last
(performance/channels_last.py), whatever eager's layout. Outputs still land with eager's
strides.

Our layouts are free only where no one can see memory. `as_strided`, `view(dtype)`,
`data_ptr()` and `untyped_storage()` read a tensor's memory itself (`MEMORY_READERS`),
and a caller may read an output's (its `storage_offset()`, after a graph break): there
the tensor, and the base its views are taken of, lands in memory exactly as in eager,
the same strides and offset in a buffer as large as eager's storage (inductor requires
exact strides of the inputs of the same ops). `x.stride()` and `x.is_contiguous()` get
eager's answers, from the meta run.
"""

import dataclasses
from collections.abc import Hashable

import torch
import torch.fx
import torch.utils._pytree as pytree

from stage1_eval_frame.logs import get_logger

from ..ir import BufferView, ExternKernel, InputBuffer, Layout, Reduction
from ..lowering import EagerOnly, as_pointwise, is_tensor, reindex
from ..robustness.lowering_bugs import internal_error
from ..symbolic.sizes import as_size, hint, same
from .meta_run import Snapshot, snapshot, storage_id, tensors_in

log = get_logger("kernels")
aten = torch.ops.aten


def is_dense(size, stride) -> bool:
    """Whether these sizes and strides fill their memory without gaps or overlaps."""
    if 0 in size:
        return True
    expected = 1
    pairs = [(st, sz) for sz, st in zip(size, stride, strict=True) if sz != 1]
    for st, sz in sorted(pairs, key=lambda pair: hint(pair[0])):  # symbols: by their value
        if st != expected:
            return False
        expected *= sz
    return True


def eager_stride(value, want: Snapshot | None):
    """`want`'s strides for a buffer that holds `value` alone, or None (contiguous) if they
    do not describe one (a view with gaps: its base has the buffer)."""
    if want is None or tuple(value.ranges) != want.size or not is_dense(want.size, want.stride):
        return None
    return want.stride


def same_elements(size, stride, other_stride) -> bool:
    """Whether two strides reach the same elements: they may differ where a dim has size 1."""
    return 0 in size or all(
        s == o for n, s, o in zip(size, stride, other_stride, strict=True) if n != 1
    )


def restrided(value: BufferView, want: Snapshot) -> BufferView:
    """`value` with `want`'s strides if they reach the same elements (they differ only in
    dims of size 1, where no index ever steps), else `value` as it is."""
    layout = value.layout
    if layout.stride == want.stride or not same_elements(layout.size, layout.stride, want.stride):
        return value
    return BufferView(value.buffer, dataclasses.replace(layout, stride=want.stride))


def in_memory_order(graph, value, stride) -> BufferView:
    """`value` stored dense with `stride`, by a kernel that loops over the buffer in memory
    order (the dim of stride 1 innermost), as a permuted view of what it stores. A kernel
    loops over its value's dims in their order: a weight's gradient `[O, I, kh, kw]` that
    eager lays out channels-last (`[O, kh, kw, I]` in memory) had an inner loop of 3,
    stepping 512 elements at a time (inductor picks its loop order by strides too,
    `pick_loop_order`)."""
    size, data = tuple(value.ranges), value if isinstance(value, Reduction) else as_pointwise(value)
    # outermost first; a dim of size 1 goes anywhere; a symbol by this call's value (sizes.py)
    order = sorted(range(len(size)), key=lambda d: (-hint(stride[d]) if size[d] != 1 else 0, d))
    if order == sorted(order):  # the dims' own order (contiguous, up to dims of size 1)
        return graph.add_buffer(data, stride)
    at = {d: k for k, d in enumerate(order)}  # dim -> its place in memory order

    def logical(i):  # the index of `value` at position `i` of the buffer
        return [i[at[d]] for d in range(len(size))]

    permuted = tuple(size[d] for d in order)
    if isinstance(value, Reduction):
        inner = value.inner_fn
        data = dataclasses.replace(
            value, ranges=permuted, inner_fn=lambda i, r: inner(logical(i), r)
        )
    else:
        data = as_pointwise(reindex(data, permuted, logical))
    stored = graph.add_buffer(data)
    return BufferView(stored.buffer, Layout(size, tuple(stride), value.dtype))


def land(graph, value, want: Snapshot, copy: bool = False) -> BufferView:
    """`value` in memory with `want`'s strides: as it is, realized so, or copied there.
    `copy` asks for new memory even if `value` has those strides already."""
    if isinstance(value, BufferView) and not copy:
        value = restrided(value, want)
        if value.layout.stride == want.stride:
            return value
    stride = eager_stride(value, want)
    if stride is None:
        log.info("eager's strides %s are a view's: the output is contiguous", list(want.stride))
        return graph.add_buffer(as_pointwise(value))
    return in_memory_order(graph, value, stride)  # a buffer's copy fuses into its kernel


def of_an_input(value) -> bool:
    return isinstance(value, BufferView) and isinstance(value.buffer, InputBuffer)


def land_view_bases(graph, node: torch.fx.Node, env: dict):
    """Before `node` views a computed value whose memory the program sees (an output shares
    it, or an op reads it: `visible_storages`), land that value in eager's memory."""
    meta = graph.meta
    seen = {storage_id(t) for t in tensors_in(meta.values.get(node))} & graph.visible
    for arg in node.all_input_nodes if seen else ():
        base, value, want = meta.values[arg], env[arg], meta.snapshots.get(arg)
        if not (
            is_tensor(value)
            and isinstance(base, torch.Tensor)
            and storage_id(base) in seen
            and eager_stride(value, want) is not None
        ):
            continue
        # An input stands for new memory where our lowering is the identity and eager's
        # op copies (`floor` of an integer tensor): the view's base is landed as a copy.
        if not of_an_input(value) or storage_id(base) not in meta.input_storages:
            copy = of_an_input(value) or needs_new_memory(graph, value, base, want)
            env[arg] = land(graph, value, want, copy=copy)


def land_outputs(graph, node: torch.fx.Node, env: dict):
    """The output node's argument, with each tensor landed as eager returns it."""
    meta = graph.meta
    landed, by_value = {}, {}  # `y` and `y.contiguous()` are one value: one buffer
    for arg in node.all_input_nodes:
        value, result = env[arg], meta.values[arg]
        if id(value) in by_value:
            value = by_value[id(value)]
        elif is_tensor(value) and isinstance(result, torch.Tensor):
            want = snapshot(result)  # what the caller gets: after every in-place op
            if (tuple(value.ranges), value.dtype) != (want.size, want.dtype):
                internal_error(f"output {arg.name} is {value}, eager's is {want}")
            aliases_an_input = storage_id(result) in meta.input_storages
            if arg.meta.get("saved_for_backward") and not of_an_input(value):
                # only the backward reads it (aot.py): it keeps our layout, channels-last
                # images included, as inductor lands only the outputs a user sees
                value = value if isinstance(value, BufferView) else graph.realize_preferred(value)
            elif of_an_input(value) and aliases_an_input:
                value = restrided(value, want)  # a view of the input, in eager too
            else:  # an input's memory must not come back where eager returns new memory
                copy = of_an_input(value) or needs_new_memory(graph, value, result, want)
                value = by_value[id(env[arg])] = land(graph, value, want, copy=copy)
        landed[arg] = value
    return torch.fx.node.map_arg(node.args[0], landed.__getitem__)


# ------------------------------------------------------------------------- memory a program reads

# Ops whose answer depends on where the elements lie in memory, not only on their values:
# `as_strided` reads the storage at the strides it is given, `view(dtype)` reinterprets the
# bytes along the last dim (which must be contiguous), `resize_` keeps the first elements
# of the storage, `data_ptr` and `untyped_storage` hand the memory out. The tensor they
# read (their first argument) must be in memory as in eager. Inductor requires exact
# strides of the inputs of the same ops (`as_strided_ops`, GraphLowering.run_node in
# torch/_inductor/graph.py).
MEMORY_READERS = {
    torch.as_strided, torch.as_strided_scatter, torch.Tensor.as_strided,
    "as_strided", "as_strided_", "as_strided_scatter", "resize_", "resize_as_",
    "data_ptr", "untyped_storage", "storage", "_typed_storage",
    aten.as_strided.default, aten.as_strided_.default, aten.as_strided_scatter.default,
    aten.view.dtype,
}  # fmt: skip
# Questions about a tensor's layout: the code answers them as eager would (the meta run's
# answer), whatever layout our kernels chose. Dynamo's graphs have them as constants already.
LAYOUT_QUESTIONS = {
    "stride", "is_contiguous", "storage_offset",
    torch.Tensor.stride, torch.Tensor.is_contiguous, torch.Tensor.storage_offset,
}  # fmt: skip


def _calls(node: torch.fx.Node, targets) -> bool:
    return (
        node.op in ("call_function", "call_method")
        and isinstance(node.target, Hashable)
        and node.target in targets
    )


def reads_memory(node: torch.fx.Node) -> bool:
    """Whether `node` reads its first argument's memory by its strides (`MEMORY_READERS`)."""
    if node.op in ("call_function", "call_method") and node.target in ("view", torch.Tensor.view):
        return any(isinstance(a, torch.dtype) for a in (*node.args, *node.kwargs.values()))
    return _calls(node, MEMORY_READERS)


def read_argument(node: torch.fx.Node):
    """The tensor whose memory a `MEMORY_READERS` call reads: its first argument."""
    return node.args[0] if node.args else node.kwargs.get("input", node.kwargs.get("self"))


def visible_storages(gm: torch.fx.GraphModule, meta) -> set[int]:
    """The memory a program can see: its outputs', and what `MEMORY_READERS` read."""
    read = [meta.values.get(read_argument(n)) for n in gm.graph.nodes if reads_memory(n)]
    return meta.output_storages | {storage_id(t) for t in read if isinstance(t, torch.Tensor)}


def layout_bytes(layout: Layout | Snapshot) -> int:
    """The bytes from the start of a buffer to the end of the last element `layout` reaches."""
    if 0 in layout.size:
        return 0
    last = sum((n - 1) * st for n, st in zip(layout.size, layout.stride, strict=True))
    return (layout.offset + last + 1) * layout.dtype.itemsize


def storage_bytes(tensor: torch.Tensor) -> int:
    return as_size(tensor.untyped_storage().nbytes())


def owns_its_memory(graph, tensor: torch.Tensor, want: Snapshot) -> bool:
    """Whether eager's `tensor` is the whole of new memory: a new tensor, or a view of one
    that reaches all of it in its order (a copy is as good), not of an input's."""
    return (
        storage_id(tensor) not in graph.meta.input_storages
        and same(want.offset, 0)
        and is_dense(want.size, want.stride)
        and same(layout_bytes(want), storage_bytes(tensor))
    )


def in_eager_memory(graph, value, tensor: torch.Tensor, want: Snapshot) -> bool:
    """Whether `value` lies in memory as eager's `tensor` (`want`, its layout now) does: with
    its strides, at its offset in eager's storage, which is an input's memory, torch's view
    of memory laid out as eager's (`note_eager_views`), or a buffer as large as eager's."""
    if not (isinstance(value, BufferView) and value.layout.size == want.size):
        return False
    layout, buffer = restrided(value, want).layout, value.buffer
    owner = graph.meta.input_storages.get(storage_id(tensor))
    if buffer.name in graph.eager_views:  # our offsets count from the view's first element
        start = graph.eager_views[buffer.name]
    elif owner is not None:  # ... from the input's first element
        if not of_an_input(value):
            return False
        start = next(
            t.storage_offset()
            for t in tensors_in(graph.meta.values[owner])
            if storage_id(t) == storage_id(tensor)
        )
    elif of_an_input(value) or (isinstance(buffer, ExternKernel) and buffer.may_alias):
        return False  # an input's memory where eager's is new; a view of unknown memory
    elif not same(layout_bytes(buffer.layout), storage_bytes(tensor)):
        return False  # a slice of a larger buffer (a linear's columns of a wider product)
    else:
        start = 0
    return all(map(same, layout.stride, want.stride)) and same(
        layout.offset + as_size(start), want.offset
    )


def note_eager_views(graph, node: torch.fx.Node, env: dict):
    """After a call into torch that returns a view (`unfold`, `view(dtype)`): its result is
    in eager's memory when the memory it views is, as torch takes the same view of the same
    layout. Its buffer is noted with where it starts in that memory."""
    value, result = env.get(node), graph.meta.values.get(node)
    if not (
        isinstance(value, BufferView)
        and isinstance(value.buffer, ExternKernel)
        and value.buffer.may_alias
        and value.layout == value.buffer.layout
        and isinstance(result, torch.Tensor)
    ):
        return
    meta = graph.meta
    viewed = [
        a
        for a in node.all_input_nodes
        if isinstance(meta.values[a], torch.Tensor)
        and storage_id(meta.values[a]) == storage_id(result)
    ]
    if viewed and all(
        in_eager_memory(graph, env[a], meta.values[a], meta.snapshots[a]) for a in viewed
    ):
        graph.eager_views[value.buffer.name] = as_size(result.storage_offset())


def needs_new_memory(graph, value, tensor: torch.Tensor, want: Snapshot) -> bool:
    """Whether `value` must be copied to lie where eager's new tensor `tensor` does: it is a
    channels-last image, a contiguous copy of a transposed sum, a linear's columns of a
    wider product (performance/linear.py), an input where eager copies."""
    return owns_its_memory(graph, tensor, want) and not in_eager_memory(graph, value, tensor, want)


def land_read_memory(graph, node: torch.fx.Node, env: dict):
    """Before `node` reads a tensor's memory (`MEMORY_READERS`), put the tensor in memory as
    in eager: a new tensor is copied there; a view is there if its base was landed
    (`land_view_bases`); where neither holds, the graph runs in torch."""
    arg = read_argument(node) if reads_memory(node) else None
    if not isinstance(arg, torch.fx.Node) or not is_tensor(env[arg]):
        return
    tensor, want, value = graph.meta.values[arg], graph.meta.snapshots[arg], env[arg]
    if in_eager_memory(graph, value, tensor, want):
        return
    if owns_its_memory(graph, tensor, want):
        log.info("%s reads the memory of %s: stored in eager's layout", node.name, arg.name)
        env[arg] = land(graph, value, want, copy=True)
        return
    raise EagerOnly(
        f"{node.name} reads the memory of {arg.name}, a view of memory that our kernels "
        "lay out otherwise than eager"
    )


def asks_layout(node: torch.fx.Node) -> bool:
    return _calls(node, LAYOUT_QUESTIONS)


def eager_answer(graph, node: torch.fx.Node):
    """`x.stride()`, `x.is_contiguous()`, `x.storage_offset()` as eager answers them."""
    return pytree.tree_map(as_size, graph.meta.values[node])
