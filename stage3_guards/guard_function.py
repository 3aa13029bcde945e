"""All the guards of a cache entry, compiled into one generated Python function.

The cache calls this function on every call of the compiled frame, so it is
the hot path. Each guard becomes one `if not (...): return False` over its
checks, with the readable form of the guard as a comment; a value that several
checks read is read once, into a local variable, and one a check has pinned
(`type(L_m) is Block`) is written by its name from there on:

    def guards_f(L, G, F):
        # GRAD_MODE: enabled
        if not (torch.is_grad_enabled() is True):
            return False
        # local 'x' TENSOR_MATCH: float32, cpu, size=(8,), stride=(1,)
        L_x = L['x']
        if not (
            type(L_x) is torch.Tensor
            and L_x.dtype is torch.float32
            ...
        ):
            return False
        return True

Early TorchDynamo generated one Python lambda from the checks, reading
`L['self'].fc.weight` anew in each of them; torch 2.x builds a tree of C++
guard objects (a `GuardManager` per source, whose "accessor" reads the value
once for all the checks below it), faster but not something one can print and
read. Ours reads like the first and reads values like the second. The tensors'
checks come right after the last guard that reads a source, all of them first in
one C++ call (`check_tensors`: torch's TensorGuards, which early TorchDynamo called
too; performance/tensor_checks.py), their Python checks deciding only when it says
no. When the function says False, `failure_reason` re-checks the guards one by one
to say which assumption broke, and how.
"""

import ast
import builtins
import re
from collections import Counter
from dataclasses import dataclass

from stage2_symbolic_vm.sources import AttrSource, GlobalSource, LocalSource, Source

from .generated import compile_function, identifier, parse
from .guards import Guard, Names
from .performance import guard_sources
from .performance.tensor_checks import check_tensors_like

ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")  # in a repr: `<function f at 0x7f...>`


@dataclass(eq=False)
class GuardFunction:
    """`check(L, G, F) -> bool`, with the guards and the source it was generated from."""

    guards: list[Guard]
    source: str
    check: object  # the generated function

    def __str__(self):
        return self.source


def compile_guards(guards: list[Guard], name: str) -> GuardFunction:
    """Generate, compile and return the guard function of one cache entry (its source as a
    process wrote it before, when it is on disk: performance/guard_sources.py)."""
    function_name = f"guards_{identifier(name)}"
    namespace = {"B": builtins}  # sources of builtins read `B.range`
    for guard in guards:
        namespace.update(guard.names)
    tensors = [g for g in guards if g.example is not None and g.example() is not None]
    if tensors:
        namespace["check_tensors"] = _tensors_check(tensors)
    in_tensors = {id(g) for g in tensors}
    key = guard_sources.key_of(guards, list(map(comment, guards)), function_name, in_tensors)
    source = guard_sources.recall(key)
    if source is None:
        source = _source(guards, function_name, tensors, in_tensors, set(namespace))
        guard_sources.remember(key, source)
    return GuardFunction(guards, source, compile_function(source, function_name, namespace))


def _source(guards, function_name: str, tensors, in_tensors: set, names: set) -> str:
    teaching = [g for g in guards if id(g) not in in_tensors]  # their checks run on every path
    reads = SharedReads(guards, teaching, taken={"L", "G", "F", *names - {"check_tensors"}})
    lines = [f"def {function_name}(L, G, F):"]
    written = set()  # a check two guards share (no global hooks) runs once
    last_read = max((i for i, g in enumerate(guards) if g.source is not None), default=-1)
    for i, guard in enumerate(guards):
        if id(guard) not in in_tensors:
            lines += _guard_lines(guard, reads, written, indent="    ")
        if i == last_read and tensors:
            lines += _tensor_lines(tensors, reads, written)
    lines.append("    return True" + ("" if guards else "  # the trace relied on nothing"))
    return "\n".join(lines) + "\n"


