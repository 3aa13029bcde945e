"""The symbolic VM: CPython's stack machine, run over Variables instead of objects.

`InstructionTranslator` (torch/_dynamo/symbolic_convert.py has the same name)
holds one frame: its instructions, a value stack, locals and closure cells,
and an instruction pointer. `run()` executes one instruction at a time by
calling the method named after its opname (`def LOAD_FAST(self, inst)`).
Calling a user function starts a child translator on that function's code
(inlining); tensor operations are recorded into the shared Trace.

This file has the loop and the handlers of the opcodes every program uses: loads
and stores, operators, items, calls, jumps, `for` loops and `return`. The rarer
opcodes are mixins from opcodes/: `names.py` (closure cells, globals assigned,
`del`, imports, `super()`), `calls.py` (`f(*args)`, functions made in the trace),
`building.py` (dicts, sets, strings, slices, comprehensions), `control_flow.py`
(generators, `with`, 3.11's `and`/`or`) and `exceptions.py` (`raise`, `try`).

The handlers read as one Python version. The differences between 3.11, 3.12
and 3.13 live in ALIASES (a 3.11 name that means the same as a 3.12 one), in
`push_callable` and `pop_callable` (where the NULL sits beside a callable), and
in the few handlers that check `PY312` or `PY313`.
"""

import builtins
import dis
import inspect
import logging
import sys
import types
from dataclasses import dataclass, field

import torch

from stage1_eval_frame.logs import get_logger

from . import builder, numpy_interop, sources
from .dynamic_shapes import shapes
from .errors import Location, ObservedException, Unsupported
from .functions import UserFunctionVariable
from .opcodes.building import Building
from .opcodes.calls import Calls
from .opcodes.classes import Classes
from .opcodes.control_flow import ControlFlow
from .opcodes.exceptions import Exceptions
from .opcodes.names import Names
from .python import operators
from .python.dicts import DictVariable, realized
from .python.outside_objects import ObjectVariable
from .python.sequences import ListVariable, SequenceVariable, TupleVariable
from .side_effects import SideEffects
from .torch_api import autocast, grad_modes
from .trace import Trace, bind_frame
from .variables import (
    NULL,
    ConstantVariable,
    LazyVariable,
    TensorVariable,
    Variable,
    is_constant_value,
)

log = get_logger("trace")
PY312 = sys.version_info >= (3, 12)
PY313 = sys.version_info >= (3, 13)
MAX_INLINE_DEPTH = 32
MAX_INSTRUCTIONS = 100_000
GENERATOR_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR

# 3.11 spells some instructions differently from 3.12; they share one handler. dis gives every
# jump an absolute target offset, so a jump backward is a jump.
ALIASES = {
    f"POP_JUMP_{direction}_IF_{test}": f"POP_JUMP_IF_{test}"
    for direction in ("FORWARD", "BACKWARD")
    for test in ("FALSE", "TRUE", "NONE", "NOT_NONE")
}
ALIASES |= dict.fromkeys(("JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT"), "JUMP_FORWARD")
ALIASES["LOAD_FAST_CHECK"] = "LOAD_FAST"  # 3.12: LOAD_FAST where the local may be unbound


@dataclass
class VMState:
    """A frame's state before one instruction: what a debugger (or stage 4) needs to see."""

    function: str
    offset: int
    opname: str
    lineno: int | None
    ip: int  # index of the instruction in `dis.get_instructions(code)`
    stack: list
    locals: dict
    cells: dict = field(default_factory=dict)
    exception_handler: int | None = None  # offset of the innermost `except` covering it

    def __str__(self):
        lines = [f"{self.function} @ {self.offset} {self.opname} (line {self.lineno})"]
        lines.append("  stack:  " + ", ".join(map(repr, self.stack)))
        lines += [f"  local {name} = {value!r}" for name, value in self.locals.items()]
        lines += [f"  cell {name} = {cell.contents!r}" for name, cell in self.cells.items()]
        return "\n".join(lines)


