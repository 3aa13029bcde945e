"""Iterators: stepped one item at a time with `next_item(tx)`, so loops unroll.

An iterator Variable is lazy, like the real one: `zip(itertools.count(), xs)`
never builds the infinite count, and a generator (a `def` with `yield`, or a
generator expression) runs its own frame in the VM only as far as the next
`yield` (torch/_dynamo/variables/iter.py and `InliningGeneratorInstructionTranslator`).
`next_item` returns None when the iterator is exhausted.

An iterator over a container reads the container as it steps, as CPython's
does (Objects/listobject.c's listiterobject, dictobject.c's dictiterobject):
`for v in xs: xs.append(...)` reaches the new items, and a dict or set changed
while iterated raises CPython's own RuntimeError, because the iterator of a
dict or set is a real iterator over the real dict or set of its keys
(dicts.py, sets.py). An exhausted iterator stays exhausted.

An iterator whose items still to come are known can be rebuilt in Python at
a graph break (`remaining`); an iterator over a list is rebuilt over the list
itself, at its position.
"""

import collections
import types

from ..errors import CannotReconstruct, ObservedException, Unsupported
from ..sources import ReducedSource
from ..variables import BoundMethodVariable, ConstantVariable, LazyVariable, Variable
from .dicts import DictVariable, DictViewVariable
from .exceptions import ExceptionVariable, as_exception
from .objects import UserObjectVariable, class_lookup
from .operators import equal
from .outside_objects import ObjectVariable
from .sequences import SequenceVariable, TupleVariable

END = object()  # what `next(iterator, END)` gives at the end


class IteratorVariable(Variable):
    """Base of every iterator: it is its own iterator, and `unpack` drains it."""

    def iterate(self, tx):
        return self

    def unpack(self, tx):
        items = []
        while (item := self.next_item(tx)) is not None:
            items.append(item)
        return items

    def truth(self, tx):
        return True

    # The iterator protocol called by name (`it.__next__()`, `it.__length_hint__()`), as
    # CPython's iterators answer it; a generator adds send and throw.
    PROTOCOL = ("__next__", "__iter__", "__length_hint__")

    def get_attr(self, tx, name):
        # a generator, a map, a zip have no length hint: asked of the real type
        if name in self.PROTOCOL and (
            name != "__length_hint__" or hasattr(self.python_type(), name)
        ):
            return BoundMethodVariable(self, name)
        return super().get_attr(tx, name)

    def call_method(self, tx, name, args, kwargs):
        if name == "__len__":  # `len(reversed(xs))`: an iterator has no length
            kind = self.python_type().__name__
            raise ObservedException(TypeError(f"object of type '{kind}' has no len()"))
        if name not in IteratorVariable.PROTOCOL or args or kwargs:
            return super().call_method(tx, name, args, kwargs)
        if name == "__iter__":
            return self
        if name == "__length_hint__":  # what is left, where that is known without stepping
            remaining = self.remaining()
            if remaining is None:
                raise Unsupported("unsupported_value", f"the length hint of {self}")
            return ConstantVariable(len(remaining))
        item = self.next_item(tx)
        if item is None:
            raise ObservedException(self.stop_iteration())
        return item

    def stop_iteration(self) -> StopIteration:
        """What `next(iterator)` raises at the end."""
        return StopIteration()

    def peek(self, n: int) -> list | None:
        """The next `n` items (fewer if it ends), without taking them; None if not known now."""
        remaining = self.remaining()
        return None if remaining is None else remaining[:n]

    def remaining(self) -> list | None:
        """All the items still to come, if they are known now and finite (else None): at a
        graph break, stage 4 passes them to the resume function as a list."""
        return None

    def exact_snapshot(self) -> bool:
        """Are `remaining()`'s items the ones eager will give, whatever the code does next?
        Not for an iterator over a list, dict or set: the rest of the function may change it
        (eager's iterator would then reach an appended item, or raise)."""
        return True

    def reconstruct(self, cg):
        remaining = self.remaining()
        if remaining is None:
            raise CannotReconstruct(f"{self}: an iterator part-way through its items")
        if not self.exact_snapshot():
            raise CannotReconstruct(f"{self}: an iterator over a list, dict or set that may change")
        cg.call_callable(iter, lambda: cg.build_sequence(remaining, "BUILD_LIST"))
        cg.keep(self)


