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

Which calls write, and into what, comes from the meta run (meta_run.py), not from
names: `a & b` is `operator.and_`, whose name ends with "_" but which writes nothing.
A write is safe to compute out of place when the tensor it writes is computed inside
the graph or is a graph input itself (not a module's tensor), is not a view of another
tensor, and no other tensor that shares its memory (a view of it, a `detach()`) is read
by the op or after it. Any other write runs the whole graph in torch, with the reason.
"""

import dataclasses
import inspect
import operator

import torch
import torch.fx

from .ir import ComputedBuffer
from .lowering import EagerOnly
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
        parameters = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):  # torch's builtins (torch.relu) have no Python signature
        return None
    return parameters.index("inplace") if "inplace" in parameters else None


def without_inplace(fn, args, kwargs):
    """The call without its `inplace` argument: functionalization has decided about writes."""
    at = inplace_parameter(fn)
    if at is None:
        return args, kwargs
    return (*args[:at], *args[at + 1 :]), {k: v for k, v in kwargs.items() if k != "inplace"}


@dataclasses.dataclass(frozen=True)
class OutOfPlace:
    """An in-place node's out-of-place form: `op`/`target` on the same arguments.

    Its result is the written tensor's new value, which every node in `rebinds` (the
    nodes that are that tensor) stands for from then on; `users` later nodes read it.
    """

    op: str
    target: object
    rebinds: tuple[torch.fx.Node, ...]
    users: int


def out_of_place_target(node: torch.fx.Node, fn) -> tuple[str, object]:
    """The call that computes what `node` writes, without writing: (FX op, target)."""
    if node.target in IN_PLACE_OPERATORS:
        return "call_function", IN_PLACE_OPERATORS[node.target]
    if inplace_parameter(fn) is not None:  # the lowering drops `inplace=True`
        return node.op, node.target
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


class Functionalization:
    """The out-of-place form of every node that writes, or `EagerOnly` with the reason."""

    def __init__(self, gm: torch.fx.GraphModule, meta: MetaRun, resolve):
        """`resolve(node)` is the callable behind a call node (GraphLowering.resolve)."""
        self.meta, self.resolve = meta, resolve
        self.nodes = list(gm.graph.nodes)
        self.position = {node: i for i, node in enumerate(self.nodes)}
        self.inputs = meta.input_storages

    def forms(self) -> dict[torch.fx.Node, OutOfPlace]:
        for node in self.meta.module_writes:
            raise EagerOnly(f"{node.name} changes the tensors of module {node.target!r} in place")
        return {node: self.form(node) for node in self.nodes if self.meta.writes.get(node)}

    def form(self, node: torch.fx.Node) -> OutOfPlace:
        if node.op == "call_module":
            raise EagerOnly(f"{node.name}: the module {node.target!r} writes into its input")
        target = node.args[0] if node.args else None
        if target not in self.meta.writes[node]:
            names = ", ".join(n.name for n in self.meta.writes[node])
            raise EagerOnly(f"{node.name} writes into {names}, not into its first argument")
        tensor = self.meta.values[target]
        same = [n for n in self.nodes[: self.position[node] + 1] if self.meta.values[n] is tensor]
        self.check_safe(node, target, tensor, same)
        later = {u for n in same for u in n.users if self.position[u] > self.position[node]}
        op, fn = out_of_place_target(node, self.resolve(node))
        return OutOfPlace(op, fn, tuple(same), len(later))

    def check_safe(self, node, target, tensor, same):
        """Raise `EagerOnly` unless only `same` (the nodes that are `tensor`) see the write."""
        where = f"{node.name} writes into {target.name}"
        if not isinstance(tensor, torch.Tensor):
            raise EagerOnly(f"{where}, which is not a tensor")
        storage = storage_id(tensor)
        if storage in self.inputs:  # an input itself is written back at the end
            owner = self.inputs[storage]
            if owner.op != "placeholder":
                raise EagerOnly(f"{where}, which is the module's tensor {owner.name}")
            if self.meta.values[owner] is not tensor:
                raise EagerOnly(f"{where}, which is a view of the graph input {owner.name}")
        if tensor._is_view():
            raise EagerOnly(f"{where}, a view of another tensor")
        result = self.meta.values[node]
        if result is not None and result is not tensor:
            raise EagerOnly(f"{node.name} returns another tensor than the one it writes")
        for other in self.meta.writes[node]:
            if storage_id(self.meta.values[other]) != storage:  # `out=`: another tensor
                raise EagerOnly(f"{where} and into {other.name}")
        for other in self.nodes[: self.position[node]]:
            if other in same or storage not in map(storage_id, tensors_in(self.meta.values[other])):
                continue
            if any(self.position[u] >= self.position[node] for u in other.users):
                raise EagerOnly(
                    f"{where}, whose memory {other.name} shares and reads then or later"
                )
