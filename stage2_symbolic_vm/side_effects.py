"""Side effects: what the traced code changes in objects that exist outside the trace.

A graph computes tensors; it cannot assign `self.config.is_causal = True`,
append to a list the caller holds, or set a key of a global dict. The VM
lets the traced code do these things to its Variables (so later reads see
them), and records here *which* outside objects changed. Once the graph has
run, stage 4's new bytecode writes the final state into the real objects, in
the order the changes were first made: an attribute's last value (or its
deletion), a container's whole new contents. Eager would leave the objects
exactly so (torch/_dynamo/side_effects.py, `SideEffects.codegen_update_mutated`).
"""

import collections
from dataclasses import dataclass

from .errors import ObservedAttributeError
from .like_eager.aliasing import Aliasing, is_slot

DELETED = object()  # the value of an attribute the code deleted
DICT_BASES = (collections.OrderedDict, collections.defaultdict, dict)


@dataclass(eq=False)
class AttributeStore:
    """`obj.name = value` (or `del obj.name`: value is DELETED). `generic` says whether to write
    with `object.__setattr__` (the code ran the class's own __setattr__ already) or `setattr`."""

    obj: object  # the Variable of the object
    name: str
    value: object
    generic: bool


class SideEffects(Aliasing):
    """The changes of one trace to outside objects, shared by every frame of the VM.

    It also keeps the one Variable of each outside object whose identity the code can
    observe (a list, a dict, a set, an object of a user class, a module, a tensor), however
    the code reached it (torch/_dynamo/side_effects.py: `id_to_variable`). A list the frame
    holds as local `acc` and as the `__self__` of `acc.append` on the stack is one list: a
    resume function gets both, and an append through one must be seen through the other
    and written back once. The trace relies on that sharing ("alias"), and on two objects
    it kept apart staying apart when it changed one of them ("distinct"): both are guarded.
    Aliasing (like_eager/aliasing.py) keeps those apart, and an object of a user class
    together with its `__dict__`.
    """

    def __init__(self, trace=None):
        self.trace = trace  # where the "alias" and "distinct" assumptions go
        self.stores: dict[tuple[int, str], AttributeStore] = {}
        self.containers: dict[int, object] = {}  # id -> a list/dict/set Variable with a source
        self.objects: dict[int, tuple[object, object]] = {}  # id(obj) -> (obj, its Variable)
        self.types: dict[int, type] = {}  # id of a tracked Variable -> the type of its object
        self.changed: dict[int, object] = {}  # id -> a tracked Variable the trace changed
        # id of an object's Variable -> its `__dict__`, once the code holds that: from then
        # on its attributes live there (two places for one attribute: one change would win)
        self.instance_dicts: dict[int, object] = {}
        self.owners: dict[int, object] = {}  # id of a `__dict__` -> its tracked object's Variable

    def __bool__(self):
        return bool(self.stores or self.containers)

    # --- one Variable per outside object ---------------------------------------------------

    def variable_of(self, obj, source):
        """The Variable already made for `obj` (reached now through `source`), or None."""
        found = self.objects.get(id(obj))
        if found is None or found[0] is not obj:
            return None
        var = found[1]
        if source != var.source:
            self.trace.assume("alias", source, var.source)
        return var

    def track(self, obj, var):
        """`var` is the one Variable of `obj`, an object read from outside through var.source."""
        self.objects[id(obj)] = (obj, var)
        self.types[id(var)] = type(obj)
        for changed in list(self.changed.values()):
            self.keep_apart(changed, var)
        self.track_instance_dict(obj, var)

    # --- the changes -----------------------------------------------------------------------

    def store_attr(self, obj, name: str, value, generic: bool = False):
        self.note_change(obj)
        if self.store_in_instance_dict(obj, name, value):  # the code holds `obj.__dict__`
            return
        key = (id(obj), name)
        self.stores.pop(key, None)  # the last store goes last
        self.stores[key] = AttributeStore(obj, name, value, generic)

    def load_attr(self, obj, name: str):
        """The value the trace assigned to `obj.name`, or None if it assigned none."""
        store = self.stores.get((id(obj), name))
        if store is None:
            return None
        if store.value is DELETED:
            raise ObservedAttributeError(f"attribute {name!r} was deleted")
        return store.value

    def describe(self) -> str:
        """The objects changed, in words: "local 'xs', attribute 'last' of local 'self'"."""
        changed = [c.source.describe() for c in self.containers.values()]
        for store in self.stores.values():
            owner = store.obj.source.describe() if store.obj.source else "an object made here"
            changed.append(f"attribute {store.name!r} of {owner}")
        return ", ".join(changed)

    def mutate(self, container):
        self.note_change(container)
        self.containers.setdefault(id(container), container)

    def codegen(self, cg):
        """Write every change into the real objects (stage 4 calls this after the graph).

        Every object and value is loaded first, into temporaries, and only then written:
        a value that the trace read from an attribute another change deletes or replaces
        (`b.x = a.x; del a.x`, as transformers' `get_text_config` renames keys) must be
        read before that change, as the trace read it."""

        def constant(value):
            return lambda: cg.load_const(value)

        writes = []  # (setter, pushers of its arguments): `cg.stash()` pushes a temporary
        for container in self.containers.values():
            cg.load_source(container.source)
            target = cg.stash()
            write_back = getattr(container, "write_back", None)
            if write_back is not None:  # a set's changes, in order; an iterator's position
                function, pushers = write_back(cg)
                writes.append((function, [target, *pushers]))
                continue
            container.build(cg)
            writes.append((replace_contents, [target, cg.stash()]))
            # What `build` made is a copy of the contents: the container itself is still the
            # object its source reads (`box.items += [v]` keeps the list it changed)
            cg.temps.pop(id(container), None)
        for store in self.stores.values():
            cg.reconstruct(store.obj)
            setter, arguments = delete_attribute, [cg.stash(), constant(store.name)]
            if store.value is not DELETED:
                cg.reconstruct(store.value)
                setter, arguments = assign_attribute, [*arguments, cg.stash()]
            writes.append((setter, [*arguments, constant(store.generic)]))
        for setter, pushers in writes:
            cg.call_callable(setter, *pushers)
            cg.pop_top()


