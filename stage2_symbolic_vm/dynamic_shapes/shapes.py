"""Symbolic sizes: one trace for every size of an input (dynamic shapes).

A static trace holds meta tensors of the very sizes it saw, and stage 3
guards them (`L['x'].size() == (4, 8)`): every new size compiles again. Here a
size can be a *symbol* instead. The first compile of a frame is static; when a
later compile sees an input's size differ from what an earlier one saw, that
dimension becomes a symbol (`s0`) from then on, and one trace serves every
value of it. Python ints that the frame receives become symbols the same way.
This is torch's "automatic dynamic" (torch/_dynamo/pgo.py, `FrameStateSizeEntry`,
and variables/builder.py): the sizes seen are kept per code object in a
`FrameState`, which stage 3's cache owns and hands to each compile.

The symbols are torch's own: `torch.SymInt`s of a `ShapeEnv`, carried by
FakeTensors (`FakeTensorMode(shape_env=...)`). The output size of every op as a
function of the symbols needs a shape function per op; torch's meta kernels are
written over SymInt, so running them on FakeTensors is that function, for
every op, for free -- our own small symbolic integers would need a second set
of shape rules. The ShapeEnv also records every fact the trace relied on
(`s0 >= 4` after `if x.size(0) > 3`, `s0 == s1` after `x + y`) and prints them
as guards over our sources (`produce_guards`). A static trace never makes one:
it keeps meta tensors and performance/meta_cache.py's answers, and imports
neither torch._dynamo nor sympy.

Sizes 0 and 1 stay static, as torch's `specialize_zero_one` keeps them: a size-1
dimension broadcasts, and a kernel written for every size would lose that.
"""

import contextlib
import contextvars
import linecache
import operator
from dataclasses import dataclass, field

import torch

from ..errors import ObservedException, Unsupported
from ..performance import meta_cache
from ..python.sequences import SequenceVariable, TupleVariable
from ..sources import ItemSource, LocalSource, SizeSource, Source
from ..torch_api import autocast
from ..variables import BoundMethodVariable, ConstantVariable, Variable

# torch.compile's own marks (torch._dynamo.mark_dynamic / mark_static write these): ours too.
DYNAMIC_MARK = "_dynamo_dynamic_indices"
STATIC_MARK = "_dynamo_static_indices"


def mark_dynamic(tensor: torch.Tensor, dim) -> None:
    """Make `dim` (an int or a list of them) of this tensor a symbol from the first compile
    on; a compile that specialises it raises ConstraintViolationError."""
    _mark(tensor, DYNAMIC_MARK, dim)


def mark_static(tensor: torch.Tensor, dim) -> None:
    """Keep `dim` of this tensor static, even where automatic dynamic or `dynamic=True`
    would make it a symbol."""
    _mark(tensor, STATIC_MARK, dim)


def _mark(tensor, attribute, dim):
    dims = list(dim) if isinstance(dim, (list, tuple)) else [dim]
    for d in dims:
        if not -tensor.dim() <= d < tensor.dim():
            raise IndexError(f"dim {d} is out of range for a tensor of {tensor.dim()} dims")
    marked = set(getattr(tensor, attribute, set()))
    setattr(tensor, attribute, marked | {d % tensor.dim() for d in dims})


class ConstraintViolationError(RuntimeError):
    """A dimension marked dynamic that the code specialises to one value (torch's
    `ConstraintViolationError`): raised to the caller, never a graph break."""


class RestartTrace(Exception):
    """The first symbol appeared after the trace had recorded ops on meta tensors: the trace
    starts again with every tensor a FakeTensor (a FakeTensor and a meta tensor do not mix)."""


@dataclass
class FrameState:
    """What the compiles of one code object saw: per source, the sizes (None where two
    compiles saw different ones) or the int's value (None once it changed)."""

    sizes: dict = field(default_factory=dict)
    ints: dict = field(default_factory=dict)
    dynamic: set = field(default_factory=set)  # (source, dim) made symbolic so far


@dataclass
class ShapePolicy:
    """How one compile picks its symbols (torch's config names), and what it decided."""

    state: FrameState = field(default_factory=FrameState)
    automatic: bool = True  # automatic_dynamic_shapes: a size seen to change becomes a symbol
    static_by_default: bool = True  # assume_static_by_default; False: every size a symbol
    symbolic: bool = False  # trace with FakeTensors from the start (after a RestartTrace)
    notes: list = field(default_factory=list)  # "dim 0 of local 'x' is now dynamic"


