"""The itertools module, one function one entry (`ITERTOOLS`): the VM's version of each.

Those that may be endless (`count`, `cycle`, `repeat` with no count) or that the loop may
stop early (`chain`, `islice`, `takewhile`) stay lazy, as iterators stepped by
`next_item` (iterators.py); the finite ones (`product`, `pairwise`, `groupby` ...) compute
their items at once from their iterables' items.
"""

import itertools
import operator

from ..variables import ConstantVariable
from .iterators import IteratorVariable, ListIteratorVariable
from .operators import binary_op
from .sequences import TupleVariable


class CountIteratorVariable(IteratorVariable):
    """`itertools.count(start, step)`: endless, so it must stay lazy."""

    def __init__(self, start, step):
        self.value, self.step = start, step

    def next_item(self, tx):
        value, self.value = self.value, self.value + self.step
        return ConstantVariable(value)

    def peek(self, n):
        return [ConstantVariable(self.value + i * self.step) for i in range(n)]


class ChainIteratorVariable(IteratorVariable):
    """`itertools.chain(*iterables)`: each iterable is started only when reached."""

    def __init__(self, iterables):
        self.pending, self.current = list(iterables), None

    def next_item(self, tx):
        while True:
            if self.current is None:
                if not self.pending:
                    return None
                self.current = self.pending.pop(0).iterate(tx)
            item = self.current.next_item(tx)
            if item is not None:
                return item
            self.current = None


class IsliceIteratorVariable(IteratorVariable):
    """`itertools.islice(iterable, [start,] stop [, step])`: it takes no more than it needs."""

    def __init__(self, iterator, start, stop, step):
        self.iterator, self.position = iterator, 0
        wanted = range(start, stop, step) if stop is not None else itertools.count(start, step)
        self.wanted = iter(wanted)

    def next_item(self, tx):
        want = next(self.wanted, None)
        if want is None:
            return None
        while self.position <= want:
            item = self.iterator.next_item(tx)
            if item is None:
                return None
            self.position += 1
        return item


def product(tx, *iterables, repeat=None):
    """`itertools.product`: finite, so its items are computed at once from the iterables'."""
    pools = [it.unpack(tx) for it in iterables] * (repeat.as_python_constant() if repeat else 1)
    return ListIteratorVariable(TupleVariable(list(row)) for row in itertools.product(*pools))


def combinatoric(kind):
    """`itertools.permutations/combinations/combinations_with_replacement(iterable, r)`."""

    def make(tx, iterable, r=None):
        args = [] if r is None else [r.as_python_constant()]
        rows = getattr(itertools, kind)(iterable.unpack(tx), *args)
        return ListIteratorVariable(TupleVariable(list(row)) for row in rows)

    return make


def zip_longest(tx, *iterables, fillvalue=None):
    fill = fillvalue if fillvalue is not None else ConstantVariable(None)
    columns = [it.unpack(tx) for it in iterables]
    rows = itertools.zip_longest(*columns, fillvalue=fill)
    return ListIteratorVariable(TupleVariable(list(row)) for row in rows)


def islice(tx, iterable, *bounds):
    values = [b.as_python_constant() for b in bounds]
    start, stop, step = (0, values[0], 1) if len(values) == 1 else (*values, 1)[:3]
    return IsliceIteratorVariable(iterable.iterate(tx), start or 0, stop, step or 1)


def accumulate(tx, iterable, func=None, *, initial=None):
    items = iterable.unpack(tx)
    total = initial
    results = [] if initial is None else [initial]
    for item in items:
        if total is None:
            total = item
        elif func is None:
            total = binary_op(tx, operator.add, total, item)
        else:
            total = func.call(tx, [total, item], {})
        results.append(total)
    return ListIteratorVariable(results)


def pairwise(tx, iterable):
    items = iterable.unpack(tx)
    return ListIteratorVariable(TupleVariable([a, b]) for a, b in itertools.pairwise(items))


class RepeatIteratorVariable(IteratorVariable):
    """`itertools.repeat(value)` with no count: endless, so it stays lazy (inside a `zip`)."""

    def __init__(self, value):
        self.value = value

    def next_item(self, tx):
        return self.value

    def peek(self, n):
        return [self.value] * n


class WhileIteratorVariable(IteratorVariable):
    """`itertools.takewhile` (`taking`) and `dropwhile`: the predicate is called item by item,
    only as far as the loop asks."""

    def __init__(self, predicate, iterator, taking):
        self.predicate, self.iterator, self.taking = predicate, iterator, taking
        self.switched = False  # takewhile: past the first false item; dropwhile: yielding

    def next_item(self, tx):
        if self.switched and self.taking:
            return None
        while (item := self.iterator.next_item(tx)) is not None:
            if self.switched:
                return item
            if not self.predicate.call(tx, [item], {}).truth(tx):  # both switch at a false one
                self.switched = True
                return None if self.taking else item
            if self.taking:
                return item
        return None


class CycleIteratorVariable(IteratorVariable):
    """`itertools.cycle(iterable)`: its items again and again (endless, so lazy)."""

    def __init__(self, items):
        self.items, self.index = list(items), 0

    def next_item(self, tx):
        if not self.items:
            return None
        self.index += 1
        return self.items[(self.index - 1) % len(self.items)]


def repeat(tx, value, times=None):
    if times is None:
        return RepeatIteratorVariable(value)
    return ListIteratorVariable([value] * times.as_python_constant())


def groupby(tx, iterable, key=None):
    """`itertools.groupby`: runs of items with equal keys (the keys are compared now)."""
    rows, last = [], object()
    for item in iterable.unpack(tx):
        k = item if key is None else key.call(tx, [item], {})
        value = k.as_python_constant()
        if not rows or value != last:
            rows.append((k, []))
            last = value
        rows[-1][1].append(item)
    return ListIteratorVariable(TupleVariable([k, ListIteratorVariable(g)]) for k, g in rows)


def starmap(tx, fn, iterable):
    return ListIteratorVariable(fn.call(tx, item.unpack(tx), {}) for item in iterable.unpack(tx))


# itertools, one entry per function (the VM's version of each).
ITERTOOLS = {
    itertools.chain: lambda tx, *its: ChainIteratorVariable(its),
    itertools.count: lambda tx, start=None, step=None: CountIteratorVariable(
        start.as_python_constant() if start is not None else 0,
        step.as_python_constant() if step is not None else 1,
    ),
    itertools.islice: islice,
    itertools.product: product,
    itertools.permutations: combinatoric("permutations"),
    itertools.combinations: combinatoric("combinations"),
    itertools.combinations_with_replacement: combinatoric("combinations_with_replacement"),
    itertools.zip_longest: zip_longest,
    itertools.accumulate: accumulate,
    itertools.pairwise: pairwise,
    itertools.repeat: repeat,
    itertools.starmap: starmap,
    itertools.groupby: groupby,
    itertools.takewhile: lambda tx, fn, it: WhileIteratorVariable(fn, it.iterate(tx), True),
    itertools.dropwhile: lambda tx, fn, it: WhileIteratorVariable(fn, it.iterate(tx), False),
    itertools.cycle: lambda tx, it: CycleIteratorVariable(it.unpack(tx)),
    itertools.compress: lambda tx, data, selectors: ListIteratorVariable(
        d for d, s in zip(data.unpack(tx), selectors.unpack(tx), strict=False) if s.truth(tx)
    ),
}
