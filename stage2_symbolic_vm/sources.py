"""Sources: where each value the VM reads came from.

A source is a path from the frame to a value: local `x`, global `torch`,
attribute `weight` of local `self`, item 2 of local `xs`. The VM attaches one
to every value it reads from outside the function; stage 3 turns the
assumptions made about those values into guards, and stage 4 uses the same
paths to load the inputs of a compiled graph. This is the one idea that
connects the VM, the guards and the rewritten bytecode
(torch/_dynamo/source.py has ~40 kinds; these few cover what we trace).

Every source prints as a Python expression over four names, the same ones a
stage-3 guard function receives: `L` (the frame's arguments by name), `G`
(the function's globals), `F` (the function object, for its closure) and `B`
(the `builtins` module, for a builtin such as `B.range`).
"""

import builtins
from dataclasses import dataclass


class Source:
    """A path to a value, printable as a Python expression over L, G, F and B."""

    def name(self) -> str:
        raise NotImplementedError

    def describe(self) -> str:
        """Words for messages: "local 'x'", "attribute 'weight' of local 'self'"."""
        raise NotImplementedError

    def get(self, L: dict, G: dict, F=None):
        """Read the value this source names from a frame's locals, globals and function."""
        return eval(self.name(), {"L": L, "G": G, "F": F, "B": builtins})

    def __str__(self) -> str:
        return self.name()


@dataclass(frozen=True)
class LocalSource(Source):
    local: str

    def name(self):
        return f"L[{self.local!r}]"

    def describe(self):
        return f"local {self.local!r}"


@dataclass(frozen=True)
class GlobalSource(Source):
    global_name: str

    def name(self):
        return f"G[{self.global_name!r}]"

    def describe(self):
        return f"global {self.global_name!r}"


@dataclass(frozen=True)
class BuiltinSource(Source):
    builtin: str

    def name(self):
        return f"B.{self.builtin}"

    def describe(self):
        return f"builtin {self.builtin!r}"


@dataclass(frozen=True)
class ImportSource(Source):
    """A module the code imports (`import math` inside a function), as `sys.modules` has it."""

    module: str

    def name(self):
        return f"B.__import__('sys').modules[{self.module!r}]"

    def describe(self):
        return f"module {self.module!r}"


@dataclass(frozen=True)
class FunctionSource(Source):
    """The traced function itself; the object of a traced bound method is `F.__self__`."""

    def name(self):
        return "F"

    def describe(self):
        return "the traced function"


@dataclass(frozen=True)
class ClosureSource(Source):
    """A free variable of the traced function: the contents of one of its closure cells."""

    free_name: str
    index: int

    def name(self):
        return f"F.__closure__[{self.index}].cell_contents"

    def describe(self):
        return f"closure variable {self.free_name!r}"


# Where an object keeps its attributes and its class: read as object's C code reads them,
# past a class's own Python `__getattribute__` (Hugging Face's configs have one). Through it,
# a guard would run user code, and a compiled frame of that `__getattribute__` would call
# itself to read them. `x.__class__` is `type(x)`, as the VM models it: a guard that reads
# it so costs a builtin's call, not `object.__getattribute__`'s, and repeats the TYPE_MATCH
# of `x` to the letter, which the guard function then checks once.
STORAGE_READS = {"__dict__": "B.object.__getattribute__({}, '__dict__')", "__class__": "type({})"}


@dataclass(frozen=True)
class AttrSource(Source):
    base: Source
    member: str

    def name(self):
        if self.member in STORAGE_READS:
            return STORAGE_READS[self.member].format(self.base.name())
        if not self.member.isidentifier():  # submodule "0" of a ModuleList
            return f"getattr({self.base.name()}, {self.member!r})"
        return f"{self.base.name()}.{self.member}"

    def describe(self):
        return f"attribute {self.member!r} of {self.base.describe()}"


def attr_of(base: Source | None, member: str) -> "AttrSource | None":
    """`base.member`, or None for a value with no source (made in the trace)."""
    return None if base is None else AttrSource(base, member)