def _guard_lines(guard: Guard, reads: "SharedReads", written: set, indent: str, hoisted=None):
    """One guard: its comment, the locals it binds first (or into `hoisted`, to be bound
    before it), `if not (...): return False`."""
    fresh = [code for code in guard.code if code not in written]  # not repeated to the letter
    checks = [check for code in fresh if (check := reads.rewrite(code)) not in written]
    checks = [check for check in checks if not _same_name(check)]  # `forward is forward`
    written.update(checks + fresh)
    lines = [f"# {comment(guard)}"]
    if hoisted is None:
        lines += reads.new_bindings()
    else:
        hoisted += reads.new_bindings()
    if not checks:
        lines.append("# (checked above)")
    elif len(checks) == 1:
        lines += [f"if not ({checks[0]}):", "    return False"]
    else:
        lines.append("if not (")
        lines += [f"    {'and ' if i else ''}{check}" for i, check in enumerate(checks)]
        lines += ["):", "    return False"]
    return [indent + line for line in lines]


def comment(guard: Guard) -> str:
    """The guard in words, on one line whatever reprs say, without the addresses reprs hold
    (`<code object f at 0x7f...>`): the same in every process (guard_sources.py)."""
    return ADDRESS.sub("", " ".join(str(guard).split()))


def _same_name(check: str) -> bool:
    """`forward is forward`: both sides pinned to one object by the checks above."""
    left, _, right = check.partition(" is ")
    return left == right and left.isidentifier()


def _tensor_lines(tensors: list[Guard], reads: "SharedReads", written: set) -> list[str]:
    """The TENSOR_MATCH guards, after every other guard has checked the paths to them: one
    C++ call checks all the tensors, and only when it says no do their checks in Python
    decide (it is the stricter of the two: a Parameter and a Tensor differ for it). Those
    checks run on one path only: SharedReads learns nothing from them."""
    values = [reads.read(guard.source.name()) for guard in tensors]
    hoisted = reads.new_bindings()  # bound before the `if`: later guards may read them too
    inside = []
    for guard in tensors:
        inside += _guard_lines(guard, reads, written, "        ", hoisted)
    lines = [f"    # {len(tensors)} TENSOR_MATCH: all at once in C++, then one by one if it fails"]
    lines += [f"    {binding}" for binding in hoisted]
    return [*lines, f"    if not check_tensors({', '.join(values)}):", *inside]


def _tensors_check(tensors: list[Guard]):
    return check_tensors_like([guard.example() for guard in tensors], [g.dims for g in tensors])


