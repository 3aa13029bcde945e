"""Bytecode that rebuilds Python values: the graph's results, the stack, the locals.

After the compiled graph runs, the new code must hand back Python values
exactly as the original frame had them: the function's result, or at a graph
break every value on the stack and in the live locals. Each symbolic value of
stage 2 rebuilds itself (`Variable.reconstruct(cg)`) with the few operations of
`Codegen` below, as torch/_dynamo/codegen.py's `PyCodegen` does for VariableTrackers:

    a tensor the graph computed   LOAD_FAST ___graph_out; LOAD_CONST i; BINARY_SUBSCR
    a value read from outside     its source: LOAD_FAST x; LOAD_ATTR weight
    a Python constant             LOAD_CONST 3
    a list, tuple or dict         its items, then BUILD_LIST / BUILD_TUPLE / BUILD_MAP
    an object made in the trace   a call that rebuilds it (`rebuild(cls, attrs, contents)`)

A list or dict made inside the trace is built once and kept in a temporary,
so two references to it stay one object. The few 3.11/3.12/3.13 differences
of the instructions we emit are in the small table and the helpers below it.
"""

import builtins
import sys
import types

import torch
from bytecode import FreeVar, Instr

from stage2_symbolic_vm.errors import CannotReconstruct
from stage2_symbolic_vm.numpy_interop import NumpyTensorSource
from stage2_symbolic_vm.python.container_subclasses import ContentsSource
from stage2_symbolic_vm.sources import (
    AttrSource,
    BuiltinSource,
    ClosureSource,
    DictItemSource,
    GlobalSource,
    ImportSource,
    ItemSource,
    LocalSource,
    ReducedSource,
    SizeSource,
    Source,
    reduced_part,
)
from stage2_symbolic_vm.trace import Node
from stage2_symbolic_vm.variables import CellVariable, Variable

PY312 = sys.version_info >= (3, 12)
PY313 = sys.version_info >= (3, 13)
GRAPH_OUT = "___graph_out"

# --- the 3.11 / 3.12 / 3.13 differences of what we emit ----------------------------------------
#   call with n arguments     3.11: PRECALL n; CALL n       3.12, 3.13: CALL n
#   below CALL's arguments    3.11, 3.12: [NULL, callable]  3.13: [callable, NULL]
#                             (CALL_FUNCTION_EX too: `Codegen.push_callable`)
#   LOAD_ATTR                 3.11: arg is the name         3.12, 3.13: (method bit, name)
#   LOAD_GLOBAL               all: (push-NULL bit, name); we push NULL ourselves
#   MAKE_FUNCTION             3.11, 3.12: its flags say which parts are on the stack
#                             3.13: a bare function, then SET_FUNCTION_ATTRIBUTE per part
#   a cell for a closure      3.11, 3.12: LOAD_CLOSURE      3.13: LOAD_FAST of the cell
#   a jump on a value, `not`  3.13 only: TO_BOOL before it (they take an exact bool)


def call(nargs: int) -> list[Instr]:
    """Call the callable below `nargs` arguments (with its NULL: see `Codegen.push_callable`)."""
    return [Instr("CALL", nargs)] if PY312 else [Instr("PRECALL", nargs), Instr("CALL", nargs)]


def load_attr(name: str) -> Instr:
    return Instr("LOAD_ATTR", (False, name) if PY312 else name)


def load_global(name: str) -> Instr:
    return Instr("LOAD_GLOBAL", (False, name))


def load_closure(cell) -> Instr:
    """Push the cell object itself (`cell` is the bytecode library's CellVar or FreeVar)."""
    return Instr("LOAD_FAST" if PY313 else "LOAD_CLOSURE", cell)