def trace(fn, *args, **kwargs) -> Trace:
    """Run `fn(*args, **kwargs)` symbolically and return the Trace of its tensor operations.

    `fn` is a Python function or a bound method (`model.forward`). Raises
    `Unsupported` where it cannot go on; the exception carries the reason,
    the place and the VM's state there.
    """
    L, _, _ = bind_frame(fn, args, kwargs)
    function = fn.__func__ if isinstance(fn, types.MethodType) else fn
    if not isinstance(function, types.FunctionType):
        raise TypeError(f"trace() needs a Python function or method, got {type(fn).__name__}")
    code = function.__code__
    if code.co_flags & GENERATOR_FLAGS:
        raise Unsupported("unsupported_value", f"{code.co_qualname} is a generator function")
    with shapes.compiling(shapes.current_policy()), grad_modes.outside_inference_mode():
        while True:  # once, or twice when the first symbol appears late (shapes.RestartTrace)
            tx = InstructionTranslator(code, function.__globals__, Trace(code))
            if isinstance(fn, types.MethodType):  # the method's `self` is not an argument
                tx.locals[code.co_varnames[0]] = LazyVariable(
                    fn.__self__, sources.AttrSource(sources.FunctionSource(), "__self__")
                )
            tx.locals.update({n: LazyVariable(v, sources.LocalSource(n)) for n, v in L.items()})
            tx.bind_closure(function)
            try:
                output = tx.run()
                break
            except shapes.RestartTrace:
                continue
    if tx.side_effects:
        raise Unsupported(
            "unsupported_mutation",
            f"the function changes {tx.side_effects.describe()}: a replay of the trace alone "
            "would lose the change (stage 4 writes such changes back)",
        )
    tx.trace.output = output_structure(realized(tx, output))
    log.info("traced %s:\n%s", code.co_qualname, tx.trace)
    return tx.trace


def output_structure(value: Variable):
    """The returned Variable as a structure of nodes and constants (Trace.output)."""
    if isinstance(value, (TensorVariable, shapes.SymNodeVariable)):
        return numpy_interop.output_of(value)  # its node (as NumPy's array, for an ndarray)
    if isinstance(value, SequenceVariable):
        return value.python_type()([output_structure(v) for v in value.items])
    if isinstance(value, DictVariable):
        return {k: output_structure(v) for k, v in value.items.items()}
    if value.is_python_constant():
        return value.as_python_constant()
    raise Unsupported(
        "unsupported_value", f"the function returns {value}, which a trace cannot hold"
    )


