"""Lowering a whole FX graph, node by node (inductor's graph.py).

First the graph runs on meta tensors (meta_run.py): eager's verdict (a bad graph
runs in torch, which raises its error), its strides, and which calls write into
tensors, computed out of place where that is safe (functionalize.py). Then each call
node goes through `LOWERINGS`, or becomes an `ExternKernel` that calls torch. The
result's dtype comes from torch itself, by running the op on one-element stand-ins of
the inputs; shapes come from the lowerings. An extern's layout comes from running it
on meta tensors with our layouts. Outputs land with eager's strides (layouts.py).
"""

import dataclasses
import operator
import warnings

import torch
import torch.fx
import torch.utils._pytree as pytree
from torch._subclasses.fake_tensor import FakeTensor

from stage1_eval_frame.logs import get_logger
from stage3_guards import config

from . import lowerings  # noqa: F401  (its modules register their lowerings)
from .ir import (
    BufferView,
    ComputedBuffer,
    ExternKernel,
    Index,
    InputBuffer,
    Layout,
    Pointwise,
    ReadsCollector,
    Reduction,
    contiguous_strides,
    index_vars,
    set_handler,
)
from .like_eager import layouts
from .like_eager.functionalize import Functionalization, OutOfPlace, WriteBack, without_inplace
from .like_eager.meta_run import (
    STRIDES_FROM_A_CALL,
    MetaRun,
    attribute,
    on_meta_device,
    run_on_meta,
    storage_id,
    strides_from_a_call,
    tensors_in,
)
from .lowering import (
    LOWERINGS,
    SAME_DTYPE,
    SUPPORTED_DTYPES,
    EagerOnly,
    Fallback,
    as_pointwise,
    by_position,
    is_tensor,
    make_pointwise,
)
from .performance.bias_addmm import WRITES_INTO_OUT, bias_addmm, linear_siblings, sibling_products
from .symbolic.sizes import as_size, as_sizes, as_symint, as_symints, hint, is_symbolic

log = get_logger("kernels")

# A value used more than once is computed once into a buffer when it is this expensive;
# below it, recomputing in each consumer is cheaper than a round trip through memory.
REUSE_COST = 20
# ... or when it reads more buffers than this (inductor's `realize_reads_threshold`): a
# residual stream's gradient, a sum over every block after it, would otherwise be read
# again, term by term, by each of its readers.
REUSE_READS = 4
# Where an image between convolutions that only kernels read is computed again in each
# reader, as other values are (`maybe_realize`).
RECOMPUTED_IMAGES_ON = {"cuda"}
MAX_INLINE_COST = 200


def read_stored(node: torch.fx.Node) -> bool:
    """Whether a reader of `node` needs it in memory: a call into torch (an op or method
    without a lowering, a module) or the graph's output. Readers that are all kernels
    compute a cheap image again, as inductor inlines a pointwise value into each of its
    readers unless it is dear (`should_realize_on_reuse`): a training graph's batch-norm
    backward then reads its inputs twice, not a stored copy of each of its terms."""
    lowered = ("call_function", "call_method")  # (a method's lowering is under its name)
    return any(user.op not in lowered or user.target not in LOWERINGS for user in node.users)


@dataclasses.dataclass(frozen=True)
class ExternValue:
    """A non-tensor result of an extern call (the tuple of `torch.max(x, 0)`, say)."""

    buffer: ExternKernel
    meta: object  # the result on meta tensors, for the externs that consume it


class MethodOf:
    """`value.name(...)` for a value that torch made and that is not a tensor (a storage, a
    named tuple): a call into torch at run time, as a Tensor method's is."""

    def __init__(self, name: str):
        self.name = self.__name__ = name

    def __call__(self, value, *args, **kwargs):
        return getattr(value, self.name)(*args, **kwargs)


class LoweringError(Exception):
    """A bug of ours: a lowering disagrees with torch on a graph that torch accepts."""


