"""The node loop's side of in-place ops: computed out of place, stored into their memory.

functionalize.py decides, for each call that writes, its out-of-place form: what it
computes, whose memory it writes (its owner) and where in it. Here the node loop lowers
that form and keeps track of the memory: a store into an input is written back into the
input's own memory at the end (`WriteBack`), and every other tensor of that memory read
later (the base of a view, another view) reads the memory with the store applied.
"""

import collections

import torch
import torch.fx

from .. import scheduler
from ..ir import BufferView, Layout, Pointwise, index_vars, loads_of
from ..lowering import EagerOnly, as_pointwise, is_tensor, make_pointwise
from ..robustness.lowering_bugs import internal_error
from .functionalize import Functionalization, OutOfPlace, WriteBack
from .meta_run import storage_id


def reads_only_its_element(data: Pointwise, layout: Layout, name: str, written) -> bool:
    """Whether `data`, stored into input `name` at `layout`, reads no written input but its
    own element at the index it stores to."""
    store = layout.index(index_vars("x", len(layout.size)))
    return all(n not in written or (n == name and i == store) for n, i in loads_of(data))


class InPlaceWrites:
    """The graph's in-place ops (`node in writes`), lowered out of place by `lower`."""

    def __init__(self, graph):
        self.graph = graph
        resolve = lambda node: graph.resolve(node.op, node.target)  # noqa: E731
        self.out_of_place: dict[torch.fx.Node, OutOfPlace] = Functionalization(
            graph.gm, graph.meta, resolve
        ).forms()
        # owner -> its memory's value, and the stores into it not yet applied (a copy is
        # made only for a reader); for inputs, every store in order, to write back at the end
        self.memory: dict[torch.fx.Node, tuple[object, list]] = {}
        self.stores: dict[torch.fx.Node, list[tuple[Layout, object]]] = {}

    def __contains__(self, node) -> bool:
        return node in self.out_of_place

    def lower(self, node, env):
        """An in-place node, computed out of place: its result is the written tensor's new
        value, for the readers after it (earlier readers keep the old one, as in eager)."""
        graph, form = self.graph, self.out_of_place[node]
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), env.__getitem__)
        kwargs = {k: v for k, v in kwargs.items() if k != "out"}  # `out=` is the written tensor
        value = graph.lower_call(node, form.op, form.target, args, kwargs, form.users)
        want = graph.meta.snapshots[node]  # the written tensor, after the write
        if is_tensor(value) and value.dtype != want.dtype:  # `x.add_(y)` keeps x's dtype
            if not torch.can_cast(value.dtype, want.dtype):  # which meta functions may not check
                raise EagerOnly(f"{node.name}: torch cannot write {value.dtype} into {want.dtype}")
            value = make_pointwise(lambda v: v, value, dtype=want.dtype, compute=value.dtype)
        if not is_tensor(value) or tuple(value.ranges) != want.size:
            internal_error(f"{node.name} out of place gives {value}, eager {want}")
        value = self.store(form, value, env)
        for same in form.rebinds:  # they stand for the tensor as written from now on
            env[same] = value
            graph.meta.snapshots[same] = want
        env[node] = value if isinstance(graph.meta.values[node], torch.Tensor) else None

    def store(self, form: OutOfPlace, value, env):
        """`value` lands at `form.view` in its owner's memory: a store into an input is
        written back at the end, and every other tensor of that memory read later (the
        base of a view, another view) reads the memory with the store applied, as does
        then the written tensor (eager's results that share memory, ours share too).
        Torch's functionalization scatters the view into its base (`as_strided_scatter`),
        which inductor lowers as we do: a copy of the base, then a store through the view."""
        whole = form.view == form.owner_layout
        old, pending = self.memory.get(form.owner, (env[form.owner], []))
        self.memory[form.owner] = (value, []) if whole else (old, [*pending, (form.view, value)])
        if form.owner in self.graph.input_views:
            stores = self.stores.setdefault(form.owner, [])
            stores[:] = [*(stores if not whole else []), (form.view, value)]
        if not form.aliases:
            return value
        for alias, layout in form.aliases:
            env[alias] = self.aliased(form, env[alias], layout)
        return self.in_memory(form.owner, form.owner_layout, form.view)

    def aliased(self, form: OutOfPlace, old, layout):
        """What an alias of the written memory reads from now on: the memory at its layout;
        for a tuple of pieces, each piece of that memory at its own."""
        if not isinstance(layout, tuple):
            return self.in_memory(form.owner, form.owner_layout, layout)
        if not isinstance(old, (tuple, list)):  # the pieces of an extern call (sizes.py)
            raise EagerOnly(f"a write reaches the pieces of {old}, which torch made")
        pieces = (
            piece if at is None else self.in_memory(form.owner, form.owner_layout, at)
            for piece, at in zip(old, layout, strict=True)
        )
        return type(old)(pieces)

    def in_memory(self, owner, owner_layout: Layout, layout: Layout):
        """The tensor at `layout` in `owner`'s memory, its stores applied: computed where it
        is the whole memory, else read from a buffer laid out as the owner is."""
        graph = self.graph
        value, pending = self.memory[owner]
        if layout == owner_layout and not pending:
            return value
        if pending or not (isinstance(value, BufferView) and value.layout == owner_layout):
            value = graph.add_buffer(as_pointwise(value), owner_layout.stride)
            for view, stored in pending:
                graph.buffers.append(WriteBack(value.buffer.name, view, as_pointwise(stored)))
            self.memory[owner] = (value, [])
        return BufferView(value.buffer, layout)

    # --- at the output: the inputs written in place get their final values ----------------

    def written(self) -> dict[str, tuple[BufferView, list]]:
        """The inputs an in-place op wrote into: input name -> (the input, its stores)."""
        views = self.graph.input_views
        return {
            views[owner].buffer.name: (views[owner], stores)
            for owner, stores in self.stores.items()
        }

    def alias_written_inputs(self, output, env):
        """An output that is (a view of) a written input is that input, as in eager: the
        caller gets its own tensor back, holding the new values."""
        graph, written = self.graph, self.written()
        storages = {storage_id(graph.meta.values[n]): n for n in graph.input_views}
        for arg in output.all_input_nodes:
            result = graph.meta.values[arg]
            owner = storages.get(storage_id(result)) if isinstance(result, torch.Tensor) else None
            if owner is None or graph.input_views[owner].buffer.name not in written:
                continue
            offset = result.storage_offset() - graph.meta.values[owner].storage_offset()
            layout = Layout.of(result, offset)
            env[arg] = BufferView(graph.input_views[owner].buffer, layout)

    def write_back(self):
        """A `WriteBack` per store into an input, in program order, after every other buffer.
        Its value is computed in the write-back's own loop when that reads no written input
        but its own element, in the first store into it (`x + 1`); else first into a buffer
        of its own (`x.flip(0)`, `y` of `x.copy_(y)` when `y` is written too, a second store),
        so that no loop reads what another iteration or another store overwrote."""
        graph, written, plans = self.graph, self.written(), []
        for name, (_, stores) in written.items():
            for i, (layout, value) in enumerate(stores):
                data = as_pointwise(value)
                if not reads_only_its_element(data, layout, name if i == 0 else None, written):
                    data = as_pointwise(graph.add_buffer(data))
                plans.append(WriteBack(name, layout, data))
        graph.buffers += plans
        graph.written_inputs = [i for i, b in enumerate(graph.inputs) if b and b.name in written]


