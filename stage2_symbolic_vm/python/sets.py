"""Sets and frozensets of Variables (torch/_dynamo/variables/sets.py).

A set keeps the keys of its items (`key_of`, containers.py) in a real set, so CPython
hashes, orders and combines them (`s | t`, `s.issubset(xs)`: `stand_in` gives CPython an
object that iterates as the other operand does). A set read from outside that the trace
changes keeps each change, which the real set goes through again after the graph
(`replay_changes`, side_effects.py).
"""

from ..errors import ObservedException, Unsupported
from ..side_effects import replay_changes
from ..variables import ConstantVariable, Variable
from .containers import ContainerVariable, contents_of, key_of, where
from .dicts import DictVariable, DictViewVariable, is_checkable_key
from .sequences import ListVariable, TupleVariable

SET_TYPES = (set, frozenset)


class SetVariable(ContainerVariable):
    """A set or frozenset. `items` is a real set (or frozenset) of the items' keys (`key_of`),
    so CPython hashes, orders and combines them; `key_vars` maps the keys that are not
    constants back to their Variables."""

    def __init__(self, items, source=None, set_type=set):
        keys, self.key_vars = [], {}
        for var in items:
            keys.append(key_of(var))
            if not isinstance(var, ConstantVariable):
                self.key_vars.setdefault(keys[-1], var)
        self.items = set_type(keys)  # inserted in order, as BUILD_SET and set(iterable) insert
        self.source, self.set_type = source, set_type
        self.changes = []  # (method, argument keys) of each change, for `replay`
        self.recipe = None  # how a set made in the trace is made again (below)
        if source is None and not self.key_vars:  # BUILD_SET adds its items in order
            self.recipe = (("new", set_type, (("seq", tuple(keys)),) if keys else ()), [])

    @classmethod
    def of_keys(cls, keys, key_vars: dict, made=None) -> "SetVariable":
        """A set CPython computed from the keys of others (`a | b`, `s.union(t)`); `made`
        says how, for its recipe (None: not known)."""
        result = cls([], set_type=type(keys))
        result.items = keys
        result.key_vars = {k: v for k, v in key_vars.items() if k in keys}
        result.recipe = None if made is None or result.key_vars else (made, [])
        return result

    def snapshot(self):
        """The recipe as it stands (a constant: later changes are not in it), or None."""
        return None if self.recipe is None else (self.recipe[0], tuple(self.recipe[1]))

    def made_again(self, tx, name, args):
        """Add a change to the recipe of a set made in the trace (it is lost if an argument
        cannot be given again)."""
        if self.recipe is None or self.source is not None:
            return
        if name in ("add", "remove", "discard"):
            arguments = tuple(("key", set_key(tx, arg)) for arg in args)
        else:
            arguments = tuple(as_argument(tx, arg) for arg in args)
        valid = None not in arguments and not any(is_variable_key(a) for a in arguments)
        self.recipe = (self.recipe[0], [*self.recipe[1], (name, arguments)]) if valid else None

    def key_var(self, k) -> Variable:
        return self.key_vars.get(k) or ConstantVariable(k)

    def python_type(self):
        return self.set_type

    def is_python_constant(self):
        return not self.key_vars

    def as_python_constant(self):
        return self.set_type(self.items)

    def ordered_keys(self) -> list:
        """The keys in CPython's order, which is not known when objects made in the trace (or
        tensors) are among them: their hashes are ids."""
        if len(self.items) > 1 and any(hashed_by_id(k) for k in self.items):
            raise Unsupported(
                "unsupported_value",
                "the order of a set of tensors (or of objects made in the trace): it is the order "
                "of their ids, which the trace cannot know",
            )
        return list(self.items)

    def unpack(self, tx):
        return [self.key_var(k) for k in self.ordered_keys()]

    def iterate(self, tx):
        from .iterators import SetIteratorVariable  # iterators.py builds on this file

        self.ordered_keys()
        return SetIteratorVariable(self)

    def hash_key(self):
        if self.set_type is frozenset:
            return frozenset(self.items)
        return super().hash_key()

    def methods(self):
        return SET_METHODS

    MUTATING = frozenset({"add", "remove", "discard", "pop", "clear", "update", "__init__"})
    MUTATING |= {"intersection_update", "difference_update", "symmetric_difference_update"}

    def call_method(self, tx, name, args, kwargs):
        result = super().call_method(tx, name, args, kwargs)
        if name in self.MUTATING and self.source is not None:  # what `replay` makes again
            self.record(tx, name, args)
        elif name in self.MUTATING:
            self.made_again(tx, name, args)
        return result

    def record(self, tx, name, args):
        """Keep a change of a set from outside: its method and arguments as keys. An iterable
        is kept as its keys in its order, and its kind: CPython grows the set's table ahead
        for another set or a dict (set_update_internal), one item at a time for the rest."""
        if name in ("add", "remove", "discard"):
            arguments = [(None, set_key(tx, arg)) for arg in args]
        else:
            arguments = [self.replayed_as(tx, arg) for arg in args]
        self.changes.append((name, arguments, dict(self.key_vars)))

    @staticmethod
    def replayed_as(tx, arg):
        """(what makes the argument again, from what): a set made in the trace by its
        recipe, whose table CPython reads (set_merge); another iterable from its keys."""
        argument = as_argument(tx, arg)
        if argument is not None and argument[0] == "set" and argument[1] is not None:
            return replay_set, argument[1]
        iterable = stand_in(tx, arg)[0]
        return REPLAYED_AS.get(type(iterable), tuple), tuple(iterable)

    def write_back(self, cg):
        """`replay_changes` of the list of this set's changes (method, arguments): the real set
        goes through the same operations as eager's (side_effects.py)."""
        return replay_changes, [self.push_changes(cg)]

    def push_changes(self, cg):
        for name, arguments, key_vars in self.changes:
            cg.load_const(name)
            known = {**key_vars, **self.key_vars}
            for kind, key in arguments:
                if kind is None:
                    push_key(cg, key, known)
                else:
                    cg.call_callable(kind, lambda key=key, known=known: push_key(cg, key, known))
            cg.collect("BUILD_LIST", len(arguments))
            cg.collect("BUILD_TUPLE", 2)
        cg.collect("BUILD_LIST", len(self.changes))
        return cg.stash()

    def combine(self, tx, name, others):
        """`s.union(*others)` & co: the real method, run by CPython on the keys, each other
        iterable given as an object that iterates as it does (`stand_in`)."""
        method = getattr(self.set_type, name, None)
        if method is None:  # `frozenset.update(fs, ...)`, through the class
            raise ObservedException(AttributeError(f"frozenset has no attribute {name!r}"))
        given, others = others, [stand_in(tx, other) for other in others]
        key_vars = {k: v for _, kv in reversed(others) for k, v in kv.items()} | self.key_vars
        result = tx.run_python(method, self.items, *(keys for keys, _ in others))
        if result is self.items:  # frozenset.copy() and .union() of nothing: the same object
            return self
        if isinstance(result, (set, frozenset)):
            made = made_by(tx, self, name, given)
            return SetVariable.of_keys(result, key_vars, made)
        self.key_vars = {k: v for k, v in key_vars.items() if k in self.items}  # an update
        return None if result is None else ConstantVariable(result)

    def build(self, cg):
        if self.recipe is not None:  # made again as it was made: CPython's order with it
            cg.call_callable(replay_set, lambda: cg.load_const(self.snapshot()))
            if self.set_type is not frozenset:
                cg.keep(self)
            return
        items = [self.key_var(k) for k in self.items]
        if self.set_type is frozenset:
            cg.call_callable(frozenset, lambda: cg.build_sequence(items, "BUILD_SET"))
        else:
            cg.build_sequence(items, "BUILD_SET")
            cg.keep(self)

    def __repr__(self):
        return f"SetVariable({list(self.items)!r})"