class InstructionTranslator(Names, Calls, Classes, Building, ControlFlow, Exceptions):
    """One frame of the symbolic VM. The root frame traces `fn`; children are inlined calls.
    The handlers of the rarer opcodes come from the mixins of opcodes/ (see the module
    docstring)."""

    def __init__(self, code, globals_, trace, parent=None, globals_source=None):
        self.code, self.globals, self.trace, self.parent = code, globals_, trace, parent
        self.globals_source = globals_source  # None: the traced function's globals, G
        self.instructions = list(dis.get_instructions(code))
        self.index_of = {inst.offset: i for i, inst in enumerate(self.instructions)}
        self.exception_entries = dis.Bytecode(code).exception_entries
        self.stack: list[Variable] = []
        self.locals: dict[str, Variable] = {}
        self.cells: dict = {}  # name -> CellVariable: the closure cells
        self.ip = 0  # the next instruction to run
        self.current = 0  # the instruction running now
        self.lineno = code.co_firstlineno
        self.kw_names = ()
        self.depth = parent.depth + 1 if parent else 0
        self.wrapped = parent.wrapped if parent else {}  # source -> Variable, shared by all frames
        self.side_effects = parent.side_effects if parent else SideEffects(trace)
        # id of a cell from outside -> (the cell, its one CellVariable), shared by all frames:
        # a cell reached by two paths (a free variable, and a closure of a function) is one.
        self.outside_cells = parent.outside_cells if parent else {}
        self.counter = parent.counter if parent else [0]
        self.return_value = None
        self.yielded = None  # a generator's frame pauses at `yield` with the value here
        self.done = False
        self.handled: list = []  # the exceptions being handled (`except` blocks entered)
        self.grad_enabled = parent.root().grad_enabled if parent else torch.is_grad_enabled()
        self.autocast = parent.autocast if parent else autocast.ambient()  # one dict per trace
        if trace.shapes is None:  # the root frame: symbols as the frame's cache decides
            trace.shapes = shapes.Shapes(shapes.current_policy())

    # --- the interpreter loop -----------------------------------------------------------------

    def run(self) -> Variable:
        """Run until the frame returns (or, for a generator, until its next `yield`)."""
        self.done = False
        while not self.done:
            self.current, inst = self.ip, self.instructions[self.ip]
            before = self.state() if self.parent is None else None
            self.ip += 1
            self.lineno = inst.positions.lineno or self.lineno
            if log.isEnabledFor(logging.DEBUG):
                log.debug(
                    "%s%s %s  stack=%s", "  " * self.depth, inst.offset, inst.opname, self.stack
                )
            try:
                self.step(inst)
            except ObservedException as error:
                if self.handle_exception(inst, error):
                    continue  # the code catches it itself
                self.stopped(inst, error, before)
                raise
            except Unsupported as error:
                self.stopped(inst, error, before)
                raise
        return self.return_value

    def stopped(self, inst, error: Unsupported, before):
        """Say where the VM stopped, as the error leaves each frame."""
        error.frames.insert(0, self.location(inst))
        if self.parent is None:
            error.state, error.trace = before, self.trace
            error.side_effects = self.side_effects
            log.info("stopped in %s: %s", self.code.co_qualname, error)

    def step(self, inst):
        self.counter[0] += 1
        if self.counter[0] > MAX_INSTRUCTIONS:
            raise Unsupported("trace_limit", f"more than {MAX_INSTRUCTIONS} instructions")
        handler = getattr(self, ALIASES.get(inst.opname, inst.opname), None)
        if handler is None or not inst.opname.isupper():
            raise Unsupported("unsupported_opcode", f"no handler for opcode {inst.opname}")
        self.trace.shapes.at = self  # the line a symbol is specialised at (dynamic_shapes/)
        handler(inst)

    def state(self) -> VMState:
        """The frame at the instruction running now: its stack and locals as they are."""
        inst = self.instructions[self.current]
        covering = [e for e in self.exception_entries if e.start <= inst.offset < e.end]
        handler = max(covering, key=lambda e: e.start).target if covering else None
        lineno = inst.positions.lineno or self.lineno
        return VMState(
            function=self.code.co_qualname,
            offset=inst.offset,
            opname=inst.opname,
            lineno=lineno,
            ip=self.current,
            stack=list(self.stack),
            locals=dict(self.locals),
            cells=dict(self.cells),
            exception_handler=handler,
        )

    def location(self, inst) -> Location:
        return Location(
            self.code.co_qualname, self.code.co_filename, self.lineno, inst.offset, inst.opname
        )

    # --- helpers the Variables call back into -------------------------------------------------

    def push(self, value):
        self.stack.append(value)

    def pop(self):
        return self.stack.pop()

    def popn(self, n):
        if n == 0:
            return []
        values, self.stack[-n:] = self.stack[-n:], []
        return values

    def jump(self, offset):
        self.ip = self.index_of[offset]

    def read(self, value):
        """An outside value becomes a Variable the first time the code reads it."""
        return value.realize(self) if isinstance(value, LazyVariable) else value

    def read_local(self, name):
        if name not in self.locals:
            raise ObservedException(
                UnboundLocalError(f"local variable {name!r} is read before assignment")
            )
        self.locals[name] = self.read(self.locals[name])
        return self.locals[name]

    def wrap(self, value, source):
        """An outside value as a Variable (builder.py)."""
        return builder.wrap(self, value, source)

    def record_call(self, target, args, kwargs):
        return numpy_interop.record_call(self, target, args, kwargs)  # tensor_ops', or NumPy's

    def run_python(self, fn, *args, **kwargs):
        """Run a Python function on constants; an error it raises is an error of the traced code."""
        try:
            return fn(*args, **kwargs)
        except Exception as error:  # re-raised as a named Unsupported, not swallowed
            name = getattr(fn, "__name__", repr(fn))
            raise ObservedException(error, name) from None

    def wrap_constant_result(self, value, what):
        """A Python value computed now from constants (a folded call) as a Variable."""
        if is_constant_value(value):
            return ConstantVariable(value)
        if type(value) in (list, tuple, dict, set, frozenset) or isinstance(value, type):
            return self.wrap(value, None)  # made now: no source, nothing to assume
        raise Unsupported("unsupported_value", f"{what} returned a {type(value).__name__}")

    def global_source(self, name):
        if self.globals_source is None:
            return sources.GlobalSource(name)
        return sources.ItemSource(self.globals_source, name)

    def truth(self, value) -> bool:
        return value.truth(self)

    def inline_call(self, fn: UserFunctionVariable, args, kwargs):
        """Run a user function's bytecode in a child frame: the call is traced, not made."""
        if self.depth >= MAX_INLINE_DEPTH:
            raise Unsupported("trace_limit", f"calls nested deeper than {MAX_INLINE_DEPTH}")
        arguments = fn.bind(args, kwargs)
        # Globals are read through G when they are the traced function's, else through the
        # function's own source (its module's __dict__, or its __globals__).
        own = fn.globals is self.root().globals
        child = InstructionTranslator(
            fn.code, fn.globals, self.trace, self, None if own else fn.globals_source
        )
        child.locals = {name: self.read(value) for name, value in arguments.items()}
        child.cells = dict(zip(fn.code.co_freevars, fn.closure, strict=True))
        if fn.code.co_flags & GENERATOR_FLAGS:  # runs up to each `yield` when asked for an item
            return self.start_generator(fn, child)  # (opcodes/control_flow.py)
        return child.run()

    def root(self):
        return self if self.parent is None else self.parent.root()

    def call(self, fn, args, kwargs):
        return fn.call(self, args, kwargs)

    # --- stack and constants ------------------------------------------------------------------

    def NOP(self, inst):
        pass

    # Nothing to do symbolically: RESUME marks the start, PRECALL (3.11) prepares a CALL,
    # COPY_FREE_VARS copies the closure (our cells are set up with the frame), and dis has
    # already folded EXTENDED_ARG into the next instruction's argument. CACHE entries never
    # show: `dis.get_instructions` hides them (show_caches=False) and computes jump targets.
    RESUME = PRECALL = COPY_FREE_VARS = EXTENDED_ARG = NOP

    def POP_TOP(self, inst):
        self.pop()

    def PUSH_NULL(self, inst):
        self.push(NULL)

    def COPY(self, inst):
        self.push(self.stack[-inst.arg])

    def SWAP(self, inst):
        self.stack[-1], self.stack[-inst.arg] = self.stack[-inst.arg], self.stack[-1]

    def LOAD_CONST(self, inst):
        value = inst.argval
        self.push(ConstantVariable(value) if is_constant_value(value) else ObjectVariable(value))

    # --- locals, globals, attributes -----------------------------------------------------------

    def LOAD_FAST(self, inst):
        if inst.argval in self.cells:  # 3.13 loads a cell itself so, for a closure (LOAD_CLOSURE)
            self.LOAD_CLOSURE(inst)
        else:
            self.push(self.read_local(inst.argval))

    def STORE_FAST(self, inst):
        self.store_local(inst.argval, self.pop())

    def store_local(self, name, value):
        if value is NULL:  # restoring an unbound variable after an inlined comprehension
            self.locals.pop(name, None)
        else:
            self.locals[name] = value

    def LOAD_GLOBAL(self, inst):  # every version: the low bit of the argument asks for a NULL
        self.push_callable(self.global_or_builtin(inst.argval), null=bool(inst.arg & 1))

    def global_or_builtin(self, name):
        stored = self.pending_global(name)  # assigned by the trace (STORE_GLOBAL)
        if stored is not None:
            return stored
        if name in self.globals:
            return self.wrap(self.globals[name], self.global_source(name))
        if hasattr(builtins, name):
            return self.wrap(getattr(builtins, name), sources.BuiltinSource(name))
        raise ObservedException(NameError(f"name {name!r} is not defined"))

    def LOAD_ATTR(self, inst):
        # 3.12 folds LOAD_METHOD into LOAD_ATTR's low bit; a bound method and a NULL are one of
        # the two shapes CALL accepts (the other: the function and `self`)
        obj = self.pop()
        self.push_callable(obj.get_attr(self, inst.argval), null=PY312 and bool(inst.arg & 1))

    def LOAD_METHOD(self, inst):  # 3.11
        self.push_callable(self.pop().get_attr(self, inst.argval), null=True)

    def STORE_ATTR(self, inst):
        obj = self.pop()
        obj.set_attr(self, inst.argval, self.pop())

    # --- operators ----------------------------------------------------------------------------

    def BINARY_OP(self, inst):
        # `x + 1` with a tensor is recorded (`operator.add(%0, 1)`: tx.record_call); `2 * 3` is
        # folded to 6; python/operators.py follows CPython's dispatch for the rest (a user
        # class's `__add__`, lists, sets)
        b = self.pop()
        a = self.pop()
        self.push(operators.binary_op(self, operators.BINARY_OPS[inst.argrepr], a, b))

    def unary(self, inst):
        self.push(operators.unary_op(self, operators.UNARY_OPS[inst.opname], self.pop()))

    UNARY_NEGATIVE = UNARY_POSITIVE = UNARY_INVERT = UNARY_NOT = unary

    def COMPARE_OP(self, inst):
        b = self.pop()
        a = self.pop()
        self.push(operators.compare_op(self, operators.COMPARE_OPS[inst.argval], a, b))

    def IS_OP(self, inst):
        b = self.pop()
        a = self.pop()
        same = self.side_effects.same_object(a, b)  # two objects from outside: guarded
        if same is None:
            same = operators.is_same(a, b)
        self.push(ConstantVariable(same != bool(inst.arg)))

    def CONTAINS_OP(self, inst):
        container = self.pop()
        item = self.pop()
        self.push(ConstantVariable(operators.contains(self, item, container) != bool(inst.arg)))

    # --- items --------------------------------------------------------------------------------

    def BINARY_SUBSCR(self, inst):
        key = self.pop()
        container = self.pop()
        self.push(container.getitem(self, key))

    def STORE_SUBSCR(self, inst):
        key, container, value = self.pop(), self.pop(), self.pop()
        container.setitem(self, key, value)

    # --- calls: where the NULL sits differs between versions ----------------------------------

    def push_callable(self, fn, null: bool):
        """Push a callable for CALL, with a NULL beside it if `null`: below it on 3.11 and 3.12,
        above it on 3.13, whose CALL reads [callable, self or NULL, *args]."""
        if null and not PY313:
            self.push(NULL)
        self.push(fn)
        if null and PY313:
            self.push(NULL)

    def pop_callable(self) -> tuple[Variable, list]:
        """Pop the two slots below a call's arguments: the function, and the arguments they add.
        [NULL, fn] (3.11, 3.12) and [fn, NULL] (3.13) add none; [method, self] adds self."""
        below = [value for value in self.popn(2) if value is not NULL]
        return below[0], below[1:]

    def KW_NAMES(self, inst):
        # dis does not resolve this constant on 3.11, so read it from co_consts
        self.kw_names = self.code.co_consts[inst.arg]

    def CALL(self, inst):
        # the callable and a NULL or `self` (see pop_callable), then the arguments; the last
        # len(kw_names) of them are keywords (KW_NAMES before the CALL, or 3.13's CALL_KW)
        args = self.popn(inst.arg)
        fn, before = self.pop_callable()
        args = [*before, *args]
        names, self.kw_names = self.kw_names, ()
        split = len(args) - len(names)
        self.push(self.call(fn, args[:split], dict(zip(names, args[split:], strict=True))))

    # --- jumps: a branch on a tensor's value stops the VM here (TensorVariable.truth) ---------

    def JUMP_FORWARD(self, inst):
        self.jump(inst.argval)

    def POP_JUMP_IF_FALSE(self, inst):
        if not self.truth(self.pop()):
            self.jump(inst.argval)

    def POP_JUMP_IF_TRUE(self, inst):
        if self.truth(self.pop()):
            self.jump(inst.argval)

    def POP_JUMP_IF_NONE(self, inst):
        if operators.is_same(self.pop(), ConstantVariable(None)):
            self.jump(inst.argval)

    def POP_JUMP_IF_NOT_NONE(self, inst):
        if not operators.is_same(self.pop(), ConstantVariable(None)):
            self.jump(inst.argval)

    # --- loops: iterators are lists of Variables, so loops unroll -----------------------------

    def GET_ITER(self, inst):
        self.push(self.pop().iterate(self))

    def FOR_ITER(self, inst):
        item = self.stack[-1].next_item(self)
        if item is not None:
            self.push(item)
            return
        self.pop()
        self.jump(inst.argval)
        # as ceval does, exhaustion skips the loop's END_FOR (3.12), or END_FOR and POP_TOP (3.13)
        if self.instructions[self.ip].opname == "END_FOR":
            self.ip += 2 if PY313 else 1

    def END_FOR(self, inst):  # reached only by a jump (3.12: [iterator, item]; 3.13: [item])
        self.popn(1 if PY313 else 2)

    def UNPACK_SEQUENCE(self, inst):
        items = self.pop().unpack(self)
        if len(items) != inst.arg:
            raise ObservedException(
                ValueError(f"cannot unpack {len(items)} values into {inst.arg}")
            )
        self.stack.extend(reversed(items))

    # --- building tuples and lists, returning -------------------------------------------------

    def BUILD_TUPLE(self, inst):
        self.push(TupleVariable(self.popn(inst.arg)))

    def BUILD_LIST(self, inst):
        self.push(ListVariable(self.popn(inst.arg)))

    def RETURN_VALUE(self, inst):
        self.return_value = self.pop()
        self.done = True

    def RETURN_CONST(self, inst):  # 3.12: LOAD_CONST + RETURN_VALUE
        self.LOAD_CONST(inst)
        self.RETURN_VALUE(inst)