_policy = contextvars.ContextVar("minidynamo_shape_policy", default=None)


@contextlib.contextmanager
def compiling(policy: ShapePolicy):
    """The policy of the frame being compiled, for the traces run inside (stage 3's cache)."""
    token = _policy.set(policy)
    try:
        yield policy
    finally:
        _policy.reset(token)


def current_policy() -> ShapePolicy:
    """The policy set by `compiling`; outside a cache (a bare `trace()`), marks only."""
    policy = _policy.get()
    return policy if policy is not None else ShapePolicy(automatic=False)


def may_be_dynamic(value: torch.Tensor, source: Source) -> bool:
    """Parameters and buffers keep their sizes (torch: `force_parameter_static_shapes`)."""
    if isinstance(value, torch.nn.Parameter):
        return False
    return not (isinstance(source, ItemSource) and getattr(source.base, "member", "") == "_buffers")


def is_argument(source: Source) -> bool:
    """An int the frame received (or found in a list it received): not a module's attribute,
    a global or a closure variable, which torch keeps static too."""
    while isinstance(source, ItemSource):
        source = source.base
    return isinstance(source, LocalSource)


def holds_int_argument(value: tuple, source) -> bool:
    """A tuple the frame received with an int in it (also in a tuple in it), which may become
    a symbol; a module's or a global's tuple stays one constant (builder.py's wrap_tuple)."""
    if source is None or not is_argument(source):
        return False
    inner = [v for v in value if type(v) is tuple]
    return any(type(v) is int for v in value) or any(holds_int_argument(v, source) for v in inner)