# --- a set made in the trace, made again (its recipe) -------------------------------------
# A set iterates in the order of its table, which depends on how it was filled (the order
# of its adds, the table of a set it was copied from, its removals), not on its items
# alone: made again from its items in that order, a set of strings iterates otherwise about
# one time in three. So a set made in the trace keeps its recipe: the call that made it and
# each change since, with the sets it was made from by their own recipes. The new bytecode
# makes it by the same calls (`replay_set`), and CPython's table comes out the same. An
# argument is given again as ("key", k), ("seq", keys: a tuple, iterated), ("dict", keys:
# dict.fromkeys, which set_update_internal reads as a dict), ("const", a frozenset of the
# code) or ("set", a recipe).


def as_argument(tx, value):
    """How `value`, an argument of a set's call, is given again; None where it cannot be (a
    set from outside: its table is the caller's object's, as it was then)."""
    value = contents_of(tx, value, SET_TYPES)
    if isinstance(value, SetVariable):
        return None if value.source is not None else ("set", value.snapshot())
    if isinstance(value, ConstantVariable) and isinstance(value.value, frozenset):
        return ("const", value.value)
    keys, key_vars = stand_in(tx, value)
    if key_vars or isinstance(keys, (set, frozenset)):
        return None
    return ("dict" if isinstance(keys, dict) else "seq", tuple(keys))


