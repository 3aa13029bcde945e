"""`mode="reduce-overhead"`: a specialisation's launches recorded once as a CUDA graph, replayed.

A compiled ResNet training step launches hundreds of kernels and convolutions, and each
launch costs the CPU time in Python and the driver. On a host whose CPU is slow the GPU
waits for those launches, however fast its kernels are.
A CUDA graph records every launch of one call, arguments and addresses included, and
replays them all with one call into the driver. Inductor does this in
torch/_inductor/cudagraph_trees.py, with one memory pool shared by all its graphs and a
tree of recordings; here each specialisation of a graph records its own, in its own pool.

A replay repeats the recorded call exactly: the same input addresses, the same output
memory. So before each replay `CudaGraphRunner` checks two things:

1. **Inputs are where the recording read them.** Three kinds of input stay put, and are
   read in place, their addresses checked: parameters; the outputs of another recording
   (a backward graph reads its forward's saved tensors); and a tensor passed again as the
   same object at the same address (a module's buffers, a fixed input), as torch marks
   buffers static. Every other input is copied into a buffer of the recording's own
   (`torch._foreach_copy_`). An input of the last kind that moves (a new batch where the
   first two calls passed one) is copied from the next recording on.
2. **The last replay's outputs are dead,** since this replay writes over them. Each
   output's storage is counted (`_storage_Use_Count`) against its count just after the
   recording. If somebody still holds one (a loop's `out = model(x)` holds last step's),
   the call records again into new memory, and leaves the old to the caller; from then on
   that output is cloned after each replay, so the caller gets a tensor of its own.

A call that decides something on the CPU from data (a sync, `.item()`) cannot be
recorded: its specialisation runs as it is from then on. Whatever is not a replay is
logged and kept in the compiled graph's `cudagraph_reasons`. torch's cudagraph trees
instead let a replay overwrite outputs still held, and raise when one is read.
"""

import threading
import warnings
import weakref
from collections.abc import Callable

import torch
import torch.utils._pytree as pytree

from stage1_eval_frame.logs import get_logger

from ..launcher import is_tensor

log = get_logger("kernels")

# Recordings a specialisation makes (again when an input read in place moves, or the caller
# holds an output) before it runs as it is for good (torch: cudagraph_unexpected_rerecord_limit).
RECORDINGS_LIMIT = 4
# storage address -> the recording whose output lives there (rule 1: read in place)
RECORDED_OUTPUTS: "weakref.WeakValueDictionary[int, Recording]" = weakref.WeakValueDictionary()


class CannotRecord(Exception):
    """The call cannot be recorded as a CUDA graph (the reason)."""


class CudaGraph:
    """A call recorded on the GPU: warmed up on the recording stream (cuBLAS and cuDNN set
    up their workspaces per stream), then captured. Capturing runs nothing.

    The warm-up runs with torch's sync debug mode set to "error", so that a call that waits
    for the GPU (`.item()`, a check read on the host) is found before capturing: a capture
    that fails leaves the CUDA generator believing it is still capturing, and every
    `torch.randn` on the device raises after it."""

    def __init__(self, call: Callable, inputs: list):
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        previous = torch.cuda.get_sync_debug_mode()
        set_sync_debug_mode("error")
        try:
            with torch.cuda.stream(stream):
                call(inputs)
        except RuntimeError as error:
            if "synchroniz" not in str(error):
                raise  # not a sync: a bug of ours, which must be seen
            raise CannotRecord(f"the call waits for the GPU: {error}") from error
        finally:
            set_sync_debug_mode(previous)
        torch.cuda.current_stream().wait_stream(stream)
        self.graph = torch.cuda.CUDAGraph()
        try:
            with warnings.catch_warnings():  # a call of empty tensors launches nothing
                warnings.filterwarnings("ignore", "The CUDA Graph is empty")
                with torch.cuda.graph(self.graph, stream=stream, capture_error_mode="thread_local"):
                    self.outputs = call(inputs)
        except RuntimeError as error:  # CUDA refused an op the sync check let through
            generator = torch.cuda.default_generators[torch.cuda.current_device()]
            generator.graphsafe_set_state(generator.clone_state())  # out of capture mode
            raise CannotRecord(f"CUDA refused to record it: {error}") from error

    def replay(self, inputs_of: Callable, args: list):
        self.graph.replay()  # the inputs are where the recording read them: none to gather


def set_sync_debug_mode(mode):
    with warnings.catch_warnings():  # torch warns that the mode is a prototype: we know
        warnings.simplefilter("ignore")
        torch.cuda.set_sync_debug_mode(mode)