class ListIteratorVariable(IteratorVariable):
    """An iterator over items known when it is made (a range, a string, a constant tuple,
    the rows of `itertools.product`)."""

    def __init__(self, items):
        self.items, self.index = list(items), 0

    def next_item(self, tx):
        if self.index == len(self.items):
            return None
        self.index += 1
        return self.items[self.index - 1]

    def remaining(self) -> list:
        return self.items[self.index :]


class SequenceIteratorVariable(IteratorVariable):
    """`iter(xs)` and `reversed(xs)` of a list or tuple. It reads the list at each step, as
    CPython's list iterator does (an item appended during the loop is reached), and once past
    the end it lets go of the list, so it stays exhausted even if the list grows again."""

    def __init__(self, sequence: SequenceVariable, backwards=False, index=None, source=None):
        self.sequence, self.backwards, self.source = sequence, backwards, source
        start = len(sequence.items) - 1 if backwards else 0
        self.index = start if index is None else index

    def python_type(self):
        return type(reversed([])) if self.backwards else type(iter([]))

    def next_item(self, tx):
        if self.sequence is None:
            return None
        if self.source is not None:  # a real iterator from outside: moved as this one moves
            tx.side_effects.mutate(self)
        items = self.sequence.items
        if not 0 <= self.index < len(items):
            self.sequence = None
            return None
        item = items[self.index]
        self.index += -1 if self.backwards else 1
        return item

    def exact_snapshot(self):
        return self.sequence is None or self.sequence.python_type() is not list

    def write_back(self, cg):
        """The real iterator from outside, moved to where the trace left this one (or run to
        its end, so that it lets go of its list as eager's did)."""
        index = None if self.sequence is None else self.index
        return move_iterator, [lambda: cg.load_const(index)]

    def remaining(self):
        if self.sequence is None or not 0 <= self.index < len(self.sequence.items):
            return []
        return self.sequence.items[self.index :: -1 if self.backwards else 1]

    def reconstruct(self, cg):
        if self.sequence is None:
            cg.call_callable(iter, lambda: cg.build_sequence([], "BUILD_TUPLE"))
        else:  # an iterator of the very list (rebuilt or read again), at its position
            cg.call_callable(
                iterator_at,
                lambda: cg.load_const(reversed if self.backwards else iter),
                lambda: cg.reconstruct(self.sequence),
                lambda: cg.load_const(self.index),
            )
        cg.keep(self)


def move_iterator(iterator, index):
    """Put a real list iterator at `index`, or exhaust it (index None)."""
    if index is None:
        for _ in iterator:
            pass
    else:
        iterator.__setstate__(index)


def iterator_at(make_iterator, sequence, index: int):
    """`iter(xs)` or `reversed(xs)`, at `index` (what the new bytecode calls to rebuild an
    iterator part-way through a list: the state CPython pickles a list iterator with)."""
    iterator = make_iterator(sequence)
    iterator.__setstate__(index)
    return iterator


class DequeIteratorVariable(SequenceIteratorVariable):
    """`iter(d)` of a deque: a list's iterator, except that a deque changed since it began
    (an item added or removed, not one replaced) raises CPython's RuntimeError."""

    def __init__(self, sequence, backwards=False, index=None, source=None):
        super().__init__(sequence, backwards, index, source)
        self.state = sequence.state

    def python_type(self):
        return type(iter(collections.deque()))

    def next_item(self, tx):
        if self.sequence is not None and self.sequence.state != self.state:
            raise ObservedException(RuntimeError("deque mutated during iteration"))
        return super().next_item(tx)