def make_function_instructions(flags: int) -> list[Instr]:
    """Make a function of the code on top of the stack and, below it, the parts `flags` names
    (0x08 closure, 0x04 annotations, 0x02 keyword defaults, 0x01 defaults, popped in that
    order)."""
    if not PY313:
        return [Instr("MAKE_FUNCTION", flags)]
    parts = [Instr("SET_FUNCTION_ATTRIBUTE", f) for f in (0x08, 0x04, 0x02, 0x01) if flags & f]
    return [Instr("MAKE_FUNCTION"), *parts]


def to_bool(before: Instr) -> list[Instr]:
    """The TO_BOOL 3.13 wants before a conditional jump or `not` (none before 3.13)."""
    return [Instr("TO_BOOL", location=before.location)] if PY313 else []


class Codegen:
    """Appends instructions to `self.instructions` that push rebuilt values on the stack.

    `graph_outputs` maps a trace node to its index in the tuple the compiled
    graph returned, which the code keeps in the local `___graph_out`. Each
    Variable knows how to rebuild itself (`Variable.reconstruct(cg)`) with the
    few operations below: read a source, load a constant, call a function, build
    a container.
    """

    def __init__(self, graph_outputs: dict[Node, int], globals_: dict | None = None):
        self.graph_outputs = graph_outputs
        self.globals = globals_  # the frame's: functions made in the trace must share them
        self.instructions: list = []
        self.temps: dict[int, str] = {}  # id of a mutable Variable -> the local holding it
        self.temp_count = 0
        self.shared: set[Source] = set()  # sources to keep in a local once read (read_once)
        self.read_into: dict[Source, str] = {}  # ... and the locals that hold them

    def add(self, *instructions):
        self.instructions.extend(instructions)

    def load_const(self, value):
        self.add(Instr("LOAD_CONST", value))

    def push_null(self):
        self.add(Instr("PUSH_NULL"))

    def pop_top(self):
        self.add(Instr("POP_TOP"))

    def load_attr(self, name: str):
        self.add(load_attr(name))

    def push_callable(self, push):
        """Push a callable with `push()`, and the NULL a call wants beside it: below it on 3.11
        and 3.12, above it on 3.13."""
        if not PY313:
            self.push_null()
        push()
        if PY313:
            self.push_null()

    def call_callable(self, fn, *pushers, kwargs: dict | None = None):
        """`fn(*args, **kwargs)` where each pusher emits one argument and `kwargs` maps names to
        Variables; `fn` is any object."""
        self.push_callable(lambda: self.load_const(fn))
        for push in pushers:
            push()
        if not kwargs:
            self.add(*call(len(pushers)))
            return
        self.add(Instr("BUILD_TUPLE", len(pushers)))
        self.build_map(kwargs)
        self.add(Instr("CALL_FUNCTION_EX", 1))

    # --- sources: where a value can be read again ------------------------------------------

    def load_source(self, source: Source):
        """Push the value `source` names, by the loader of its class (`SOURCE_LOADERS`)."""
        if source in self.read_into:
            self.add(Instr("LOAD_FAST", self.read_into[source]))
            return
        load = SOURCE_LOADERS.get(type(source))
        if load is None:  # F (the function object itself) is not reachable from bytecode
            raise CannotReconstruct(f"cannot read {source.describe()} from the new code")
        load(self, source)
        if source in self.shared:
            self.read_into[source] = name = f"___read_{len(self.read_into)}"
            self.add(Instr("COPY", 1), Instr("STORE_FAST", name))

    def read_once(self, sources: list[Source]):
        """The paths that two or more of `sources` go through are read once, into a local,
        as the guard function reads them: `L['self']._modules['encoder']` once for all the
        encoder's parameters. Only for reads made one after another, with nothing run
        between them that could change what a path reaches (the graph's inputs)."""
        seen, self.shared = set(), set()
        for source in sources:
            base = getattr(source, "base", None)
            while base is not None and not isinstance(base, LocalSource):  # LOAD_FAST already
                (self.shared if base in seen else seen).add(base)
                base = getattr(base, "base", None)

    # --- trace nodes and Variables ------------------------------------------------------------

    def load_node(self, node: Node):
        if node.op == "input":  # an input the graph did not change: read it again
            self.load_source(node.source)
            return
        self.add(Instr("LOAD_FAST", GRAPH_OUT))
        self.load_const(self.graph_outputs[node])
        self.add(Instr("BINARY_SUBSCR"))

    def reconstruct(self, var: Variable):
        """Push the Python value of `var` (torch/_dynamo: `PyCodegen.__call__`)."""
        if id(var) in self.temps:  # built once already: the same object again
            self.add(Instr("LOAD_FAST", self.temps[id(var)]))
            return
        var.reconstruct(self)

    # --- closures: cells and the functions made in the trace that capture them ------------

    def make_cells(self, cells: dict):
        """Fresh cells for a frame's own cell variables: all made first, then filled, so
        that functions capturing them (a recursive one captures itself) share them."""
        for name, cell in cells.items():
            self.call_callable(types.CellType)
            self.add(Instr("STORE_FAST", f"___cell_{name}"))
            self.temps[id(cell)] = f"___cell_{name}"
        for name, cell in cells.items():
            if cell.contents is not None:
                self.reconstruct(cell.contents)
                self.add(
                    Instr("LOAD_FAST", f"___cell_{name}"), Instr("STORE_ATTR", "cell_contents")
                )

    def load_cell(self, cell: CellVariable):
        """A cell object (not its contents), for a closure tuple."""
        if isinstance(cell.source, ClosureSource):  # a free variable of the frame itself
            self.add(load_closure(FreeVar(cell.source.free_name)))
        elif cell.source is not None:  # a cell of a function from outside: its source is the cell
            self.load_source(cell.source)
        else:  # made by an inlined call, which the new code does not run
            raise CannotReconstruct("a closure cell of a function inlined by the VM")

    def make_function(self, fn):
        """MAKE_FUNCTION again for a function the trace made (a nested `def` or a lambda)."""
        if fn.globals is not self.globals or getattr(fn, "self_arg", None) is not None:
            raise CannotReconstruct(f"{fn}: other globals, or bound to an object")
        flags = 0
        if fn.defaults:
            self.build_sequence(fn.defaults, "BUILD_TUPLE")
            flags |= 0x01
        if fn.kwdefaults:
            for key, value in fn.kwdefaults.items():
                self.load_const(key)
                self.reconstruct(value)
            self.add(Instr("BUILD_MAP", len(fn.kwdefaults)))
            flags |= 0x02
        if fn.closure:
            for cell in fn.closure:
                self.reconstruct(cell)  # a cell this new code made, or one it can load
            self.add(Instr("BUILD_TUPLE", len(fn.closure)))
            flags |= 0x08
        self.load_const(fn.code)
        self.add(*make_function_instructions(flags))
        self.keep(fn)

    def build_sequence(self, items, opname):
        for item in items:
            self.reconstruct(item)
        self.add(Instr(opname, len(items)))

    def collect(self, opname: str, count: int):
        """BUILD_LIST or BUILD_TUPLE of the `count` values on top of the stack."""
        self.add(Instr(opname, count))

    def build_map(self, items: dict, key_vars: dict | None = None):
        """A dict of Variable values; keys are constants, or Variables in `key_vars`."""
        for key, value in items.items():
            if key_vars and key in key_vars:
                self.reconstruct(key_vars[key])
            else:
                self.load_const(key)
            self.reconstruct(value)
        self.add(Instr("BUILD_MAP", len(items)))

    def new_temp(self) -> str:
        self.temp_count += 1
        return f"___tmp_{self.temp_count - 1}"

    def keep(self, var):
        """Store a just-built mutable value in a temporary: later references reuse it."""
        name = self.new_temp()
        self.temps[id(var)] = name
        self.add(Instr("COPY", 1), Instr("STORE_FAST", name))

    def stash(self):
        """Pop the value on top of the stack into a new temporary; return what pushes it."""
        name = self.new_temp()
        self.add(Instr("STORE_FAST", name))
        return lambda: self.add(Instr("LOAD_FAST", name))


