"""nn.ModuleList, nn.Sequential and nn.ModuleDict: iterated, indexed and sliced.

They behave as the containers they are, each submodule guarded where it was found.
"""

import operator

import torch

from ..errors import ObservedException, Unsupported
from ..python.sequences import SequenceVariable
from ..sources import attr_of
from ..variables import ConstantVariable


class ModuleContainer:
    """The container half of NNModuleVariable (functions.py): `for layer in self.layers`,
    `self.layers[0]`, `self.layers[:n]`, `if self.layers:` on a module container."""

    CONTAINERS = (torch.nn.ModuleList, torch.nn.Sequential, torch.nn.ModuleDict)

    def unpack(self, tx):
        """`for layer in self.layers`: the submodules (or ModuleDict's keys), counted in a guard."""
        if not isinstance(self.module, self.CONTAINERS):
            return super().unpack(tx)
        tx.trace.assume("length", self.source)
        if isinstance(self.module, torch.nn.ModuleDict):
            tx.trace.assume("dict_keys", attr_of(self.source, "_modules"))
            return [ConstantVariable(k) for k in self.module._modules]
        return [self.get_attr(tx, name) for name in self.module._modules]

    def getitem(self, tx, key):
        if not isinstance(self.module, self.CONTAINERS):
            return super().getitem(tx, key)
        if isinstance(self.module, torch.nn.ModuleDict):
            return self.get_attr(tx, key.as_python_constant())
        tx.trace.assume("length", self.source)
        index = key.as_python_constant()
        names = list(self.module._modules)
        if isinstance(index, slice):  # `self.layers[: config.num_layers]`
            return ModuleSliceVariable([self.get_attr(tx, n) for n in names[index]], self, index)
        if not isinstance(index, int) or not -len(names) <= index < len(names):
            raise ObservedException(IndexError(f"index {index!r} is out of range"))
        return self.get_attr(tx, names[index])

    def truth(self, tx):
        if isinstance(self.module, self.CONTAINERS):
            tx.trace.assume("length", self.source)
            return len(self.module) > 0
        return True


class ModuleSliceVariable(SequenceVariable):
    """`self.layers[:n]`: nn.ModuleList's slice is a new ModuleList of the same submodules. The
    VM keeps their Variables (each guarded where it came from) to iterate, index and count;
    should it leave the trace, the new code slices the container again."""

    def __init__(self, items, container, index: slice):
        super().__init__(items)
        self.container, self.index = container, index

    def python_type(self):
        return type(self.container.module)

    def getitem(self, tx, key):
        if isinstance(key.as_python_constant(), slice):
            raise Unsupported("unsupported_value", "a slice of a slice of a module container")
        return super().getitem(tx, key)

    def call_method(self, tx, name, args, kwargs):
        if name in ("__len__", "__getitem__"):
            return super().call_method(tx, name, args, kwargs)
        raise Unsupported("unsupported_value", f"{self.python_type().__name__}[slice].{name}()")

    def get_attr(self, tx, name):
        raise Unsupported("unsupported_value", f"{self.python_type().__name__}[slice].{name}")

    def reconstruct(self, cg):
        cg.call_callable(
            operator.getitem,
            lambda: cg.reconstruct(self.container),
            lambda: cg.load_const(self.index),
        )