def _to_meta(value):
    if isinstance(value, BufferView):
        size, stride = as_symints(value.layout.size), as_symints(value.layout.stride)
        return torch.empty_strided(size, stride, dtype=value.layout.dtype, device="meta")
    if isinstance(value, ExternValue):
        return value.meta
    return value


def _stand_in(value):
    """A one-element tensor with `value`'s dtype and rank: enough for torch to pick the dtype."""
    if is_tensor(value):
        return torch.ones((1,) * len(value.ranges), dtype=value.dtype)
    return hint(value) if is_symbolic(value) else value


def call_now(target, args, kwargs):
    """Run a call without IR arguments now: shape arithmetic, a factory. Symbolic sizes
    (sizes.py) go in as torch's SymInts, and come out as expressions."""
    leaves = pytree.tree_leaves((args, kwargs))
    if not any(map(is_symbolic, leaves)):
        return target(*args, **kwargs)
    args, kwargs = pytree.tree_map(as_symint, (args, kwargs))
    return pytree.tree_map(as_size, target(*args, **kwargs))


def _is_ir(value) -> bool:
    return is_tensor(value) or isinstance(value, ExternValue)


def _has_tensor(value) -> bool:
    return any(isinstance(v, torch.Tensor) for v in pytree.tree_leaves(value))


def named_device(name: str, args, kwargs) -> torch.device | None:
    """The device a call says it puts its result on (`x.cuda()`, `x.to("cpu")`, `device=`)."""
    if name in ("cpu", "cuda"):
        return torch.device(name)
    named = [kwargs.get("device")]
    if name == "to":
        named += [a for a in args if isinstance(a, (str, torch.device))]
    return next((torch.device(d) for d in named if d is not None), None)


def loads_of(data: Pointwise) -> list[tuple[str, Index]]:
    """What computing `data` loads: (buffer, index) over the variables x0, x1, ..."""
    collector = ReadsCollector()
    with set_handler(collector):
        data.inner_fn(index_vars("x", len(data.ranges)))
    return collector.loads


def reads_only_its_element(data: Pointwise, layout: Layout, name: str, written) -> bool:
    """Whether `data`, stored into input `name` at `layout`, reads no written input but its
    own element at the index it stores to."""
    store = layout.index(index_vars("x", len(layout.size)))
    return all(n not in written or (n == name and i == store) for n, i in loads_of(data))


class Values(dict):
    """node -> its lowered value, where a value already stored in a buffer (`realize`) reads
    as that buffer: inductor's `realize()` turns a TensorBox into a StorageBox that all its
    later readers load, instead of each recomputing the value (BERT's layer norm feeds the
    three Q, K, V products and the residual add: one store, four reads)."""

    def __init__(self, stored: dict):
        super().__init__()
        self.stored = stored

    def __getitem__(self, node):
        value = super().__getitem__(node)
        return self.stored.get(id(value), (None, value))[1]