class DictIteratorVariable(IteratorVariable):
    """`iter(d)`, `iter(d.values())`, `reversed(d.items())` ...: a real iterator over the real
    dict of the keys (dicts.DictVariable.items), so a dict or OrderedDict changed while
    iterated raises CPython's own RuntimeError; the values are the dict's Variables."""

    def __init__(self, dict_var: DictVariable, kind: str, backwards=False):
        self.dict_var, self.kind = dict_var, kind
        view = getattr(dict_var.items, kind)()
        self.iterator = reversed(view) if backwards else iter(view)

    def python_type(self):
        return type(self.iterator)

    def exact_snapshot(self):
        return False

    def next_item(self, tx):
        item = tx.run_python(next, self.iterator, END)
        return None if item is END else self.variable(tx, item)

    def variable(self, tx, item):
        d = self.dict_var
        if self.kind == "keys":
            return d.key_var(item)
        if self.kind == "values":
            return tx.read(item)
        return TupleVariable([d.key_var(item[0]), tx.read(item[1])])

    def remaining(self):
        """CPython pickles a dict iterator as the list of what it has left, read from a copy
        of it (the iterator does not move); a dict changed meanwhile raises instead."""
        try:
            left = self.iterator.__reduce__()[1][0]
        except RuntimeError:
            return None
        d = self.dict_var
        if self.kind == "keys":
            return [d.key_var(k) for k in left]
        if self.kind == "values":
            return list(left)  # a value not read yet is rebuilt from its source
        return [TupleVariable([d.key_var(k), v]) for k, v in left]


class SetIteratorVariable(IteratorVariable):
    """`iter(s)`: a real iterator over the real set of the keys, in CPython's order; a set
    changed in size while iterated raises CPython's own RuntimeError."""

    def __init__(self, set_var):
        self.set_var, self.iterator = set_var, iter(set_var.items)

    def python_type(self):
        return type(self.iterator)

    def exact_snapshot(self):
        return False

    def next_item(self, tx):
        key = tx.run_python(next, self.iterator, END)
        return None if key is END else self.set_var.key_var(key)

    def remaining(self):
        try:  # as DictIteratorVariable.remaining
            return [self.set_var.key_var(k) for k in self.iterator.__reduce__()[1][0]]
        except RuntimeError:
            return None


class CallableIteratorVariable(IteratorVariable):
    """`iter(fn, sentinel)`: `fn()` until it returns something equal to `sentinel` (or raises
    StopIteration); then it stays exhausted (CPython's calliterobject)."""

    def __init__(self, fn, sentinel):
        self.fn, self.sentinel = fn, sentinel

    def next_item(self, tx):
        if self.fn is None:
            return None
        try:
            value = self.fn.call(tx, [], {})
        except ObservedException as error:
            if not isinstance(error.exception, StopIteration):
                raise
            value = None
        if value is None or equal(tx, self.sentinel, value):  # CPython compares sentinel == value
            self.fn = None
            return None
        return value


class GetItemIteratorVariable(IteratorVariable):
    """The old sequence protocol (CPython's seqiterobject, and `reversed` of a class with
    `__len__`): `obj[0]`, `obj[1]` ... (or from `len(obj) - 1` down) until IndexError or
    StopIteration; then it stays exhausted."""

    def __init__(self, obj, index=0, step=1):
        self.obj, self.index, self.step = obj, index, step

    def next_item(self, tx):
        if self.obj is None or self.index < 0:
            return None
        try:
            item = self.obj.getitem(tx, ConstantVariable(self.index))
        except ObservedException as error:
            if not isinstance(error.exception, (IndexError, StopIteration)):
                raise
            self.obj = None
            return None
        self.index += self.step
        return item


class UserIteratorVariable(IteratorVariable):
    """An object of a Python class that is its own iterator (`__iter__` returns `self`, and
    `__next__` gives the items): each step runs its `__next__`, until StopIteration."""

    def __init__(self, obj):
        self.obj, self.done = obj, False

    def next_item(self, tx):
        if self.done:
            return None
        try:
            return self.obj.special(tx, "__next__", [])
        except ObservedException as error:
            if not isinstance(error.exception, StopIteration):
                raise
            self.done = True
            return None


