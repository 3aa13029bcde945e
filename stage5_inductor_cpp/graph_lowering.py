"""Lowering a whole FX graph, node by node (inductor's graph.py).

`GraphLowering.lower` is the node loop. Each call node goes through `LOWERINGS` and
becomes IR, or becomes an `ExternKernel` that calls torch at run time. The result's
dtype comes from torch itself, by running the op on one-element stand-ins of the
inputs (like_eager/dtypes.py); shapes come from the lowerings. An extern's layout comes
from running it on meta tensors with our layouts (like_eager/externs.py). A value read by
several nodes is stored once where it is dear to compute (performance/reuse.py); the
graph's outputs land in memory. A lowering that raises where torch does not is a bug of
ours (robustness/lowering_bugs.py).

Around the loop, named steps make the result match eager where a caller can see more
than values (like_eager/): the graph first runs on meta tensors for eager's verdict,
strides and writes (meta_run.py); in-place ops are computed out of place and written
back into inputs (in_place.py); outputs land with eager's strides, and memory that the
program reads lies as in eager's (layouts.py). Passes of performance/ rewrite matrix
products (bias_addmm.py, sibling_products.py) and store images channels-last
(channels_last.py). Which device rules apply is the backend's `Rules` (rules.py).
"""

import operator

import torch
import torch.fx
import torch.utils._pytree as pytree

from stage1_eval_frame.logs import get_logger

from . import lowerings  # noqa: F401  (its modules register their lowerings)
from .ir import (
    BufferView,
    ComputedBuffer,
    ExternKernel,
    InputBuffer,
    Layout,
    Pointwise,
    contiguous_strides,
)
from .like_eager import devices, layouts
from .like_eager.dtypes import result_dtype
from .like_eager.externs import ExternValue, MethodOf, extern
from .like_eager.functionalize import without_inplace
from .like_eager.in_place import InPlaceWrites
from .like_eager.meta_run import attribute, run_on_meta, tensors_in
from .lowering import LOWERINGS, Fallback, is_tensor
from .lowerings.arguments import by_position
from .performance import channels_last, reuse
from .performance.bias_addmm import bias_addmm
from .performance.sibling_products import SiblingProducts
from .robustness.lowering_bugs import lowering_bug
from .rules import CPU_RULES, Rules
from .symbolic.sizes import as_size, call_now, fake_mode_of

log = get_logger("kernels")


def _is_ir(value) -> bool:
    return is_tensor(value) or isinstance(value, ExternValue)