class SharedReads:
    """The sources the checks read more than once, each read once into a local variable.

    This is common-subexpression elimination over the checks. Each check is
    parsed back into a syntax tree, and a read of a source is a subtree equal to
    the tree of `source.name()`: trees are compared, not text, so a string
    constant that happens to spell `L['x']` is never taken for a read of it.
    A source read twice or more gets a local, named after its path as torch
    names FX placeholders (`L['m']._modules['fc']` -> `L_m_modules_fc`), bound
    just before the first guard that reads it -- where the checks would have
    read it first -- and itself read from its base's local when the base has
    one. Where a read is replaced, the rest of the check's text stays as it was.

    A check `read is name` that has passed pins the read: it *is* the object the
    namespace calls `name`, and the checks after it write the name instead of
    reading it again (`teaching` are the guards whose checks run on every path,
    in the order written). Chiefly `type(L['m']) is BertLayer`: then the class
    attributes the trace read through each layer, `type(L['m']).__dict__['forward']`,
    are `BertLayer.__dict__['forward']` for all twelve layers, checked once.
    """

    def __init__(self, guards: list[Guard], teaching: list[Guard], taken: set[str]):
        self.known: dict[tuple, str] = {}  # tree of a pinned read -> the name it is
        self.reads: dict[str, tuple] = {}  # check -> its reads, as trees where it runs
        self.sources: dict[tuple, Source] = {}  # tree -> a source the guards read
        self.pinned: dict[Source, str] = {}  # a source read as a name, for the locals' names
        self.written_as: dict[Source, tuple] = {}  # source -> the tree of its name
        for guard in teaching:
            self._visit(guard)
            for code in guard.code:
                self._learn(code)
        taught = {id(guard) for guard in teaching}
        for guard in guards:
            if id(guard) not in taught:
                self._visit(guard)
        uses = Counter(
            key
            for reads, _ in self.reads.values()
            for *_, key in reads
            if key in self.sources and key[0] != "name"
        )
        self.locals: dict[tuple, str] = {}  # tree -> the local variable that holds its value
        for key, count in uses.items():
            if count >= 2:
                name = _local_name(self.sources[key], self.pinned)
                self.locals[key] = _fresh(identifier(name), taken)
        self.bound: set[tuple] = set()
        self.bindings: list[str] = []  # made by the last rewrites, not yet written out

    def _visit(self, guard: Guard):
        """The trees of the guard's checks and of the sources it reads (and those they are
        read through), as they are where it runs: with the reads pinned by then."""
        for code in guard.code:
            if code not in self.reads:
                self.reads[code] = self._trees(code)
        source = guard.source
        while source is not None:
            if source not in self.written_as:
                (whole, *_), _ = _reads(source.name())
                self.written_as[source] = whole[2]
            key = _pinned(self.written_as[source], self.known)
            self.sources.setdefault(key, source)
            if key[0] == "name":
                self.pinned.setdefault(source, key[1])
            source = getattr(source, "base", None)

    def _trees(self, code: str) -> tuple[list, bytes]:
        """`_reads(code)` with the pinned reads as names, and no reads inside those."""
        trees, names = [], []  # names: the spans of pinned reads
        reads, text = _reads(code)
        for start, end, key in reads:  # outer reads first
            if not any(s <= start and end <= e for s, e in names):
                trees.append((start, end, key := _pinned(key, self.known)))
                if key[0] == "name":
                    names.append((start, end))
        return trees, text

    def _learn(self, code: str):
        """After `code` passed: if it is `read is name`, that read is the named object."""
        tree = parse(code).body
        if not (isinstance(tree, ast.Compare) and [type(op) for op in tree.ops] == [ast.Is]):
            return
        (other,) = tree.comparators
        if not isinstance(other, ast.Name) or other.id in Names.RESERVED:
            return
        reads, _ = self.reads[code]
        left = (tree.left.col_offset, tree.left.end_col_offset)
        for start, end, key in reads:
            if (start, end) == left and key[0] != "name":
                self.known[key] = other.id

    def rewrite(self, code: str) -> str:
        """The check with its reads of shared sources replaced by their locals."""
        reads, text = self.reads[code]
        return self._replaced(text, 0, len(text), reads)

    def new_bindings(self) -> list[str]:
        """`L_x = L['x']` for the locals the last rewrites used first, in the order to run."""
        bindings, self.bindings = self.bindings, []
        return bindings

    def _replaced(self, text: bytes, start: int, end: int, reads: list) -> str:
        """`text[start:end]` with the outermost shared reads inside it replaced by their locals
        (and bound first, if this is their first use)."""
        parts, at = [], start
        for read_start, read_end, key in reads:  # sorted: outer reads before the reads inside
            if not start <= read_start < read_end <= end or (read_start, read_end) == (start, end):
                continue  # not inside, or the read being defined itself
            if read_start < at:  # inside one replaced
                continue
            if key[0] == "name":  # pinned by a check above: the object's name
                parts += [text[at:read_start].decode(), key[1]]
                at = read_end
                continue
            if key not in self.locals:  # not shared
                continue
            parts += [text[at:read_start].decode(), self._local(text, read_start, read_end, reads)]
            at = read_end
        return "".join([*parts, text[at:end].decode()])

    def _local(self, text: bytes, start: int, end: int, reads: list) -> str:
        """The local of the shared read `text[start:end]`, bound first if this is its first
        use (its own read uses its base's local, bound before it)."""
        key = next(key for s, e, key in reads if (s, e) == (start, end))
        if key not in self.bound:
            self.bound.add(key)
            self.bindings.append(f"{self.locals[key]} = {self._replaced(text, start, end, reads)}")
        return self.locals[key]

    def read(self, code: str) -> str:
        """An expression for the value `code` reads: its local if it has one, else `code`
        with the shared reads inside it replaced."""
        reads, text = self.reads.setdefault(code, self._trees(code))
        whole = [key for s, e, key in reads if (s, e) == (0, len(text))]
        if whole and whole[0][0] == "name":
            return whole[0][1]
        if whole and whole[0] in self.locals:
            return self._local(text, 0, len(text), reads)
        return self.rewrite(code)