def call_reversed(tx, value, /):
    """`reversed(value)`: a sequence backwards, a dict's keys backwards, a class's
    `__reversed__` or its `__len__` and `__getitem__`; a set or an iterator is not reversible."""
    if isinstance(value, SequenceVariable):
        return SequenceIteratorVariable(value, backwards=True)
    if isinstance(value, (DictVariable, DictViewVariable)):
        return value.call_method(tx, "__reversed__", [], {})
    if isinstance(value, ConstantVariable):  # a range, a string, a constant tuple
        backwards = tx.run_python(reversed, value.as_python_constant())
        return ListIteratorVariable(ConstantVariable(v) for v in backwards)
    if isinstance(value, UserObjectVariable):
        if class_lookup(value.cls, "__reversed__") is not None:
            return value.special(tx, "__reversed__", [])
        if all(class_lookup(value.cls, name) for name in ("__len__", "__getitem__")):
            length = value.special(tx, "__len__", []).as_python_constant()
            return GetItemIteratorVariable(value, length - 1, -1)
    name = "iterator" if isinstance(value, IteratorVariable) else value.python_type().__name__
    raise ObservedException(TypeError(f"'{name}' object is not reversible"))


class MapIteratorVariable(IteratorVariable):
    """`map(fn, *iterables)`: `fn` is called on each step, only when an item is asked for; a
    step stops at the first iterable that is exhausted, taking nothing from the ones after."""

    def __init__(self, fn, iterators):
        self.fn, self.iterators = fn, iterators

    def python_type(self):
        return map

    def next_item(self, tx):
        items = []
        for iterator in self.iterators:
            item = iterator.next_item(tx)
            if item is None:
                return None
            items.append(item)
        return self.fn.call(tx, items, {})


class ZipIteratorVariable(IteratorVariable):
    """`zip(*iterables, strict=...)`."""

    def __init__(self, iterators, strict=False):
        self.iterators, self.strict = iterators, strict

    def next_item(self, tx):
        items = []
        for it in self.iterators:
            item = it.next_item(tx)
            if item is None:
                if self.strict:
                    self.check_lengths(tx, len(items))
                return None
            items.append(item)
        return TupleVariable(items)

    def check_lengths(self, tx, ended: int):
        """zip(strict=True) when iterable `ended` is exhausted: the others must be too (the
        first that is not is asked for one item, as CPython's zip_next asks)."""
        if ended > 0:
            others = "argument 1" if ended == 1 else f"arguments 1-{ended}"
            message = f"zip() argument {ended + 1} is shorter than {others}"
            raise ObservedException(ValueError(message))
        for number, it in enumerate(self.iterators[1:], 2):
            if it.next_item(tx) is not None:
                others = "argument 1" if number == 2 else f"arguments 1-{number - 1}"
                raise ObservedException(
                    ValueError(f"zip() argument {number} is longer than {others}")
                )

    def exact_snapshot(self):
        return all(it.exact_snapshot() for it in self.iterators)

    def remaining(self):
        """`zip(xs, ys)` or `enumerate(xs)` over known items: the tuples still to come."""
        lengths = [len(r) for it in self.iterators if (r := it.remaining()) is not None]
        if not lengths or (self.strict and len(set(lengths)) > 1):
            return None
        columns = [it.peek(min(lengths)) for it in self.iterators]
        if any(column is None for column in columns):
            return None
        return [TupleVariable(list(row)) for row in zip(*columns, strict=True)]


class FilterIteratorVariable(IteratorVariable):
    """`filter(fn, iterable)`; `fn` None keeps the true items."""

    def __init__(self, fn, iterator):
        self.fn, self.iterator = fn, iterator

    def python_type(self):
        return filter

    def next_item(self, tx):
        while (item := self.iterator.next_item(tx)) is not None:
            kept = item if self.fn is None else self.fn.call(tx, [item], {})
            if kept.truth(tx):
                return item
        return None