class GraphLowering:
    """The IR of one graph: `inputs`, `buffers` in program order, and `outputs`."""

    def __init__(self, gm: torch.fx.GraphModule, example_inputs):
        self.gm = gm
        self.example_inputs = example_inputs
        self.inputs: list[InputBuffer | None] = []  # None for a Python-number input
        self.constants: dict[str, torch.Tensor] = {}
        self.buffers: list[ComputedBuffer | ExternKernel] = []
        self.outputs = None
        self.current_target = None  # the name of the op being lowered (`"view"`, `"sum"`)
        self.meta: MetaRun | None = None  # the graph on meta tensors: eager's answers
        self.out_of_place: dict[torch.fx.Node, OutOfPlace] = {}  # the nodes that write
        self.input_views: dict[torch.fx.Node, BufferView] = {}  # placeholder -> its input
        self.written_inputs: list[int] = []  # positions of the inputs written in place
        # owner -> its memory's value, and the stores into it not yet applied (a copy is
        # made only for a reader); for inputs, every store in order, to write back at the end
        self.memory: dict[torch.fx.Node, tuple[object, list]] = {}
        self.stores: dict[torch.fx.Node, list[tuple[Layout, object]]] = {}
        self.channels_last = False  # whether images are stored channels-last (layouts.py)
        self.visible: set[int] = set()  # the memory the program sees, as eager lays it out
        self.eager_views: dict[str, int] = {}  # extern views in eager's memory -> their start
        self.stored: dict[int, tuple[Pointwise | Reduction, BufferView]] = {}  # by id: realize
        self.siblings: dict = {}  # linear node -> the linears sharing its input (bias_addmm.py)
        self.sibling_results: dict = {}  # linear node -> its slice of the group's product
        tensors = [a for a in example_inputs if isinstance(a, torch.Tensor)]
        self.device = tensors[0].device if tensors else torch.device("cpu")  # the kernels' device

    def new_name(self) -> str:
        return f"buf{len(self.buffers)}"

    def add_buffer(self, data: Pointwise | Reduction, stride=None) -> BufferView:
        layout = Layout(data.ranges, stride or contiguous_strides(data.ranges), data.dtype)
        buffer = ComputedBuffer(self.new_name(), layout, data)
        self.buffers.append(buffer)
        return BufferView(buffer, layout)

    def realize(self, value, stride=None) -> BufferView:
        """`value` in memory (contiguous unless `stride` says otherwise). A value is stored
        once per layout: a second call, and every node lowered after the first (`Values`),
        reads the same buffer."""
        if isinstance(value, BufferView):
            return value
        _, view = self.stored.get(id(value), (None, None))
        if view and (
            view.layout.is_contiguous() if stride is None else view.layout.stride == tuple(stride)
        ):
            return view
        view = self.add_buffer(value, stride)
        self.stored.setdefault(id(value), (value, view))  # the value too: its id stays its own
        return view

    def realize_preferred(self, value) -> BufferView:
        """`value` in memory, in the layout the kernels like best: channels-last for an image
        of a graph with convolutions (layouts.py), else contiguous."""
        if self.channels_last and len(value.ranges) == 4:
            return layouts.channels_last(self, value)
        return self.realize(value)

    def run(self) -> "GraphLowering":
        # Symbolic sizes (sizes.py): the inputs are FakeTensors, and torch's answers about
        # them (meta functions, stand-ins) come from their FakeTensorMode, as in inductor;
        # with the Python dispatcher on, as the frontend traced them (shapes.py): a C++ kernel
        # that reads plain sizes (`x @ w` in torch 2.11) would pin each symbol to its value.
        fakes = [a for a in self.example_inputs if isinstance(a, FakeTensor)]
        if not fakes:
            return self.lower()
        from torch._dispatch.python import enable_python_dispatcher

        with fakes[0].fake_mode, enable_python_dispatcher():
            return self.lower()

    def lower(self) -> "GraphLowering":
        self.meta = run_on_meta(self.gm, self.example_inputs)
        self.channels_last = layouts.prefers_channels_last(self.gm, self.device)
        self.visible = layouts.visible_storages(self.gm, self.meta)
        resolve = lambda node: self.resolve(node.op, node.target)  # noqa: E731
        self.out_of_place = Functionalization(self.gm, self.meta, resolve).forms()
        self.siblings = linear_siblings(self.gm, self.meta)  # bias_addmm.py
        env = Values(self.stored)
        # Inputs and constants first: a graph may name a weight just before its use, and a
        # call may read the weights of later ones (`sibling_products`).
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                env[node] = self.input(self.example_inputs[len(self.inputs)])
                if isinstance(env[node], BufferView):
                    self.input_views[node] = env[node]
            elif node.op == "get_attr":
                env[node] = self.constant(attribute(self.gm, node.target))
        for node in self.gm.graph.nodes:
            if node.op in ("placeholder", "get_attr"):
                continue
            if node.op == "output":
                written = self.written(env)
                self.alias_written_inputs(node, env, written)
                self.outputs = self.output(layouts.land_outputs(self, node, env))
                self.write_back(written)
            elif layouts.asks_layout(node):  # `x.stride()`: eager's answer, not our layout's
                env[node] = layouts.eager_answer(self, node)
            elif node in self.out_of_place:
                layouts.land_read_memory(self, node, env)  # `x.as_strided_(...)`
                self.lower_out_of_place(node, env)
            else:
                layouts.land_view_bases(self, node, env)
                layouts.land_read_memory(self, node, env)
                args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), env.__getitem__)
                env[node] = self.lower_node(node, args, kwargs, env)
                layouts.note_eager_views(self, node, env)
        return self

    # --- inputs written in place (functionalize.py): their final values go back -----------

    def written(self, env) -> dict[str, tuple[BufferView, list]]:
        """The inputs an in-place op wrote into: input name -> (the input, its stores)."""
        return {
            self.input_views[owner].buffer.name: (self.input_views[owner], stores)
            for owner, stores in self.stores.items()
        }

    def alias_written_inputs(self, output, env, written):
        """An output that is (a view of) a written input is that input, as in eager: the
        caller gets its own tensor back, holding the new values."""
        storages = {storage_id(self.meta.values[n]): n for n in self.input_views}
        for arg in output.all_input_nodes:
            result = self.meta.values[arg]
            owner = storages.get(storage_id(result)) if isinstance(result, torch.Tensor) else None
            if owner is None or self.input_views[owner].buffer.name not in written:
                continue
            offset = result.storage_offset() - self.meta.values[owner].storage_offset()
            layout = Layout.of(result, offset)
            env[arg] = BufferView(self.input_views[owner].buffer, layout)

    def write_back(self, written):
        """A `WriteBack` per store into an input, in program order, after every other buffer.
        Its value is computed in the write-back's own loop when that reads no written input
        but its own element, in the first store into it (`x + 1`); else first into a buffer
        of its own (`x.flip(0)`, `y` of `x.copy_(y)` when `y` is written too, a second store),
        so that no loop reads what another iteration or another store overwrote."""
        plans = []
        for name, (_, stores) in written.items():
            for i, (layout, value) in enumerate(stores):
                data = as_pointwise(value)
                if not reads_only_its_element(data, layout, name if i == 0 else None, written):
                    data = as_pointwise(self.add_buffer(data))
                plans.append(WriteBack(name, layout, data))
        self.buffers += plans
        self.written_inputs = [i for i, b in enumerate(self.inputs) if b and b.name in written]

    def input(self, value):
        if not isinstance(value, torch.Tensor):
            self.inputs.append(None)  # its value is part of the specialisation key
            return as_size(value)  # a symbol's expression for a SymInt (sizes.py)
        layout = Layout.of(value)
        self.inputs.append(InputBuffer(f"arg{len(self.inputs)}", layout))
        return BufferView(self.inputs[-1], layout)

    def symbols(self) -> dict[str, str]:
        """Where the wrapper reads each symbol (sizes.py): from an int argument (`_scalar0`),
        else from a size of a tensor argument (`arg1.size(0)`)."""
        found = {}
        for i, (buffer, example) in enumerate(zip(self.inputs, self.example_inputs, strict=True)):
            if buffer is None and is_symbolic(size := as_size(example)) and size.is_Symbol:
                found.setdefault(size.name, f"_scalar{i}")
        for buffer in filter(None, self.inputs):
            for d, size in enumerate(buffer.layout.size):
                if is_symbolic(size) and size.is_Symbol:
                    found.setdefault(size.name, f"{buffer.name}.size({d})")
        return found

    def constant(self, value):
        if not isinstance(value, torch.Tensor):
            return value
        name = f"const{len(self.constants)}"
        self.check_device(value, f"the constant {name}")
        self.constants[name] = value
        layout = Layout.of(value)
        return BufferView(InputBuffer(name, layout), layout)

    def output(self, value):
        if isinstance(value, Pointwise):
            return self.realize(value)
        if isinstance(value, (list, tuple)):
            items = [self.output(v) for v in value]
            if isinstance(value, list):
                return items
            return tuple(items) if type(value) is tuple else type(value)(items)  # `max(x, 0)`
        if isinstance(value, dict):
            return {k: self.output(v) for k, v in value.items()}
        return value

    def resolve(self, op: str, target):
        """The callable behind a call node (a Tensor method for `call_method`)."""
        if op == "call_method":
            return getattr(torch.Tensor, target)
        if op == "call_module":
            return attribute(self.gm, target)
        return target

    def lower_node(self, node, args, kwargs, env):
        if (addmm := bias_addmm(self, node, args, kwargs)) is not None:  # bias_addmm.py
            return addmm
        if (product := sibling_products(self, node, env)) is not None:  # bias_addmm.py
            return product
        return self.lower_call(node, node.op, node.target, args, kwargs, len(node.users))

    def lower_out_of_place(self, node, env):
        """An in-place node, computed out of place: its result is the written tensor's new
        value, for the readers after it (earlier readers keep the old one, as in eager)."""
        form = self.out_of_place[node]
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), env.__getitem__)
        kwargs = {k: v for k, v in kwargs.items() if k != "out"}  # `out=` is the written tensor
        value = self.lower_call(node, form.op, form.target, args, kwargs, form.users)
        want = self.meta.snapshots[node]  # the written tensor, after the write
        if is_tensor(value) and value.dtype != want.dtype:  # `x.add_(y)` keeps x's dtype
            if not torch.can_cast(value.dtype, want.dtype):  # which meta functions may not check
                raise EagerOnly(f"{node.name}: torch cannot write {value.dtype} into {want.dtype}")
            value = make_pointwise(lambda v: v, value, dtype=want.dtype, compute=value.dtype)
        if not is_tensor(value) or tuple(value.ranges) != want.size:
            self.internal_error(f"{node.name} out of place gives {value}, eager {want}")
        value = self.store(form, value, env)
        for same in form.rebinds:  # they stand for the tensor as written from now on
            env[same] = value
            self.meta.snapshots[same] = want
        env[node] = value if isinstance(self.meta.values[node], torch.Tensor) else None

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
        if form.owner in self.input_views:
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
        value, pending = self.memory[owner]
        if layout == owner_layout and not pending:
            return value
        if pending or not (isinstance(value, BufferView) and value.layout == owner_layout):
            value = self.add_buffer(as_pointwise(value), owner_layout.stride)
            for view, stored in pending:
                self.buffers.append(WriteBack(value.buffer.name, view, as_pointwise(stored)))
            self.memory[owner] = (value, [])
        return BufferView(value.buffer, layout)

    def lower_call(self, node, op: str, key, args, kwargs, users: int):
        """Lower the call `op`/`key` (`node`'s, or its out-of-place form) to IR or an extern."""
        target = self.resolve(op, key)
        if op == "call_method" and isinstance(args[0], ExternValue):  # not a tensor's method
            target = MethodOf(key)  # `x.untyped_storage().nbytes()`
        if target in (operator.getitem, getattr) and isinstance(args[0], tuple):
            return target(*args)  # an item of a lowering's tuple (`x.max(-1).values`): no code
        args, kwargs = without_inplace(target, args, kwargs)
        if op != "call_module":  # `F.conv2d(input=x, weight=w)`: by position, as lowerings take
            args, kwargs = by_position(key if op == "call_method" else target, args, kwargs)
        made = None  # a factory's result, made now: its value, size and dtype
        if op != "call_module" and not any(map(_is_ir, pytree.tree_leaves((args, kwargs)))):
            made = call_now(target, args, kwargs)  # shape arithmetic (`x.size(0) * 2`)
            if not _has_tensor(made):
                return made
            self.check_device(made, node.name)  # a factory: `torch.ones(3, device="cuda")`
        lowering = LOWERINGS.get(key) if op != "call_module" else None
        self.current_target = key if isinstance(key, str) else getattr(key, "__name__", "")
        device = named_device(self.current_target, args, kwargs)
        if device is not None and not (
            device.type == self.device.type and device.index in (None, self.device.index)
        ):
            raise EagerOnly(f"{node.name} moves a tensor to {device}, off the kernels' device")
        try:
            if lowering is None:
                raise Fallback("no lowering")
            out = made if made is not None else self.result_dtype(lowering, target, args, kwargs)
            value = lowering(self, out, *args, **kwargs)
            if is_tensor(value) and value.dtype != out.dtype:
                raise Fallback(f"lowering gave {value.dtype}, torch gives {out.dtype}")
            return self.maybe_realize(node, value, users)
        except Fallback as error:
            log.info("extern %s (%s): %s", node.name, self.current_target, error)
            return self.extern(node, op, target, args, kwargs)
        # Eager's own error (then the extern's meta run raises it too: EagerOnly), or a bug
        # of the lowering, which calls torch instead and says so (strict mode raises).
        except (TypeError, RuntimeError, IndexError, ValueError) as error:
            value = self.extern(node, op, target, args, kwargs)
            if config.strict:
                raise LoweringError(
                    f"lowering {node.name} ({self.current_target}) raised {error!r}, torch did not"
                ) from error
            log.warning(
                "lowering %s (%s) raised %r, torch did not: a bug of minidynamo; calling torch",
                node.name,
                self.current_target,
                error,
            )
            return value

    def check_device(self, value, what: str):
        """Kernels read memory on their own device only: a tensor elsewhere (which eager may
        reject, mixing devices) makes the graph run in torch."""
        for tensor in tensors_in(value):
            if tensor.device != self.device:
                raise EagerOnly(f"{what} is on {tensor.device}, the kernels run on {self.device}")

    def internal_error(self, message: str):
        """A bug of ours: strict mode raises it; else the graph runs in torch, with a warning."""
        if config.strict:
            raise LoweringError(message)
        log.warning("a bug of minidynamo: %s; the graph runs in torch", message)
        raise EagerOnly(message)

    @staticmethod
    def result_dtype(lowering, target, args, kwargs) -> torch.Tensor:
        """The result's dtype by torch's own promotion, from one-element stand-ins of the inputs
        (of the first result, for an op that returns several).

        The meta run knows each node's dtype, but not that of an in-place op computed out of
        place (`x.add_(y)` keeps x's dtype, `x.add(y)` promotes); and the stand-ins run
        torch's CPU kernels, which refuse some dtypes that meta functions let through
        (`gelu` of an integer tensor), so that eager's error comes out.
        """
        leaves = pytree.tree_leaves((args, kwargs))
        if any(isinstance(a, ExternValue) for a in leaves):
            raise Fallback("an argument is the non-tensor result of an extern call")
        tensors = [a for a in leaves if is_tensor(a)]
        if lowering in SAME_DTYPE:
            out = torch.empty((), dtype=tensors[SAME_DTYPE[lowering]].dtype)
        else:
            stand_ins = pytree.tree_map(_stand_in, (args, kwargs))
            try:
                with warnings.catch_warnings():  # var of one element warns; eager decides later
                    warnings.simplefilter("ignore")
                    out = target(*stand_ins[0], **stand_ins[1])
            except Exception as error:  # eager fails on these dtypes: let eager say so, in order
                raise EagerOnly(f"torch raises {error!r} for these dtypes") from error
        results = list(out) if isinstance(out, tuple) else [out]  # `max(x, dim)`: two
        if not all(isinstance(r, torch.Tensor) for r in results):
            raise Fallback("the op does not return a tensor")
        dtypes = [r.dtype for r in results] + [t.dtype for t in tensors]
        unsupported = [d for d in dtypes if d not in SUPPORTED_DTYPES]
        if unsupported:
            raise Fallback(f"the kernels do not handle {unsupported[0]}")
        return results[0]

    def maybe_realize(self, node, value, users: int):
        """A value read by several nodes and dear to compute goes to memory (in eager's layout;
        an image of a graph with convolutions, channels-last, computed in memory order)."""
        if not isinstance(value, Pointwise):
            return value
        image = self.channels_last and len(value.ranges) == 4
        if value.cost > MAX_INLINE_COST or (users > 1 and self.stored_once(node, value, image)):
            if image:
                return self.realize_preferred(value)
            return self.realize(value, layouts.eager_stride(value, self.meta.snapshots.get(node)))
        return value

    def stored_once(self, node, value: Pointwise, image: bool) -> bool:
        """Whether a value read by several nodes is stored once rather than computed again in
        each: when it is dear (ops, or buffers read), or when it is an image between
        convolutions that a reader needs in memory (a block's output, read by the next
        convolution and the residual add). Elsewhere than `RECOMPUTED_IMAGES_ON` (the CPU)
        every such image is stored: a reduction loop that selects (a ReLU's gradient) ran
        slower than a store and a reload, ResNet-18's training backward 95 ms of kernels
        against 44."""
        if value.cost > REUSE_COST or len({name for name, _ in loads_of(value)}) > REUSE_READS:
            return True
        return image and (self.device.type not in RECOMPUTED_IMAGES_ON or read_stored(node))

    def extern(self, node, op: str, target, args, kwargs):
        """Call torch at run time; a meta run now gives the result's layout (or eager's error).

        The result may share memory with an argument (a view, `detach`, `contiguous` of a
        contiguous tensor): the meta run says so by its storage, and then the wrapper
        keeps the argument's buffer alive and never hands it to another kernel.
        """

        def realized(value):
            return self.realize(value) if isinstance(value, Pointwise) else value

        images = self.channels_last and target in layouts.CONVOLUTIONS and len(args[0].ranges) == 4
        if images:
            args = (self.realize_preferred(args[0]), *args[1:])
            target = layouts.conv2d_with_channels_last_weights()
        if self.channels_last and (count := layouts.IMAGE_CALLS.get(target)):  # images, as the
            args = (*map(self.realize_preferred, args[:count]), *args[count:])  # kernels store them
        args, kwargs = pytree.tree_map(realized, (args, kwargs))
        meta_args, meta_kwargs = pytree.tree_map(_to_meta, (args, kwargs))
        meta_kwargs = on_meta_device(meta_kwargs)
        meta_target = self.meta.module(target) if op == "call_module" else target
        try:
            out = meta_target(*meta_args, **meta_kwargs)
        except Exception as error:  # a bad graph, or no meta function: eager will tell
            raise EagerOnly(f"{node.name}: on meta tensors torch raises {error!r}") from error
        if isinstance(out, torch.Tensor):
            stride = tuple(out.stride())
            if images:  # oneDNN returns channels-last as cuDNN does; the CPU meta function not
                stride = layouts.channels_last_strides(out.shape)
            elif target in STRIDES_FROM_A_CALL:
                stride = strides_from_a_call(target, self.device, meta_args, meta_kwargs)
            layout = Layout(as_sizes(out.shape), as_sizes(stride), out.dtype)
            arguments = pytree.tree_leaves((meta_args, meta_kwargs))
            shared = {storage_id(a) for a in arguments if isinstance(a, torch.Tensor)}
            may_alias = storage_id(out) in shared
            into_out = target in WRITES_INTO_OUT and not may_alias and layout.is_contiguous()
            buffer = ExternKernel(
                self.new_name(), layout, WRITES_INTO_OUT[target] if into_out else target,
                tuple(args), dict(kwargs), may_alias=may_alias, out=into_out,
            )  # fmt: skip
            self.buffers.append(buffer)
            return BufferView(buffer, layout)
        buffer = ExternKernel(
            self.new_name(), None, target, tuple(args), dict(kwargs), is_tensor=False
        )
        self.buffers.append(buffer)
        return ExternValue(buffer, out)

    def __str__(self) -> str:
        lines = [str(b) for b in self.inputs if b is not None]
        lines += [
            f"{name} = constant {t.dtype}{list(t.shape)}" for name, t in self.constants.items()
        ]
        lines += [str(b) for b in self.buffers]
        lines.append(f"return {pytree.tree_map(str, self.outputs)}")
        return "\n".join(lines)