def is_variable_key(argument) -> bool:
    kind, value = argument
    return (kind == "set" and value is None) or (kind == "key" and hashed_by_id(value))


def made_by(tx, left, name: str, others):
    """The maker of `left.name(*others)`'s new set, or None."""
    arguments = tuple(as_argument(tx, other) for other in others)
    if left.recipe is None or left.source is not None or None in arguments:
        return None
    if any(is_variable_key(a) for a in arguments):
        return None
    return ("method", left.set_type, name, left.snapshot(), arguments)


def replay_set(recipe, into=None):
    """Make a set by its recipe (what the new bytecode calls); `into`: an empty instance of a
    set's subclass, made to hold it (`set(iterable)` fills a new set as `update` does)."""
    maker, changes = recipe
    if into is not None:
        made = into
        set.update(made, *map(replayed, maker[2]))
    elif maker[0] == "new":
        made = maker[1](*map(replayed, maker[2]))
    else:
        _, owner, name, left, arguments = maker
        made = getattr(owner, name)(replay_set(left), *map(replayed, arguments))
    for name, arguments in changes:
        getattr(set, name)(made, *map(replayed, arguments))
    return made


def replayed(argument):
    kind, value = argument
    if kind == "set":
        return replay_set(value)
    return dict.fromkeys(value) if kind == "dict" else value


# What an iterable argument of a set's change is made again as (any other: a tuple).
REPLAYED_AS = {set: set, frozenset: set, dict: dict.fromkeys, type({}.keys()): dict.fromkeys}


def push_key(cg, key, key_vars: dict):
    """Push a key as the object it stands for: a constant, a tuple of keys, or the Variable
    of an object that is not a constant (a tensor, an object from outside)."""
    if isinstance(key, tuple) and any(isinstance(k, Variable) for k in key):
        for item in key:
            push_key(cg, item, key_vars)
        cg.collect("BUILD_TUPLE", len(key))
    elif isinstance(key, Variable):
        cg.reconstruct(key)
    elif key in key_vars:
        cg.reconstruct(key_vars[key])
    else:
        cg.load_const(key)


def set_key(tx, item: Variable):
    """The key `in`, `remove` and `discard` look for: a set (of a subclass too) is looked for
    as a frozenset (CPython's set_contains retries an unhashable set so)."""
    item = contents_of(tx, item, SET_TYPES)
    if isinstance(item, SetVariable):
        return frozenset(item.items)
    return key_of(item)


def _add(s, tx, item, /):
    key = key_of(item)
    if key not in s.items and not isinstance(item, ConstantVariable):
        s.key_vars[key] = item
    s.items.add(key)


def _init(s, tx, iterable=None, /):
    """`s.__init__(iterable)`: set_init empties the set, then adds the items; a frozenset's
    `__init__` is object's, which does nothing (frozenset.__new__ took the items)."""
    if s.set_type is frozenset:
        return
    s.items.clear()
    if iterable is not None:
        s.combine(tx, "update", [iterable])