# What the new bytecode calls to apply the changes: ordinary functions, so that a reader
# of the rewritten bytecode sees one call per change.


def replace_contents(container, new):
    """Give a list, dict or set the contents `new` (a fresh container of the same kind).

    A subclass of list or dict is changed through its builtin base, as the trace changed it
    (its own `update` or `__setitem__` may do more, or refuse)."""
    if isinstance(container, list):
        list.__setitem__(container, slice(None), new)
    elif isinstance(container, dict):
        base = next(b for b in type(container).__mro__ if b in DICT_BASES)
        base.clear(container)
        for key, value in new.items():
            base.__setitem__(container, key, value)
    else:
        container.clear()
        container.update(new)


def replay_changes(container, changes):
    """Make the changes `(method name, arguments)` again, in order, on the real container. A
    set's order of iteration depends on how its table was filled and emptied, not only on
    its items: rebuilt from its final items, the caller's set would iterate in another order
    than eager leaves it in. Each is `set`'s own method: the trace ran any override."""
    for name, arguments in changes:
        getattr(set, name)(container, *arguments)


def assign_attribute(obj, name, value, generic):
    (object.__setattr__ if generic else setattr)(obj, name, value)


def delete_attribute(obj, name, generic):
    """`del obj.name`, where the trace ended with the attribute deleted. The trace checked each
    `del` itself, so an attribute missing now was assigned and deleted by the trace alone
    (`obj.v = 1; del obj.v`): eager's object never had it, and there is nothing to delete."""
    plain = generic or type(obj).__delattr__ is object.__delattr__
    if plain and not is_slot(type(obj), name) and name not in getattr(obj, "__dict__", {}):
        return
    (object.__delattr__ if generic else delattr)(obj, name)