# --- how the new code reads each kind of source ---------------------------------------------
# torch/_dynamo gives each Source a `reconstruct(codegen)` method. Ours are stage 2's, which
# writes no bytecode: their guard expression (`name()`) and their value (`get()`) are read
# there, and the instructions, with their 3.11-3.13 differences, stay here, in one table.


def _load_local(cg: Codegen, source: LocalSource):
    cg.add(Instr("LOAD_FAST", source.local))


def _load_global(cg: Codegen, source: GlobalSource):
    cg.add(load_global(source.global_name))


def _load_builtin(cg: Codegen, source: BuiltinSource):  # B.len: the builtins module, as guards do
    cg.load_const(builtins)
    cg.add(load_attr(source.builtin))


def _load_import(cg: Codegen, source: ImportSource):  # `sys.modules[name]`, as its name() reads
    cg.load_const(sys)  # it: the guards have found it there (import_module would cost a call)
    cg.load_attr("modules")
    cg.load_const(source.module)
    cg.add(Instr("BINARY_SUBSCR"))


def _load_closure_variable(cg: Codegen, source: ClosureSource):  # the function's own closure
    cg.add(Instr("LOAD_DEREF", FreeVar(source.free_name)))


def _load_attribute(cg: Codegen, source: AttrSource):
    if source.member == "__class__":  # `type(x)`, as its name() reads it
        cg.call_callable(type, lambda: cg.load_source(source.base))
        return
    if source.member == "__dict__":  # `object.__getattribute__(x, "__dict__")`
        base, member = source.base, source.member
        cg.call_callable(
            object.__getattribute__, lambda: cg.load_source(base), lambda: cg.load_const(member)
        )
        return
    cg.load_source(source.base)
    cg.add(load_attr(source.member))