def _reduce(s, tx, protocol=None, /):
    """`set.__reduce__` (copy.deepcopy's and pickle's): `(type, (list of the items,), None)`,
    the items in the set's order, as CPython's set_reduce makes it."""
    items = ListVariable(s.unpack(tx))
    kind = tx.wrap(s.set_type, None)
    return TupleVariable([kind, TupleVariable([items]), ConstantVariable(None)])


def _set_pop(s, tx, /):
    s.ordered_keys()  # which item comes first is CPython's order
    key = tx.run_python(s.items.pop)
    return s.key_vars.pop(key, None) or ConstantVariable(key)


COMBINING = ("union", "intersection", "difference", "symmetric_difference", "copy", "update")
COMBINING += ("issubset", "issuperset", "isdisjoint", "intersection_update")
COMBINING += ("difference_update", "symmetric_difference_update")


def combining(name):
    """A method that takes iterables (`union`, `issubset`, `update` ...): SetVariable.combine."""
    return lambda s, tx, /, *others: s.combine(tx, name, others)


SET_METHODS = {
    "add": _add,
    "remove": lambda s, tx, item, /: tx.run_python(s.items.remove, set_key(tx, item)),
    "discard": lambda s, tx, item, /: s.items.discard(set_key(tx, item)),
    "pop": _set_pop,
    "clear": lambda s, tx, /: s.items.clear(),
    "__init__": _init,
    "__reduce__": _reduce,
    "__reduce_ex__": _reduce,
    "__contains__": lambda s, tx, item, /: ConstantVariable(set_key(tx, item) in s.items),
    "__len__": lambda s, tx, /: ConstantVariable(len(s.items)),
    "__iter__": lambda s, tx, /: s.iterate(tx),
    **{name: combining(name) for name in COMBINING},
}


def stand_in(tx, value: Variable):
    """(a Python object that iterates, hashes and combines as `value` does in set algebra,
    the Variables of its keys that are not constants).

    A set is its keys, a dict its real dict of keys, a keys view that dict's own keys view,
    a constant itself; an items view of constant values a real items view; any other iterable
    the list of its items' keys (so `{1} | [2]` still fails as in CPython, and
    `d.keys() | [2]` works; but an operator on the items of other values would not). An
    instance of a set's subclass is its contents: CPython reads its table as a set's."""
    value = contents_of(tx, value, SET_TYPES)
    if isinstance(value, SetVariable):
        return value.items, value.key_vars
    if isinstance(value, DictVariable):
        return value.items, value.key_vars
    if isinstance(value, DictViewVariable) and value.kind == "keys":
        return value.dict_var.items.keys(), value.dict_var.key_vars
    if isinstance(value, DictViewVariable) and value.kind == "items":
        value.unpack(tx)  # the values of a dict from outside are read
        if value.is_python_constant():
            return value.as_python_constant(), {}
    if isinstance(value, ConstantVariable):
        return value.as_python_constant(), {}
    items = value.unpack(tx)
    keys = [key_of(item) for item in items]
    kept = {k: v for k, v in zip(keys, items, strict=True) if not isinstance(v, ConstantVariable)}
    return keys, kept


def hashed_by_id(key) -> bool:
    """A key that stands for an object made in the trace (or a tensor): its hash is the id of
    its Variable, not of the object eager will have, so it orders a set differently."""
    if isinstance(key, tuple):
        return any(hashed_by_id(k) for k in key)
    return isinstance(key, Variable)


def wrap_set(tx, value, source):
    """A set from outside, guarded whole by `==`. dataclasses' `_ATOMIC_TYPES` is a frozenset
    of classes: items equal only to themselves (classes, functions, `operator.add`) are
    guarded by the set's `==` as well as constants: what the dict keys guard checks."""
    if not all(is_checkable_key(v) for v in value):
        raise Unsupported("unsupported_value", f"{where(source)} holds items with own __eq__")
    if source is not None:
        tx.trace.assume("constant", source)
    return SetVariable([tx.wrap(v, None) for v in value], source, type(value))
