"""In-place ops, computed out of place where no one can tell the difference.

Our IR values are immutable: `relu(x)` is a new value and `x` keeps its own. An
in-place op (`x.relu_()`, `F.relu(x, inplace=True)`, `x += 1`, `x[0] = 1`) writes
into `x`, and every later reader of `x` sees the new value. When nothing else can
see the write, the op is computed out of place (`relu(x)`) and the later readers of
`x` read its result instead, while earlier readers keep the old value: exactly what
eager gives each of them. That is functionalization; torch does it for every graph
(torch/_subclasses/functional_tensor.py, under AOTAutograd).

A write into a graph input is computed out of place too, and its final value is
written back into the input's own memory at the end (`WriteBack`): the caller's tensor
changes exactly as in eager. The scheduler runs the write-back after every read of the
input's old value, fused into a kernel only where each read is of the element being
written (`x.add_(1)` is one loop: load, add, store into `x`).

A write into a view (`x[0].add_(1)`, `m.t().mul_(2)`) reaches the view's base and its
other views. Each write has an owner, the tensor whose memory it is (an input, or the
node that made that memory), and a place in it (a `Layout` with an offset): a store
into an input is written back through that layout, the view's elements only; the
base or another view read after the write reads a copy of the owner's memory with the
view stored into it (in_place.py's `store`), which is how inductor lowers the
`as_strided_scatter` of torch's functionalization.

Which calls write, and into what, comes from the meta run (meta_run.py), not from
names: `a & b` is `operator.and_`, whose name ends with "_" but which writes nothing.
A write runs the whole graph in torch, with the reason, where computing it out of place
could give another answer than eager's: it writes a module's tensor (a get_attr node)
or into another tensor than its first argument (or `out=`), an operand shares the
memory it writes from another place, or it changes strides that others see (`t_()`).
"""

import dataclasses
import operator

import torch
import torch.fx
import torch.utils._pytree as pytree

from stage2_symbolic_vm.python.signatures import signature

from ..ir import ComputedBuffer, Layout
from ..lowering import EagerOnly, register
from .meta_run import MetaRun, storage_id, tensors_in

IN_PLACE_OPERATORS = {
    operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
    operator.itruediv: operator.truediv, operator.ifloordiv: operator.floordiv,
    operator.imod: operator.mod, operator.ipow: operator.pow, operator.imatmul: operator.matmul,
    operator.iand: operator.and_, operator.ior: operator.or_, operator.ixor: operator.xor,
    operator.ilshift: operator.lshift, operator.irshift: operator.rshift,
}  # fmt: skip

# Where `torch.relu_` and `F.relu_` find their out-of-place twins, `torch.relu` and `F.relu`.
NAMESPACES = (torch, torch.nn.functional, torch.special)


class OnACopy:
    """`fn` applied to a copy of its first argument: any in-place op, out of place.

    For the ops with no out-of-place twin (`fill_`, `zero_`, `copy_`, `x[i] = v`): the
    copy costs a pass over the tensor, which the extern call into torch costs anyway.
    """

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = f"{getattr(fn, '__name__', fn)}_on_a_copy"

    def __call__(self, tensor, *args, **kwargs):
        result = tensor.clone()
        self.fn(result, *args, **kwargs)
        return result


def inplace_parameter(fn) -> int | None:
    """The position of `fn`'s `inplace` parameter (`F.relu(input, inplace=False)`), or None."""
    try:
        parameters = list(signature(fn).parameters)
    except (TypeError, ValueError):  # torch's builtins (torch.relu) have no Python signature
        return None
    return parameters.index("inplace") if "inplace" in parameters else None


def without_inplace(fn, args, kwargs):
    """The call without its `inplace` argument: functionalization has decided about writes."""
    at = inplace_parameter(fn)
    if at is None:
        return args, kwargs
    return (*args[:at], *args[at + 1 :]), {k: v for k, v in kwargs.items() if k != "inplace"}


def unchanged(tensor, index, value):
    """`x[i] = x[i]` out of place (`Functionalization.stores_itself`): `x` as it is."""
    return tensor


register(unchanged, same_dtype=True)(lambda graph, out, tensor, index, value: tensor)


@dataclasses.dataclass(frozen=True)
class OutOfPlace:
    """An in-place node's out-of-place form: `op`/`target` on the same arguments (less `out=`).

    Its result is the written tensor's new value, which every node in `rebinds` (the
    nodes that are that tensor) stands for from then on; `users` later nodes read it.
    The tensor lies at `view` in the memory of `owner` (a graph input, a module's tensor,
    or the node that made that memory), laid out as `owner_layout`; the `aliases`, other
    tensors in that memory that are read later, see the new values there (a tuple of
    tensors, `split`'s pieces, has a layout per piece: None for one elsewhere).
    """

    op: str
    target: object
    rebinds: tuple[torch.fx.Node, ...]
    users: int
    owner: torch.fx.Node
    owner_layout: Layout
    view: Layout
    aliases: tuple[tuple[torch.fx.Node, Layout | tuple[Layout | None, ...]], ...]