def shares_written_memory(args, written: tuple[int, ...]) -> bool:
    """Whether an input written in place shares memory with another input (`f(x, x[0])`):
    computed out of place, `a.add_(b)` would read b's old values where eager reads new ones,
    so such a call runs in torch (backend.py)."""
    if not written:
        return False
    storages = [  # 0 for an empty tensor's: it has no memory to share
        address
        for a in args
        if isinstance(a, torch.Tensor) and (address := a.untyped_storage().data_ptr())
    ]
    if len(set(storages)) == len(storages):  # the usual call: no two inputs share memory
        return False
    # (one count of all the storages: a count per written input is quadratic, and a
    # training forward writes into many of its inputs)
    counts = collections.Counter(storages)
    return any(counts[args[i].untyped_storage().data_ptr()] > 1 for i in written)


# ------------------------------------------------------------------------ the scheduler's rules


def last_step_before(steps, node) -> int:
    """The last of the scheduler's `steps` that write-back `node` must run in or after (-1
    for any other node): every reader of the input's old value, and every earlier write
    (the copy it stores into, an earlier store)."""
    if not isinstance(node.buffer, WriteBack):
        return -1
    return max(
        (
            i
            for i, step in enumerate(steps)
            if node.name in scheduler.step_reads(step) | step.produced()
        ),
        default=-1,
    )


def refuse_write_back(step, node, n: int) -> str | None:
    """Why write-back `node` cannot join kernel `step` (of `n` outer dims), or None: every
    read of the input's old value there must be of the element the write-back stores (then
    the loop loads `x[i]`, computes, and stores `x[i]`)."""
    if not isinstance(node.buffer, WriteBack):
        return None
    if node.name in step.produced():  # in one loop, another iteration may write later
        return f"the kernel writes {node.name} too"
    for reader in step.nodes:
        for name, index in reader.loads(n):
            why = name == node.name and scheduler.other_element(name, index, node, reader, n)
            if why:
                return f"{reader.name} {why}, which the write-back overwrites"
    return None