class Rerun:
    """The CPU's stand-in for a CUDA graph, as Triton's interpreter stands in for the GPU:
    a replay runs the call again and copies its results into the recorded outputs, so the
    rules above are tested in CI, where no GPU is. A real replay writes the same memory.
    It keeps no input: holding another recording's output would keep that one busy. It
    cannot tell a call that syncs, which CUDA refuses to record: that is tested on the GPU."""

    def __init__(self, call: Callable, inputs: list):
        self.call = call
        self.outputs = call(inputs)

    def replay(self, inputs_of: Callable, args: list):
        fresh = pytree.tree_leaves(self.call(inputs_of(args)))
        for static, new in zip(pytree.tree_leaves(self.outputs), fresh, strict=True):
            if is_tensor(static):
                static.copy_(new)


def span(tensor: torch.Tensor) -> torch.Tensor:
    """The elements from `tensor`'s first to its last in memory, as one flat tensor: copying
    it copies any layout, even one whose elements overlap (an expanded dim)."""
    extent = 1 + sum((n - 1) * s for n, s in zip(tensor.shape, tensor.stride(), strict=True))
    extent = extent if tensor.numel() else 0
    return tensor.as_strided((extent,), (1,), tensor.storage_offset())


def storage_of(tensor: torch.Tensor) -> int | None:
    """The address of a tensor's memory, or None if it has none: empty tensors' is 0."""
    storage = tensor.untyped_storage()
    return storage.data_ptr() if storage.nbytes() else None


class Recording:
    """One recorded call: where its inputs are read, and its outputs' memory."""

    def __init__(self, call: Callable, args: list, in_place: set[int], written, recorder: type):
        self.in_place = {i: args[i].data_ptr() for i in sorted(in_place)}  # rule 1
        self.copied = [i for i, a in enumerate(args) if is_tensor(a) and i not in in_place]
        self.buffers = [torch.empty_like(span(args[i])) for i in self.copied]
        self.copies = {  # input -> its copy, in the buffer, with the caller's strides
            i: buffer.as_strided(args[i].shape, args[i].stride(), 0)
            for i, buffer in zip(self.copied, self.buffers, strict=True)
        }
        self.written = [(i, self.copied.index(i) if i in self.copied else None) for i in written]
        self.copy_in(args)
        self.recorded = recorder(call, self.inputs(args))
        self.outputs, self.spec = pytree.tree_flatten(self.recorded.outputs)
        # An output in a buffer's memory is the caller's input (or a view of it) in eager:
        # made again from the caller's tensor at each call, as aot.py regenerates aliases.
        buffers = {storage_of(b): n for n, b in enumerate(self.buffers)}
        inputs_memory = {storage_of(args[i]) for i in self.in_place}
        self.aliases, self.counted = {}, {}  # output -> copied input; output -> its storage
        for j, out in enumerate(self.outputs):
            if not is_tensor(out) or (memory := storage_of(out)) is None:
                continue  # an empty output has no memory to write over
            if memory in buffers:
                self.aliases[j] = self.copied[buffers[memory]]
            elif memory not in inputs_memory:  # a view of an input read in place: not ours
                self.counted[j] = out.untyped_storage()._cdata
                RECORDED_OUTPUTS[memory] = self
        # rule 2: each storage's references now, when the recording alone holds them
        self.counts = {j: torch._C._storage_Use_Count(c) for j, c in self.counted.items()}
        self.escaping: set[int] = set()  # outputs the caller kept once: cloned at each replay

    def inputs(self, args) -> list:
        """What the kernels read: the caller's tensors read in place, and the copies."""
        return [self.copies.get(i, a) for i, a in enumerate(args)]

    def copy_in(self, args):
        if self.copied:
            torch._foreach_copy_(self.buffers, [span(args[i]) for i in self.copied])

    def moved(self, args) -> list[int]:
        """The inputs read in place that are not where the recording read them (rule 1)."""
        return [i for i, address in self.in_place.items() if args[i].data_ptr() != address]

    def held(self) -> bool:
        """Whether an output of the last replay is still in use (rule 2); such outputs are
        cloned after each replay from now on."""
        count = torch._C._storage_Use_Count
        held = [j for j, c in self.counted.items() if count(c) != self.counts[j]]
        self.escaping.update(held)
        return bool(held)

    def replay(self, args):
        self.copy_in(args)
        self.recorded.replay(self.inputs, args)
        if self.written:  # the caller's tensors, as the kernels wrote them (their buffers)
            for i, n in self.written:
                if n is not None:
                    span(args[i]).copy_(self.buffers[n])
            torch.autograd.graph.increment_version(tuple(args[i] for i, _ in self.written))
        outputs = [
            self.output(j, out, args) if is_tensor(out) else out
            for j, out in enumerate(self.outputs)
        ]
        return pytree.tree_unflatten(outputs, self.spec)

    def output(self, j: int, out: torch.Tensor, args) -> torch.Tensor:
        """What the caller gets for output j: a clone once it escaped, the caller's own input
        for an alias of a copied one, else a new tensor over the recording's memory (so that
        autograd's bookkeeping lands on it, not on ours)."""
        if j in self.escaping:
            return out.clone()
        if j in self.aliases:
            base = args[self.aliases[j]]
            offset = base.storage_offset() + out.storage_offset()
            return base.as_strided(out.shape, out.stride(), offset)
        return out.detach()


