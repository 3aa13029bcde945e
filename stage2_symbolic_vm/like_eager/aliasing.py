"""Aliasing: one object reached by two paths, and two objects that must stay two.

SideEffects (side_effects.py) keeps one Variable per outside object. This half of it
makes that sharing hold as eager's objects would: two tracked objects of one type that
the trace kept apart (it changed one of them, or the code asked `a is b`) must be two
again on a later call ("distinct", guarded), and an object of a user class and its
`__dict__`, reached by any two paths, hold one set of attributes.
"""

import inspect
import types


class Aliasing:
    """SideEffects' objects kept apart, and objects held together with their `__dict__`."""

    # --- objects kept apart --------------------------------------------------------------------

    def same_object(self, a, b) -> bool | None:
        """`a is b` for two tracked Variables: one Variable per object, so the answer is
        whether they are one Variable, and "distinct" is guarded when they are not. None
        when either is not a tracked object from outside."""
        if id(a) not in self.types or id(b) not in self.types:
            return None
        if a is not b:
            self.keep_apart(a, b)
        return a is b

    def note_change(self, var):
        """The trace changes `var` (a list's items, an object's attribute): if a later call
        passed one object where this trace saw two, one change would hide the other."""
        if id(var) not in self.types or id(var) in self.changed:
            return
        self.changed[id(var)] = var
        for _, other in list(self.objects.values()):
            self.keep_apart(var, other)

    def keep_apart(self, changed, other):
        """Objects of one type can be one object on a later call: assume they are not. Each
        goes in the trace's set of objects that are all distinct (one DISTINCT guard checks
        them at once: objects of two types are never one object, so that asks no more)."""
        if other is not changed and self.types[id(other)] is self.types[id(changed)]:
            self.trace.assume("distinct", changed.source)
            self.trace.assume("distinct", other.source)

    # --- an object and its `__dict__` ----------------------------------------------------------

    def track_instance_dict(self, obj, var):
        """An object of a user class and its `__dict__`, reached by any two paths: one store."""
        if hasattr(var, "instance_dict") and isinstance(getattr(obj, "__dict__", None), dict):
            self.owners[id(obj.__dict__)] = var
            held = self.objects.get(id(obj.__dict__))
            if held is not None:
                self.hold_attributes_in(var, held[1])
        elif id(obj) in self.owners:
            self.hold_attributes_in(self.owners[id(obj)], var)

    def store_in_instance_dict(self, obj, name, value) -> bool:
        """Store `obj.name = value` into the `__dict__` the code holds for `obj`, if it holds
        one (not for a slot): True if it did."""
        view = self.instance_dicts.get(id(obj))
        if view is None or is_slot(obj.python_type(), name):
            return False
        self.store_in(view, name, value)
        return True

    def hold_attributes_in(self, obj, view):
        """The code holds `obj.__dict__` (`view`): the attributes the trace assigned so far
        move into it, and later ones go there too (`store_attr`)."""
        if id(obj) in self.instance_dicts:
            return
        self.instance_dicts[id(obj)] = view
        for key in [key for key in self.stores if key[0] == id(obj)]:
            store = self.stores.pop(key)
            if not is_slot(obj.python_type(), store.name):
                self.store_in(view, store.name, store.value)
            else:
                self.stores[key] = store

    def store_in(self, view, name, value):
        from ..side_effects import DELETED  # side_effects.py builds on this file

        if value is DELETED:
            view.items.pop(name, None)  # the caller checked that it was there
        else:
            view.items[name] = value
        self.mutate(view)


def is_slot(cls, name) -> bool:
    """An attribute kept in a `__slots__` slot, not in the instance's `__dict__`."""
    return isinstance(inspect.getattr_static(cls, name, None), types.MemberDescriptorType)