class GeneratorVariable(IteratorVariable):
    """A generator: the frame of a generator function, run in the VM up to each `yield`.

    `frame` is a child InstructionTranslator set up with the call's arguments; it
    pauses at YIELD_VALUE (its `yielded` holds the value) and ends at RETURN_VALUE.
    """

    def __init__(self, frame):
        self.frame, self.finished, self.started = frame, False, False
        self.returned = None  # what the generator returned (`yield from` evaluates to it)

    def python_type(self):
        return types.GeneratorType

    def next_item(self, tx, sent=None):
        """Run the generator to its next `yield`; `sent` is what the paused `yield` evaluates
        to (None for next(), the value for `gen.send(value)`)."""
        if self.finished:
            return None
        if self.started:
            self.frame.push(sent or ConstantVariable(None))
        elif sent is not None and not (sent.is_python_constant() and sent.value is None):
            raise ObservedException(
                TypeError("can't send non-None value to a just-started generator")
            )
        self.started = True
        # CPython links a resumed generator to its resumer: `sys.exception()` inside it sees
        # the exception its resumer handles (the thread's stack of them), not its creator's
        self.frame.parent = tx
        return self.resume()

    def resume(self):
        """Run the paused frame on to its next `yield` (its value), or to its end (None)."""
        self.frame.yielded = None
        self.frame.run()
        if self.frame.yielded is None:  # it returned: StopIteration
            self.finished, self.returned = True, self.frame.return_value
            return None
        return self.frame.yielded

    def get_attr(self, tx, name):
        if name in ("send", "__next__", "throw"):
            return BoundMethodVariable(self, name)
        return super().get_attr(tx, name)

    def call_method(self, tx, name, args, kwargs):
        if name == "throw":
            item = self.throw(tx, *args)
        else:
            item = self.next_item(tx, args[0] if name == "send" else None)
        if item is None:
            raise ObservedException(self.stop_iteration())
        return item

    def throw(self, tx, kind, value=None, _traceback=None):
        """`gen.throw(exc)` (or 3.11's `throw(type, value, traceback)`, as contextlib's
        `__exit__` calls it when the `with` body raised): the exception is raised where the
        generator paused, as CPython raises it at its `yield`; a handler there runs the
        generator on to its next `yield`, and without one the exception leaves `throw`."""
        exception = value if isinstance(value, ExceptionVariable) else kind
        error = ObservedException(as_exception(exception), "the generator (`throw`)")
        if not self.started or self.finished:  # raised before the first line, or after it ended
            self.finished = True
            raise error
        paused_at = self.frame.instructions[self.frame.ip - 1]  # the YIELD_VALUE
        if not self.frame.handle_exception(paused_at, error):
            self.finished = True
            raise error
        return self.resume()

    def stop_iteration(self):
        """`return value` in a generator is `StopIteration(value)` (no argument for None)."""
        value = self.returned.as_python_constant() if self.returned is not None else None
        return StopIteration() if value is None else StopIteration(value)

    def __repr__(self):
        return f"GeneratorVariable({self.frame.code.co_qualname})"


# --- a list iterator from outside (builder.py's WRAPPERS) --------------------------------------

LIST_ITERATORS = (type(iter([])), type(reversed([])))


def wrap_list_iterator(tx, value, source):
    """`iter(xs)` or `reversed(xs)` from outside (a loop's iterator that a resume function
    receives): an iterator over the very list, at its position, both read through what
    CPython pickles it as. It reads the list as it steps, so the items the rest of the loop
    appends are reached, and the real iterator is moved as the trace moved it. One with no
    source can only be passed on."""
    if source is None:
        return ObjectVariable(value)
    tx.trace.assume("type", source)
    _, (sequence,), *position = value.__reduce__()
    if not position:  # exhausted: it holds no list any more
        tx.trace.assume("length", ReducedSource(source, (1, 0)))
        return ListIteratorVariable([])
    items = tx.read(LazyVariable(sequence, ReducedSource(source, (1, 0))))
    tx.trace.assume("constant", ReducedSource(source, (2,)))
    backwards = type(value) is LIST_ITERATORS[1]
    return SequenceIteratorVariable(items, backwards, position[0], source)