def _reads(code: str) -> tuple[list[tuple[int, int, tuple]], bytes]:
    """Every read in an expression, as (start, end, key), outer reads first, and the
    expression's UTF-8 text, which `start` and `end` index (as the parser counts).

    A read is an attribute, an item or a call made of names, constants and reads
    (`B.object.__getattribute__(L['m'], '__dict__')`); a comparison or a boolean
    operator is not, nor anything around one. Its key is what two reads of the
    same value have in common: the names, attributes, items and constants of
    their trees, not their place in the text.
    """
    reads = []

    def key_of(node):
        if isinstance(node, ast.Name):
            return ("name", node.id)
        if isinstance(node, ast.Constant):
            return ("constant", type(node.value).__name__, repr(node.value))
        if isinstance(node, ast.Attribute):
            parts = [key_of(node.value), node.attr]
        elif isinstance(node, ast.Subscript):
            parts = [key_of(node.value), key_of(node.slice)]
        elif isinstance(node, ast.Call) and not node.keywords:
            parts = [key_of(node.func), *(key_of(arg) for arg in node.args)]
        else:  # not a read: the reads are inside
            for child in ast.iter_child_nodes(node):
                key_of(child)
            return None
        if None in parts:
            return None
        key = (type(node).__name__, *parts)
        reads.append((node.col_offset, node.end_col_offset, key))
        return key

    key_of(parse(code).body)  # a check is one line: columns are offsets
    reads.sort(key=lambda read: (read[0], -read[1]))
    return reads, code.encode()


def _pinned(key, known: dict):
    """The tree of a read where the reads in `known` are pinned by a check to a named object:
    it is the key of that name, `("name", "BertLayer")`, and so a read of it is the same tree
    whatever path reached the object: `type(L['a']).__dict__` and `type(L['b']).__dict__`."""
    if not isinstance(key, tuple) or key[0] not in ("Attribute", "Subscript", "Call"):
        return key  # a name, a constant, an attribute's name
    key = (key[0], *(_pinned(part, known) for part in key[1:]))
    return ("name", known[key]) if key in known else key


def _local_name(source: Source, pinned: dict) -> str:
    """`L['m']._modules['fc']` -> `L_m__modules_fc` (made an identifier by the caller); a
    path through a pinned read starts at its name: `BertLayer_dict_forward`."""
    if isinstance(source, LocalSource):
        return f"L_{source.local}"
    if isinstance(source, GlobalSource):
        return f"G_{source.global_name}"
    base = getattr(source, "base", None)
    if base is None:  # a builtin, a closure cell, an imported module
        return source.name()
    step = source.member if isinstance(source, AttrSource) else getattr(source, "index", "part")
    return f"{pinned.get(base) or _local_name(base, pinned)}_{step}"


def _fresh(name: str, taken: set[str]) -> str:
    """`name`, or `name_2`, ...: not a name the checks already use."""
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name}_{n}"
    taken.add(candidate)
    return candidate


def failure_reason(guards: list[Guard], L: dict, G: dict, F) -> str | None:
    """The first guard that fails on these values, in words; None if they all pass."""
    return first_failure(guards, L, G, F)[1]


def first_failure(guards: list[Guard], L: dict, G: dict, F) -> tuple[Guard | None, str | None]:
    """The first guard that fails on these values, and why; (None, None) if they all pass."""
    for guard in guards:
        reason = guard.failure(L, G, F)
        if reason is not None:
            return guard, reason
    return None, None