@dataclass(frozen=True)
class ItemSource(Source):
    """`base[index]`: an item of a list, tuple or dict (index is an int or a constant key)."""

    base: Source
    index: object

    def name(self):
        return f"{self.base.name()}[{self.index!r}]"

    def describe(self):
        table = self.base.member if isinstance(self.base, AttrSource) else None
        if table in MODULE_TABLES:  # `L['m']._modules['fc']`: "submodule 'fc' of local 'm'"
            return f"{MODULE_TABLES[table]} {self.index!r} of {self.base.base.describe()}"
        return f"item {self.index!r} of {self.base.describe()}"


# The dicts where nn.Module keeps what its __getattr__ finds, and what each holds.
MODULE_TABLES = {"_parameters": "parameter", "_buffers": "buffer", "_modules": "submodule"}


def item_of(base: Source | None, index) -> "ItemSource | None":
    """`base[index]`, or None for a value with no source."""
    return None if base is None else ItemSource(base, index)


@dataclass(frozen=True)
class DictItemSource(Source):
    """`dict.__getitem__(base, key)`: an item of a dict subclass, read past its own `__getitem__`
    (a Hugging Face ModelOutput overrides it), as the trace read it."""

    base: Source
    index: object

    def name(self):
        return f"B.dict.__getitem__({self.base.name()}, {self.index!r})"

    def describe(self):
        return f"item {self.index!r} of {self.base.describe()}"


@dataclass(frozen=True)
class ReducedSource(Source):
    """A part of what an object's `__reduce__()` returns: `path` (1, 0) is the list a list
    iterator walks, (2,) its position. CPython pickles an iterator so; nothing else reaches
    the list from Python."""

    base: Source
    path: tuple

    def name(self):
        return f"{self.base.name()}.__reduce__(){''.join(f'[{i}]' for i in self.path)}"

    def describe(self):
        part = "the list" if self.path == (1, 0) else "the position"
        return f"{part} of the iterator {self.base.describe()}"


def reduced_part(obj, path: tuple):
    """The value a ReducedSource names (what stage 4's new code calls)."""
    value = obj.__reduce__()
    for index in path:
        value = value[index]
    return value


@dataclass(frozen=True)
class SizeSource(Source):
    """`base.size()[dim]`: one size of a tensor, where a symbolic size is read again at each
    call (torch: `TensorPropertySource(base, TensorProperty.SIZE, dim)`)."""

    base: Source
    dim: int

    def name(self):
        return f"{self.base.name()}.size()[{self.dim}]"

    def describe(self):
        return f"dim {self.dim} of {self.base.describe()}"


@dataclass(frozen=True)
class Assumption:
    """One fact the trace relied on; stage 3 turns each into a guard.

    `kind` names what was relied on: "type" (the value's type), "id" (this very
    object: a module, a class, a global), "function" (a function with this
    code), "constant" (a Python scalar, string or tuple of them, by value),
    "tensor" (dtype, device, shape, strides, requires_grad), "length" (of a
    list, tuple, dict or module container), "dict_keys", "absent" (an
    `ItemSource` key is not in its dict: an instance attribute that would hide
    the class's, or that the code found missing), "module_hooks" (a module
    still has no hooks), and the global state "grad_mode", "inference_mode",
    "default_dtype", "default_device" and "autocast", and "caller_exception" (the caller
    handles no exception, which `sys.exc_info()` outside the code's own handlers relied
    on) (`source` is None for those).
    "alias" relates two sources (`other`): both paths reach one object, which the trace
    gave one Variable. "distinct": the object is none of the others so marked (the trace
    kept them apart: it changed one of two objects of a type, or the code asked `a is b`).
    """

    kind: str
    source: Source | None = None
    other: Source | None = None

    KINDS = ("type", "id", "function", "constant", "tensor", "length", "dict_keys", "absent")
    KINDS += ("alias", "distinct", "module_hooks", "grad_mode", "inference_mode")
    KINDS += ("default_dtype", "default_device", "autocast", "caller_exception")

    def __post_init__(self):
        if self.kind not in self.KINDS:
            raise ValueError(f"unknown assumption kind {self.kind!r}")