class Shapes:
    """The symbols of one trace: a ShapeEnv and a FakeTensorMode, made with the first symbol.

    `symbol_nodes` maps each symbol to the trace input that reads it at run time
    (`L['x'].size()[0]`, or `L['n']`); `tracked` lists the inputs with symbols
    for stage 3's guards; `marked` the symbols of `mark_dynamic` dimensions."""

    def __init__(self, policy: ShapePolicy):
        self.policy = policy
        self.fake_mode = None
        self.env = None
        self.symbol_nodes: dict = {}
        self.tracked: list[tuple[Source, object]] = []
        self.marked: dict = {}
        self.at = None  # the frame the VM is running (vm.py's step): where a symbol was used
        # Autocast's casts happen by the tensors' device, which only FakeTensors keep
        # (torch_api/autocast.py): a trace under autocast is on them from the start.
        if policy.symbolic or autocast.enabled_anywhere(autocast.ambient()):
            self._start()

    @property
    def active(self) -> bool:
        return self.fake_mode is not None

    def _start(self):
        # Imported here: a static trace never pays for sympy and the fake tensor machinery.
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.symbolic_shapes import ShapeEnv

        self.env = ShapeEnv()
        self.fake_mode = FakeTensorMode(shape_env=self.env, allow_non_fake_inputs=True)

    def begin(self, tx):
        """FakeTensors from now on; a trace that already holds meta tensors starts again."""
        if self.active:
            return
        if tx.trace.nodes:
            self.policy.symbolic = True
            raise RestartTrace
        self._start()

    @contextlib.contextmanager
    def mode(self):
        """The context an op runs in: the FakeTensorMode, or nothing for meta tensors.

        With the Python dispatcher on, as torch/_dynamo/utils.py's `get_fake_value` runs every
        op: a composite op's C++ kernel may read `sizes()` (an `int()` of each symbol, which
        pins it to this call's value), and torch registers Python kernels that keep them
        symbolic (`F.interpolate`'s upsample, `torch.unsafe_chunk`; `x @ w` of a 3-d `x`
        in torch 2.11, where GPT-2's `lm_head` pinned the batch size)."""
        if not self.active:
            yield
            return
        from torch._dispatch.python import enable_python_dispatcher

        with self.fake_mode, enable_python_dispatcher():
            yield

    # --- which sizes are symbols ------------------------------------------------------------

    def dynamic_dims(self, tx, value: torch.Tensor, source: Source) -> set[int]:
        """The dims of this input that are symbols in this trace; records its sizes."""
        if not may_be_dynamic(value, source):
            return set()
        size, policy = tuple(value.shape), self.policy
        seen = policy.state.sizes.get(source)
        merged = size
        if policy.automatic and seen is not None and len(seen) == len(size):
            merged = tuple(a if a == b else None for a, b in zip(seen, size, strict=True))
        policy.state.sizes[source] = merged
        dims = {i for i, s in enumerate(merged) if s is None}
        if not policy.static_by_default:
            dims = set(range(len(size)))
        marked = set(getattr(value, DYNAMIC_MARK, ()))
        for dim in sorted(marked):
            if size[dim] in (0, 1):
                self.violation(tx, source, dim, size[dim], "its size is 0 or 1, which torch and "
                               "minidynamo always specialise")  # fmt: skip
        dims = (dims | marked) - set(getattr(value, STATIC_MARK, ()))
        dims = {i for i in dims if size[i] not in (0, 1)}
        for dim in sorted(dims):
            if (source, dim) not in policy.state.dynamic:
                policy.state.dynamic.add((source, dim))
                if seen is not None:
                    policy.notes.append(f"dim {dim} of {source.describe()} is now dynamic")
        return dims

    def int_is_dynamic(self, value: int, source: Source) -> bool:
        """Whether this int argument is a symbol in this trace; records its value."""
        if not is_argument(source):
            return False
        policy, missing = self.policy, object()
        seen = policy.state.ints.get(source, missing)
        changed = seen is not missing and seen != value
        policy.state.ints[source] = None if (changed and policy.automatic) else value
        dynamic = policy.state.ints[source] is None or not policy.static_by_default
        if not dynamic or value in (0, 1):
            return False
        if (source, None) not in policy.state.dynamic:
            policy.state.dynamic.add((source, None))
            if changed:
                policy.notes.append(f"{source.describe()} is now dynamic")
        return True

    # --- symbols born from inputs -----------------------------------------------------------

    def fake_input(self, tx, value: torch.Tensor, source: Source):
        """The FakeTensor of an input tensor, with a symbol for each dynamic dim (and a trace
        input that reads it); None when the trace keeps meta tensors."""
        dims = self.dynamic_dims(tx, value, source)
        if not dims and not self.active:
            return None
        self.begin(tx)
        from torch.fx.experimental.symbolic_shapes import DimDynamic, StatelessSymbolicContext

        kinds = [DimDynamic.DYNAMIC if i in dims else DimDynamic.STATIC for i in range(value.dim())]
        from torch._subclasses.meta_utils import disable_inference_mode_for_fake_prop

        context = StatelessSymbolicContext(dynamic_sizes=kinds)
        with disable_inference_mode_for_fake_prop():  # an inference tensor's FakeTensor would
            # have no version counter either (torch/_dynamo/utils.py does the same)
            fake = self.fake_mode.from_tensor(
                value, source=torch_source(source), symbolic_context=context
            )
        # torch gives a 0-d CPU int tensor a symbol for its value (`.item()` of it), for
        # Dynamo's guards to read; none of ours reads it, so the trace must not use it:
        # reading a tensor's data stays a break, as `.item()` is (Longformer's
        # `x.view(n, torch.div(m, 2))` left guards on a symbol with no source)
        fake.item_memo = None
        marked = set(getattr(value, DYNAMIC_MARK, ()))
        for dim in sorted(dims):  # torch lifts them the same way: `s0` before `L_x_`
            size = fake.size(dim)
            if not isinstance(size, torch.SymInt):
                continue
            symbol = size.node.expr
            if symbol not in self.symbol_nodes:
                self.symbol_nodes[symbol] = tx.trace.add_node(
                    "input", None, source=SizeSource(source, dim), meta=size, lineno=tx.lineno
                )
            if dim in marked:
                self.marked[symbol] = (source, dim)
        self.tracked.append((source, fake))
        return fake

    def symbolic_int(self, tx, value: int, source: Source):
        """A SymNodeVariable for a dynamic int argument, or None to keep it a constant."""
        if not self.int_is_dynamic(value, source):
            return None
        self.begin(tx)
        from torch.fx.experimental.symbolic_shapes import DimDynamic

        symint = self.env.create_unspecified_symint_and_symbol(
            value, torch_source(source), DimDynamic.DYNAMIC
        )
        node = tx.trace.add_node("input", None, source=source, meta=symint, lineno=tx.lineno)
        self.symbol_nodes[symint.node.expr] = node
        self.tracked.append((source, symint))
        tx.trace.assume("type", source)
        return SymNodeVariable(node, symint, self)

    # --- symbols in the trace ---------------------------------------------------------------

    def size_of(self, tx, tensor, dim: int, value):
        """`x.size(dim)`: a constant, the input that reads the symbol, or a `sym_size` node."""
        if not isinstance(value, torch.SymInt):
            return ConstantVariable(value)
        node = self.symbol_nodes.get(value.node.expr)
        if node is None:
            node = tx.trace.add_node(
                "call_function", torch.ops.aten.sym_size.int, (tensor.node, dim),
                meta=value, lineno=tx.lineno,
            )  # fmt: skip
        return SymNodeVariable(node, value, self)

    def metadata(self, tx, tensor, name: str, args: list, result):
        """A metadata op's answer with symbols in it (`x.size()`, `x.numel()`, `x.stride(0)`)."""
        if name == "size" and isinstance(result, torch.SymInt):
            dim = args[1].as_python_constant() if len(args) > 1 else 0
            return self.size_of(tx, tensor, dim % tensor.meta.dim(), result)
        if name == "size":
            return SizeVariable([self.size_of(tx, tensor, i, s) for i, s in enumerate(result)])
        node = tx.trace.add_node(
            "call_method", name, node_args(args), meta=result, lineno=tx.lineno
        )
        if isinstance(result, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return SymNodeVariable(node, result, self)
        items = []
        for i, item in enumerate(result):
            if not isinstance(item, torch.SymInt):
                items.append(ConstantVariable(item))
                continue
            getitem = tx.trace.add_node(
                "call_function", operator.getitem, (node, i), meta=item, lineno=tx.lineno
            )
            items.append(SymNodeVariable(getitem, item, self))
        return TupleVariable(items)

    def arithmetic(self, tx, fn, operands: list):
        """`fn(*operands)` on ints some of which are symbols: a new symbolic int (and a node
        that computes it), a constant, or a comparison decided now (and guarded)."""
        values = [symbolic_value(v) for v in operands]
        result = tx.run_python(fn, *values)
        return self.result(tx, fn, operands, result)

    def result(self, tx, fn, operands, result):
        if isinstance(result, torch.SymBool):  # a branch needs the answer: the ShapeEnv
            return ConstantVariable(self.decide(tx, result))  # guards the side taken
        if isinstance(result, (torch.SymInt, torch.SymFloat)):
            if result.node.expr.is_number:  # `s0 - s0`: a plain number after all
                return ConstantVariable(result.node.pytype(result.node.expr))
            node = tx.trace.add_node(
                "call_function", fn, node_args(operands), meta=result, lineno=tx.lineno
            )
            return SymNodeVariable(node, result, self)
        self.check_marked(tx)
        return tx.wrap_constant_result(result, getattr(fn, "__name__", "operator"))

    def decide(self, tx, value) -> bool:
        """`bool(value)` for a symbolic bool: the ShapeEnv records the guard."""
        answer = bool(value)
        self.check_marked(tx)
        return answer

    # --- mark_dynamic: a symbol must stay a symbol ------------------------------------------

    def check_marked(self, tx=None):
        """Raise ConstraintViolationError if a marked dimension became a single value."""
        tx = tx if tx is not None else self.at
        for symbol, (source, dim) in self.marked.items():
            value = self.env.replace(symbol)
            if value.is_number:
                self.violation(tx, source, dim, int(value), "the code specialises it")

    def violation(self, tx, source, dim, value, why):
        code = tx.code if tx is not None else None
        line = tx.lineno if tx is not None else None
        where, text = "", ""
        if code is not None:
            where = f" at {code.co_filename}:{line} in {code.co_qualname}"
            text = linecache.getline(code.co_filename, line).strip() if line else ""
        raise ConstraintViolationError(
            f"dim {dim} of {source.describe()} was marked dynamic (mark_dynamic), but {why}: "
            f"it can only be {value}{where}" + (f"\n    {text}" if text else "") + "\n"
            "  Remove the mark_dynamic call, or change the code so that it works for every size "
            "(torch raises ConstraintViolationError here too)."
        )


def symbolic_value(value: Variable):
    """The Python value of a constant, a symbolic int, or a tuple or list of them."""
    if isinstance(value, SymNodeVariable):
        return value.value
    if isinstance(value, SequenceVariable):
        kind = value.python_type()
        items = [symbolic_value(v) for v in value.items]
        return tuple(items) if kind is torch.Size else kind(items)
    return value.as_python_constant()


def node_args(values: list) -> tuple:
    """The arguments of a node made here: tensors and symbolic ints by their nodes."""
    return tuple(v.node if hasattr(v, "node") else v.as_python_constant() for v in values)


def has_symbols(value: Variable) -> bool:
    """A symbolic int, or a tuple, list or slice with one inside."""
    if isinstance(value, (SymNodeVariable, SymSliceVariable)):
        return True
    return any(has_symbols(v) for v in getattr(value, "items", ()) if isinstance(v, Variable))


class SymNodeVariable(Variable):
    """An int (or float) computed from symbols: its trace node and its torch.SymInt
    (torch/_dynamo: `SymNodeVariable`). Where the VM needs the number itself (a `range`,
    a list index) it specialises: `int(s0)` makes the ShapeEnv guard `s0 == 4`."""

    def __init__(self, node, value, shapes: Shapes):
        self.node, self.value, self.shapes = node, value, shapes

    def python_type(self):
        return int if isinstance(self.value, torch.SymInt) else float

    def as_python_constant(self):
        number = self.python_type()(self.value)  # guarded: `s0 == 4`
        self.shapes.check_marked()  # a marked dim may not be specialised, here or anywhere
        return number

    def identity(self):
        return self.as_python_constant()

    def truth(self, tx):
        return tx.trace.shapes.decide(tx, self.value != 0)

    def call_method(self, tx, name, args, kwargs):
        if name.startswith("__") and hasattr(operator, name.strip("_")):  # `n.__add__(1)`
            return tx.trace.shapes.arithmetic(tx, getattr(operator, name.strip("_")), [self, *args])
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, cg):
        cg.load_node(self.node)

    def __repr__(self):
        return f"SymNodeVariable({self.node!r}, {self.value})"