def out_of_place_target(node: torch.fx.Node, fn) -> tuple[str, object]:
    """The call that computes what `node` writes, without writing: (FX op, target)."""
    if node.target in IN_PLACE_OPERATORS:
        return "call_function", IN_PLACE_OPERATORS[node.target]
    if inplace_parameter(fn) is not None or "out" in node.kwargs:  # the lowering drops
        return node.op, node.target  # `inplace=True`, and `out=` is dropped before it
    name = node.target if node.op == "call_method" else getattr(fn, "__name__", "")
    twin = name[:-1] if name.endswith("_") and not name.startswith("_") else None
    if twin and node.op == "call_method" and hasattr(torch.Tensor, twin):
        return "call_method", twin
    for namespace in NAMESPACES:
        if twin and getattr(namespace, name, None) is fn and hasattr(namespace, twin):
            return "call_function", getattr(namespace, twin)
    return "call_function", OnACopy(fn)


@dataclasses.dataclass(frozen=True, eq=False)
class WriteBack(ComputedBuffer):
    """Stores a graph input's final value into the input's own memory: `name` and `layout`
    are the input's. The wrapper allocates nothing for it; the scheduler places it after
    every read of the old value (torch's inductor: a `MutationLayout` buffer)."""


def span(tensor: torch.Tensor) -> tuple[int, int]:
    """The first and one past the last element of its storage that `tensor` can reach."""
    if tensor.numel() == 0:
        return 0, 0
    last = sum((n - 1) * abs(st) for n, st in zip(tensor.shape, tensor.stride(), strict=True))
    return tensor.storage_offset(), tensor.storage_offset() + last + 1


def where_in_memory(tensor: torch.Tensor) -> tuple:
    return storage_id(tensor), tensor.storage_offset(), tensor.shape, tensor.stride(), tensor.dtype


def overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    (a0, a1), (b0, b1) = span(a), span(b)
    return storage_id(a) == storage_id(b) and a0 < b1 and b0 < a1