def _load_dict_item(cg: Codegen, source: DictItemSource):  # past a subclass's __getitem__
    cg.call_callable(
        dict.__getitem__, lambda: cg.load_source(source.base), lambda: cg.load_const(source.index)
    )


def _load_contents(cg: Codegen, source: ContentsSource):  # past a subclass's own methods
    cg.call_callable(source.kind.copy, lambda: cg.load_source(source.base))


def _load_item(cg: Codegen, source: ItemSource):
    cg.load_source(source.base)
    cg.load_const(source.index)
    cg.add(Instr("BINARY_SUBSCR"))


def _load_reduced(cg: Codegen, source: ReducedSource):  # the list a list iterator walks
    cg.call_callable(
        reduced_part, lambda: cg.load_source(source.base), lambda: cg.load_const(source.path)
    )


def _load_size(cg: Codegen, source: SizeSource):  # a symbol's value: `torch.Tensor.size(x, 0)`
    cg.call_callable(
        torch.Tensor.size, lambda: cg.load_source(source.base), lambda: cg.load_const(source.dim)
    )


def _load_numpy_tensor(cg: Codegen, source: NumpyTensorSource):  # torch.from_numpy(array)
    cg.call_callable(getattr(torch, source.function), lambda: cg.load_source(source.base))


SOURCE_LOADERS = {
    LocalSource: _load_local,
    GlobalSource: _load_global,
    BuiltinSource: _load_builtin,
    ImportSource: _load_import,
    ClosureSource: _load_closure_variable,
    AttrSource: _load_attribute,
    DictItemSource: _load_dict_item,
    ContentsSource: _load_contents,
    ItemSource: _load_item,
    SizeSource: _load_size,
    ReducedSource: _load_reduced,
    NumpyTensorSource: _load_numpy_tensor,
}


class OutputIndex(dict):
    """Trace node -> index in the graph's output tuple, given out as codegen asks for them."""

    def __missing__(self, node):
        self[node] = len(self)
        return self[node]