class SizeVariable(TupleVariable):
    """A `torch.Size` with symbols in it (`x.shape`): a tuple of ints, some symbolic, with
    torch.Size's own method (torch/_dynamo: `SizeVariable`)."""

    def __init__(self, items):
        super().__init__(items, tuple_type=torch.Size)

    def get_attr(self, tx, name):
        if name == "numel":
            return BoundMethodVariable(self, name)
        return super().get_attr(tx, name)

    def call_method(self, tx, name, args, kwargs):
        if name == "numel" and not args and not kwargs:
            product = ConstantVariable(1)
            for item in self.items:
                product = tx.trace.shapes.arithmetic(tx, operator.mul, [product, item])
            return product
        return super().call_method(tx, name, args, kwargs)


class SymSliceVariable(Variable):
    """A slice with a symbolic bound (`x[:, : x.size(1) - 1]`)."""

    def __init__(self, parts: list):
        self.parts = parts

    def python_type(self):
        return slice

    def as_python_constant(self):
        return slice(*(part.as_python_constant() for part in self.parts))

    def __repr__(self):
        return f"SymSliceVariable({self.parts!r})"


def run_on_fakes(target, meta_args, meta_kwargs, shown, trace_shapes):
    """`run_on_meta` in a trace with symbols: on FakeTensors, under their mode (no cache: the
    answers hold symbols); an op whose output shape depends on the data is a graph break."""
    with trace_shapes.mode(), unsupported_symbolic_ops():
        try:
            return meta_cache.run(target, meta_args, meta_kwargs)
        except (RuntimeError, TypeError, ValueError, IndexError) as error:
            if type(error).__module__.startswith(("torch._subclasses", "torch.fx.experimental")):
                raise
            raise ObservedException(error, shown) from None