class CudaGraphRunner:
    """A specialisation's `call(args)` under `mode="reduce-overhead"`: the first call runs as
    it is (it compiles and tunes the kernels, which a recording cannot), the second records,
    and later calls replay, or run as they are and say why not."""

    def __init__(self, call: Callable, written: tuple[int, ...], recorder: type, on_skip):
        self.call, self.written, self.recorder = call, written, recorder
        self.on_skip = on_skip  # told why a call did not replay its recording
        self.warm = False
        self.seen: dict[int, tuple] = {}  # input -> (weakref, address) at the last call
        self.demoted: set[int] = set()  # inputs passed again that moved: copied from now on
        self.from_recordings: set[int] = set()  # inputs that are another recording's outputs
        self.recording: Recording | None = None
        self.recordings = 0
        self.reason: str | None = None  # why this specialisation never replays
        self.replays = 0
        self.lock = threading.Lock()

    def __call__(self, args):
        # One call at a time: two threads replaying at once would write the same memory,
        # and one's outputs must be counted as held before the other's checks.
        with self.lock:
            return self.run(args)

    def run(self, args):
        if self.reason is not None:
            return self.call(args)
        if not self.warm:
            self.warm = True
            self.seen = identities(args)
            return self.call(args)
        if self.recording is None:
            return self.record(args)
        if moved := self.recording.moved(args):
            if any(
                storage_of(args[i]) not in RECORDED_OUTPUTS
                for i in moved
                if i in self.from_recordings
            ):
                # made by a call that ran as it is: the next one replays again, most likely
                return self.run_as_is(f"input {moved[0]} was made without a replay", args)
            self.demoted.update(
                i
                for i in moved
                if i not in self.from_recordings and not isinstance(args[i], torch.nn.Parameter)
            )
            return self.record(args, f"input {moved[0]} moved")  # a new parameter, a new maker
        if self.recording.held():
            return self.record(args, "the caller holds an output of the last replay")
        self.replays += 1
        return self.recording.replay(args)

    def run_as_is(self, reason: str, args):
        self.on_skip(reason)
        return self.call(args)

    def stays_put(self, i: int, arg) -> bool:
        """Read in place (rule 1): a parameter, another recording's output, or the object
        the last call passed, at the same address."""
        if isinstance(arg, torch.nn.Parameter) or i in self.from_recordings:
            return True
        ref, address = self.seen.get(i, (None, None))
        return (
            i not in self.demoted and ref is not None and ref() is arg and address == arg.data_ptr()
        )

    def record(self, args, again: str | None = None):
        """Record (again: why), then replay. The caller keeps any memory of an earlier
        recording it holds; the outputs it held are cloned after each replay of the new one."""
        escaping = self.recording.escaping if self.recording is not None else set()
        self.recording = None
        self.recordings += 1
        if again is not None:
            self.on_skip(f"recorded again: {again}")
        if self.recordings > RECORDINGS_LIMIT:
            self.reason = f"recorded {RECORDINGS_LIMIT} times: inputs or held outputs keep moving"
            return self.run_as_is(self.reason, args)
        tensors = {i: a for i, a in enumerate(args) if is_tensor(a)}
        self.from_recordings = {i for i, a in tensors.items() if storage_of(a) in RECORDED_OUTPUTS}
        in_place = {i for i, a in tensors.items() if self.stays_put(i, a)}
        self.seen = identities(args)
        try:
            self.recording = Recording(self.call, args, in_place, self.written, self.recorder)
            self.recording.escaping |= escaping
        except CannotRecord as error:
            self.reason = f"the call cannot be recorded: {error}"
            return self.run_as_is(self.reason, args)
        self.replays += 1
        return self.recording.replay(args)


def identities(args) -> dict[int, tuple]:
    """Each tensor argument's object (weakly) and address: what `stays_put` compares."""
    return {i: (weakref.ref(a), a.data_ptr()) for i, a in enumerate(args) if is_tensor(a)}
