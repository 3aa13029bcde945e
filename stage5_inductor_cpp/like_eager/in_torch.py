"""Calls the kernels cannot run: the graph runs in torch, whole, and says why.

Eager is the oracle, so a call that the kernels would get wrong runs the graph module
itself: its tensors are on a device the kernels do not run on (`device_reason`; stage 6
runs CUDA too), an input it writes into shares memory with another (in_place.py), or the
graph could not be compiled (the reason comes with its code: backend.py's `runs_in_torch`).
No such call is silent: each reason is logged once and kept in `torch_reasons`, which the
tests and the book read.
"""

import torch

from stage1_eval_frame.logs import get_logger

log = get_logger("kernels")


def devices_of(args) -> set[torch.device]:
    return {a.device for a in args if isinstance(a, torch.Tensor)}


class RunsInTorch:
    """What backend.py's `CompiledGraph` does with a call the kernels cannot run."""

    def ran_in_torch(self, reason: str):
        """Say why the graph runs in torch: once per reason, in the log and `torch_reasons`."""
        if reason not in self.torch_reasons:
            self.torch_reasons.append(reason)
            log.info("running the graph in torch: %s", reason)

    def device_reason(self, devices: set[torch.device]) -> str | None:
        """Why the kernels cannot run on the tensors' devices; stage 6 runs CUDA too."""
        if any(d.type != "cpu" for d in devices):
            return "a tensor is not on the CPU"
        return None