class GraphLowering:
    """The IR of one graph: `inputs`, `buffers` in program order, and `outputs`."""

    def __init__(self, gm: torch.fx.GraphModule, example_inputs, rules: Rules | None = None):
        self.gm = gm
        self.example_inputs = example_inputs
        self.rules = CPU_RULES if rules is None else rules  # the device's rules (rules.py)
        self.inputs: list[InputBuffer | None] = []  # None for a Python-number input
        self.constants: dict[str, torch.Tensor] = {}
        self.buffers: list[ComputedBuffer | ExternKernel] = []
        self.outputs = None
        self.current_target = None  # the name of the op being lowered (`"view"`, `"sum"`)
        self.stored: dict[int, tuple[Pointwise, BufferView]] = {}  # by id: `realize`
        self.input_views: dict[torch.fx.Node, BufferView] = {}  # placeholder -> its input
        self.written_inputs: list[int] = []  # positions of the inputs written in place
        self.device = devices.kernel_device(gm, example_inputs)  # like_eager/devices.py
        # What the steps around the node loop learn of the whole graph first (`survey`).
        self.meta = None  # the graph on meta tensors: eager's answers (meta_run.py)
        self.writes: InPlaceWrites | None = None  # its in-place ops (in_place.py)
        self.channels_last = False  # whether images are stored channels-last
        self.visible: set[int] = set()  # the memory the program sees, as eager lays it out
        self.eager_views: dict[str, int] = {}  # extern views in eager's memory -> their start
        self.siblings: SiblingProducts | None = None  # products that share their input

    def new_name(self) -> str:
        return f"buf{len(self.buffers)}"

    def add_buffer(self, data, stride=None) -> BufferView:
        layout = Layout(data.ranges, stride or contiguous_strides(data.ranges), data.dtype)
        buffer = ComputedBuffer(self.new_name(), layout, data)
        self.buffers.append(buffer)
        return BufferView(buffer, layout)

    def realize(self, value, stride=None) -> BufferView:
        """`value` in memory (contiguous unless `stride` says otherwise). A value is stored
        once per layout: a second call, and every node lowered after the first (reuse.py's
        `Values`), reads the same buffer."""
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
        of a graph with convolutions (performance/channels_last.py), else contiguous."""
        if self.channels_last and len(value.ranges) == 4:
            return channels_last.channels_last(self, value)
        return self.realize(value)

    def run(self) -> "GraphLowering":
        with fake_mode_of(self.example_inputs):  # symbolic sizes: torch answers for them
            return self.lower()

    def lower(self) -> "GraphLowering":
        """The node loop."""
        self.survey()
        env = reuse.Values(self.stored)
        # Inputs and constants first: a graph may name a weight just before its use, and a
        # call may read the weights of later ones (sibling products).
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                env[node] = self.input(self.example_inputs[len(self.inputs)])
                if isinstance(env[node], BufferView):
                    self.input_views[node] = env[node]
            elif node.op == "get_attr":
                env[node] = self.constant(attribute(self.gm, node.target))
        for node in self.gm.graph.nodes:
            if node.op == "output":
                self.writes.alias_written_inputs(node, env)  # the caller's tensor comes back
                self.outputs = self.output(layouts.land_outputs(self, node, env))
                self.writes.write_back()  # the inputs written in place get their new values
            elif layouts.asks_layout(node):  # `x.stride()`: eager's answer, not our layout's
                env[node] = layouts.eager_answer(self, node)
            elif node in self.writes:  # an in-place op, computed out of place
                layouts.land_read_memory(self, node, env)  # `x.as_strided_(...)`
                self.writes.lower(node, env)
            elif node.op not in ("placeholder", "get_attr"):
                layouts.land_view_bases(self, node, env)  # memory the program sees, as eager's
                layouts.land_read_memory(self, node, env)
                env[node] = self.lower_node(node, env)
                layouts.note_eager_views(self, node, env)
        return self

    def survey(self):
        """What the node loop needs to know of the whole graph before it starts: eager's
        answers (a bad graph raises here as in eager), which calls write in place, whether
        images are stored channels-last, the memory the program sees, the sibling products."""
        self.meta = run_on_meta(self.gm, self.example_inputs)
        self.channels_last = channels_last.prefers_channels_last(self.gm, self.rules)
        self.visible = layouts.visible_storages(self.gm, self.meta)
        self.writes = InPlaceWrites(self)
        self.siblings = SiblingProducts(self)

    def lower_node(self, node, env):
        """A call's value: a rewrite of performance/ where one applies (an `mm` and its bias
        as one `addmm`; a product of sibling products), else its lowering."""
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), env.__getitem__)
        if (addmm := bias_addmm(self, node, args, kwargs)) is not None:
            return addmm
        if (product := self.siblings.product(node, env)) is not None:
            return product
        return self.lower_call(node, node.op, node.target, args, kwargs, len(node.users))

    def input(self, value):
        if not isinstance(value, torch.Tensor):
            self.inputs.append(None)  # its value is part of the specialisation key
            return as_size(value)  # a symbol's expression for a SymInt (sizes.py)
        layout = Layout.of(value)
        self.inputs.append(InputBuffer(f"arg{len(self.inputs)}", layout))
        return BufferView(self.inputs[-1], layout)

    def constant(self, value):
        if not isinstance(value, torch.Tensor):
            return value
        name = f"const{len(self.constants)}"
        devices.check_device(self, value, f"the constant {name}")
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
            if not tensors_in(made):
                return made
            devices.check_device(self, made, node.name)  # a factory: `torch.ones(3, device="cuda")`
        lowering = LOWERINGS.get(key) if op != "call_module" else None
        self.current_target = key if isinstance(key, str) else getattr(key, "__name__", "")
        devices.check_stays(self, node, args, kwargs)  # `x.cuda()` of a CPU graph
        try:
            if lowering is None:
                raise Fallback("no lowering")
            if (out := made) is None:  # torch's promotion picks the dtype (like_eager/dtypes.py)
                out = result_dtype(lowering, target, args, kwargs, self.device)
            value = lowering(self, out, *args, **kwargs)
            if is_tensor(value) and value.dtype != out.dtype:
                raise Fallback(f"lowering gave {value.dtype}, torch gives {out.dtype}")
            return reuse.maybe_realize(self, node, value, users)  # dear and read again: stored
        except Fallback as error:
            log.info("extern %s (%s): %s", node.name, self.current_target, error)
            return extern(self, node, op, target, args, kwargs)
        # Eager's own error (then the extern's meta run raises it too: EagerOnly), or a bug
        # of the lowering, which calls torch instead and says so (strict mode raises).
        except (TypeError, RuntimeError, IndexError, ValueError) as error:
            value = extern(self, node, op, target, args, kwargs)
            lowering_bug(node, self.current_target, error)
            return value

    def __str__(self) -> str:
        lines = [str(b) for b in self.inputs if b is not None]
        lines += [
            f"{name} = constant {t.dtype}{list(t.shape)}" for name, t in self.constants.items()
        ]
        lines += [str(b) for b in self.buffers]
        lines.append(f"return {pytree.tree_map(str, self.outputs)}")
        return "\n".join(lines)
