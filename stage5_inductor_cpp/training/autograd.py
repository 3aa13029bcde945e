"""A call that needs autograd (an input requires grad, grad mode on): the graph's forward
and backward, traced and split by stage 4's aot.py, each compiled as any graph (torch's
`compile_fx` hands its graphs to `aot_autograd` the same way). A call under autocast
takes the same path, for the casts the ATen trace writes down (like_eager/autocast.py)."""

import torch
import torch.fx

from ..like_eager.in_torch import devices_of
from ..performance.aot_cache import CachedAotGraph
from .aten import DECOMPOSITIONS


class TrainingGraphs:
    """What backend.py's `CompiledGraph` does with a call that needs autograd: its
    `training` (stage 4's `AotGraph`) runs the forward and backward graphs, compiled at the
    first such call into `parts`."""

    def train(self, args):
        """The forward and backward graphs of stage 4's aot.py, each compiled by the
        graph's own class (their ATen ops made torch calls, aten.py), the plan read from
        disk when an earlier process made it (performance/aot_cache.py).

        The devices are asked at the first call only: a later call whose devices differ
        reaches the parts' own check (backend.py's `specialize`), which runs them in
        torch. (Asked at every call, it was a Python loop over a ResNet-50's 320
        arguments, on every call of a model under autocast.)"""
        if self.training is None:
            if reason := self.device_reason(devices_of(args)):
                self.ran_in_torch(reason)
                return self.gm(*args)
            self.training = CachedAotGraph(
                self.gm, self.compile_part, DECOMPOSITIONS, self.ran_in_torch
            )
        return self.training(*args)

    def compile_part(self, gm: torch.fx.GraphModule, args) -> "TrainingGraphs":
        """A forward or backward graph (its ATen ops made torch calls when its plan was
        made: performance/aot_cache.py), compiled as any graph; its reasons to run in
        torch are this graph's."""
        part = self.new_graph(gm, args)
        for reason in part.torch_reasons:
            self.ran_in_torch(reason)
        part.torch_reasons = self.torch_reasons
        self.parts.append(part)
        return part

    def new_graph(self, gm: torch.fx.GraphModule, args) -> "TrainingGraphs":
        """A graph compiled as this one is (stage 6 passes its mode on)."""
        return type(self)(gm, args)