@contextlib.contextmanager
def unsupported_symbolic_ops():
    """What FakeTensors raise for an op whose result depends on the data, as a graph break."""
    from torch._subclasses.fake_tensor import (
        DataDependentOutputException,
        DynamicOutputShapeException,
        UnsupportedOperatorException,
    )
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    try:
        yield
    except (DataDependentOutputException, DynamicOutputShapeException) as error:
        raise Unsupported("dynamic_shape_op", f"{error}".splitlines()[0]) from None
    except (UnsupportedOperatorException, GuardOnDataDependentSymNode) as error:
        raise Unsupported("dynamic_shape_op", f"{error}".splitlines()[0]) from None


def torch_source(source: Source):
    """Our source as the `torch._guards.Source` a ShapeEnv names its guards with."""
    return _torch_source_class()(source.name())


_source_class = None


def _torch_source_class():
    global _source_class
    if _source_class is None:
        import functools

        from torch._guards import GuardSource
        from torch._guards import Source as TorchSource

        @dataclass(frozen=True)
        class NamedSource(TorchSource):
            """A source that prints as our own (`L['x']`, `L['self'].fc.weight`)."""

            text: str

            @property
            def _name_template(self):
                return self.text.replace("{", "{{").replace("}", "}}")

            @functools.cached_property
            def name(self):
                return self.text

            @functools.cached_property
            def guard_source(self):
                return GuardSource.LOCAL

        _source_class = NamedSource
    return _source_class