class Functionalization:
    """The out-of-place form of every node that writes, or `EagerOnly` with the reason."""

    def __init__(self, gm: torch.fx.GraphModule, meta: MetaRun, resolve):
        """`resolve(node)` is the callable behind a call node (GraphLowering.resolve)."""
        self.meta, self.resolve = meta, resolve
        self.nodes = list(gm.graph.nodes)
        self.position = {node: i for i, node in enumerate(self.nodes)}
        self.inputs = meta.input_storages
        self.reshaped: set[int] = set()  # memory that an op like `t_()` sees with new strides

    def forms(self) -> dict[torch.fx.Node, OutOfPlace]:
        for node in self.meta.module_writes:
            raise EagerOnly(f"{node.name} changes the tensors of module {node.target!r} in place")
        writes = [node for node in self.nodes if self.meta.writes.get(node)]
        for node in writes:
            _, tensor, same = self.written(node)
            if isinstance(tensor, torch.Tensor) and self.changes_strides(node, same):
                self.reshaped.add(storage_id(tensor))
        return {node: self.form(node) for node in writes}

    def written(self, node):
        """The node `node` writes into (its first argument, or `out=`), its tensor, and the
        nodes up to `node` that are that tensor."""
        if node.op == "call_module":
            raise EagerOnly(f"{node.name}: the module {node.target!r} writes into its input")
        first = node.args[0] if node.args else node.kwargs.get("input")  # `F.relu(input=x, ...)`
        target = node.kwargs.get("out", first)
        if target not in self.meta.writes[node]:
            names = ", ".join(n.name for n in self.meta.writes[node])
            raise EagerOnly(f"{node.name} writes into {names}, not into its first argument")
        tensor = self.meta.values[target]
        same = [n for n in self.nodes[: self.position[node] + 1] if self.meta.values[n] is tensor]
        return target, tensor, same

    def changes_strides(self, node, same) -> bool:
        """Whether `node` gives the tensor it writes new sizes or strides (`t_()`, `out=` of
        another size): the snapshot after the node against that of the node before it."""
        before = [n for n in same if n is not node and n in self.meta.snapshots][-1]
        return (
            self.meta.snapshots.get(node, self.meta.snapshots[before])
            != self.meta.snapshots[before]
        )

    def form(self, node: torch.fx.Node) -> OutOfPlace:
        target, tensor, same = self.written(node)
        self.check_safe(node, target, tensor)
        owner = self.owner(node, target, tensor)
        base = self.meta.values[owner]
        aliases = []
        for other in self.nodes[: self.position[node]]:
            if other in same or other is node:
                continue
            shared = [
                t
                for t in tensors_in(self.meta.values[other])
                if storage_id(t) == storage_id(tensor)
            ]
            if not shared or not any(self.position[u] > self.position[node] for u in other.users):
                continue
            aliases.append((other, self.places(node, other, tensor, base)))
        # The meta run keeps each tensor's last sizes and strides only: the layouts above
        # hold while no op changes them, or where only the tensor itself is read after it.
        alone = not aliases and tensor is base and owner.op not in ("placeholder", "get_attr")
        if storage_id(tensor) in self.reshaped and not alone:
            raise EagerOnly(
                f"{node.name} changes the sizes or strides of {target.name}, "
                "whose memory the caller or other tensors see"
            )
        later = {u for n in same for u in n.users if self.position[u] > self.position[node]}
        op, fn = out_of_place_target(node, self.resolve(node))
        if self.stores_itself(node, tensor):
            op, fn = "call_function", unchanged  # the place holds these values already
        return OutOfPlace(
            op, fn, tuple(same), len(later), owner, self.relative(node, owner, base),
            self.relative(node, target, base), tuple(aliases),
        )  # fmt: skip

    def owner(self, node, target, tensor) -> torch.fx.Node:
        """Whose memory `node` writes into: the graph input or module tensor it belongs to, or
        the first node whose result it is (the base of every view of it)."""
        storage = storage_id(tensor)
        if storage in self.inputs:
            return self.inputs[storage]
        for other in self.nodes[: self.position[node]]:
            value = self.meta.values[other]
            if isinstance(value, torch.Tensor) and storage_id(value) == storage:
                if value._is_view():  # of memory that no node of the graph made
                    raise EagerOnly(f"{node.name} writes into {target.name}, a view of a view")
                return other
        raise EagerOnly(f"{node.name} writes into {target.name}, whose memory no node made")

    def relative(self, node, other, base: torch.Tensor, tensor=None) -> Layout:
        """Where `other`'s tensor (or `tensor`, one of its pieces) lies in the memory of
        `base`, as a layout of base's buffer."""
        tensor = self.meta.values[other] if tensor is None else tensor
        offset = tensor.storage_offset() - base.storage_offset()
        if tensor.dtype != base.dtype or offset < 0:
            raise EagerOnly(
                f"{node.name} writes into memory that {other.name} sees as {tensor.dtype}"
            )
        return Layout.of(tensor, offset)

    def places(self, node, other, written: torch.Tensor, base: torch.Tensor):
        """`other`'s layout in the written memory; for a tuple of pieces (`split`, `chunk`,
        `unbind`), one per piece, None for a piece of other memory."""
        value = self.meta.values[other]
        if isinstance(value, torch.Tensor):
            return self.relative(node, other, base)
        if not (
            isinstance(value, (tuple, list)) and all(isinstance(t, torch.Tensor) for t in value)
        ):
            raise EagerOnly(f"{node.name} writes into memory that {other.name} holds a part of")
        return tuple(
            self.relative(node, other, base, t) if storage_id(t) == storage_id(written) else None
            for t in value
        )

    def check_safe(self, node, target, tensor):
        """Raise `EagerOnly` where computing `node` out of place could give another answer."""
        where = f"{node.name} writes into {target.name}"
        if not isinstance(tensor, torch.Tensor):
            raise EagerOnly(f"{where}, which is not a tensor")
        storage = storage_id(tensor)
        if storage in self.inputs and self.inputs[storage].op == "get_attr":
            # Each `self.total` of a traced forward is a get_attr node of its own, which the
            # meta run sees as another tensor: a write through one would not reach the others.
            raise EagerOnly(f"{where}, which is the module's tensor {self.inputs[storage].name}")
        result = self.meta.values[node]
        if result is not None and result is not tensor:
            raise EagerOnly(f"{node.name} returns another tensor than the one it writes")
        for other in self.meta.writes[node]:
            if storage_id(self.meta.values[other]) != storage:  # `out=` with an input written
                raise EagerOnly(f"{where} and into {other.name}")
        for other in node.all_input_nodes:  # eager reads them as it writes: refused, or mixed
            value = self.meta.values[other]
            if (
                value is not tensor
                and any(overlaps(t, tensor) for t in tensors_in(value))
                and not (self.stores_itself(node, tensor) and other is node.args[2])
            ):
                raise EagerOnly(f"{where}, whose memory {other.name} shares and reads then")

    def stores_itself(self, node, tensor: torch.Tensor) -> bool:
        """Whether `node` is `x[i] = x[i]`, which stores each element onto itself: Python runs
        `x[i] += v` so (an in-place add into the view `x[i]`, then `setitem` of that view),
        and the add has already written the place the setitem copies onto."""
        if node.target is not operator.setitem or not isinstance(node.args[2], torch.fx.Node):
            return False
        value = self.meta.values[node.args[2]]
        if not isinstance(value, torch.Tensor):
            return False
        index = torch.fx.node.map_arg(node.args[1], self.meta.values.__getitem__)
        if any(isinstance(i, torch.Tensor) for i in pytree.tree_leaves(index)):
            return False  # positions that a tensor holds: `x[i]` is a copy, not a place
        return where_in_memory(tensor[index]) == where_in_memory(value)
