"""Meta answers kept on disk: a fresh process traces without running torch's meta functions.

Tracing learns each result's sizes, strides and dtype by running the op on meta tensors
(tensor_ops.py; stage 5's meta_run.py asks again, node by node). Most of torch's meta
functions are Python (torch/_refs, torch/_meta_registrations.py), and the first one a
process runs imports torch._dynamo (their `torch._disable_dynamo` wrapper) and sympy
(`elementwise_dtypes`), which costs more than the rest of a warm start
(benchmarks/bench_compile_time.py measures it).

An answer depends only on the op, its arguments' metadata and torch (its version and the
settings in `settings()`), so it is kept: in memory, and in
`$MINIDYNAMO_CACHE_DIR/meta/<hash>.json`, one small file per question. A process that
finds the answer makes the result with `torch.empty_strided`, which is C++.

Only plain answers are kept: fresh tensors (not a view, not an argument's memory) from
an op that wrote into no argument, and only those that `Answer.result` makes the same.
The rest (`x.view(2, 8)`, `x.add_(1)`, an op that raises) run every time, so that
storages, version counters and exceptions stay torch's own. torch keeps the same answers
in memory, per process: FakeTensor's dispatch cache (torch/_subclasses/fake_tensor.py,
`_cached_dispatch_impl`) refuses views, in-place ops and data-dependent results too.
"""

import contextlib
import dataclasses
import hashlib
import json
import os
import pathlib
import sys
import tempfile

import torch
from torch.fx.immutable_collections import immutable_list

FORMAT = 1  # changes when the files' meaning does: old files are then never read
MAX_KEY = 4096  # `torch.tensor([...])` of a long list: not worth a file

_known: dict[str, "Answer | None"] = {}  # key -> this process's answer (None: ask torch)


@dataclasses.dataclass(frozen=True)
class Answer:
    """An op's fresh result tensors (size, stride, dtype name, requires_grad each), packed as
    `kind` says."""

    kind: str  # "Tensor", "tuple" or "list"
    tensors: tuple[tuple[tuple[int, ...], tuple[int, ...], str, bool], ...]

    def result(self):
        made = [make(*metadata) for metadata in self.tensors]
        return made[0] if self.kind == "Tensor" else {"tuple": tuple, "list": list}[self.kind](made)


def make(size, stride, dtype: str, requires_grad: bool) -> torch.Tensor:
    tensor = torch.empty_strided(size, stride, dtype=getattr(torch, dtype), device="meta")
    if requires_grad:  # a result of autograd, not a leaf: what clone (C++ too) makes
        return tensor.requires_grad_().clone()
    return tensor


def observed(tensor: torch.Tensor):
    """What the VM and stage 5 may read of a result, besides its memory."""
    layout = (tuple(tensor.shape), tuple(tensor.stride()), tensor.storage_offset())
    return *layout, tensor.dtype, tensor.requires_grad, tensor.is_leaf, tensor._is_view()


def run(target, args, kwargs):
    """`target(*args, **kwargs)`; a string target is a method of the first argument."""
    if isinstance(target, str):
        receiver, *rest = args
        return getattr(receiver, target)(*rest, **kwargs)
    return target(*args, **kwargs)


def call(target, args, kwargs):
    """`run(target, args, kwargs)` on meta tensors, answered from the cache where it can be."""
    tensors = []
    key = question(target, args, kwargs, tensors)
    if key is None:
        return run(target, args, kwargs)
    answer = recall(key)
    if answer is not None:
        return answer.result()
    before = [state(t) for t in tensors]
    result = run(target, args, kwargs)  # an exception leaves the cache as it was
    if key not in _known:  # asked for the first time in this process
        remember(key, plain_answer(result, tensors, before))
    return result


# ----------------------------------------------------------------------------- the question


class NotKeyable(Exception):
    """An argument whose description would not say everything the answer depends on."""


def question(target, args, kwargs, tensors: list) -> str | None:
    """The key of this call (the argument tensors are added to `tensors`), or None when the
    call is not one to keep: not torch's own op, an argument that is not plain metadata, or a
    mode that could change what the op does."""
    name = op_name(target)
    if name is None or torch._C._len_torch_function_stack() or torch._C._len_torch_dispatch_stack():
        return None
    try:
        described = [describe(list(args), tensors), describe(dict(kwargs), tensors)]
    except NotKeyable:
        return None
    key = json.dumps([settings(), name, *described])
    return key if len(key) <= MAX_KEY else None


def op_name(target) -> str | None:
    """`torch.sin`, `_operator.mul`, `Tensor.add`: torch's own ops only, whose answers change
    with torch's version alone (a user's function may change between two runs)."""
    if isinstance(target, str):  # a method, by name
        method = getattr(torch.Tensor, target, None)
        module = getattr(method, "__module__", None) or "torch"  # one written in C has none
        found, name = method is not None, f"Tensor.{target}"
    else:  # a function: its module's attribute of its name must be this very function
        module, name = getattr(target, "__module__", None) or "", getattr(target, "__name__", "")
        found = getattr(sys.modules.get(module), name, None) is target
        name = f"{module}.{name}"
    torch_own = module == "_operator" or module.split(".")[0] == "torch"
    return name if found and torch_own else None


def settings() -> list:
    """What else a meta function's answer may depend on: torch, the default dtype and
    device, grad and inference mode, and the flags that pick a convolution's layout."""
    return [
        FORMAT, torch.__version__, torch.version.git_version,
        str(torch.get_default_dtype()), str(torch.get_default_device()),
        torch.is_grad_enabled(), torch.is_inference_mode_enabled(),
        torch._C._get_mkldnn_enabled(), torch._C._get_cudnn_enabled(),
    ]  # fmt: skip


SCALARS = (type(None), bool, int, float, complex, str)
NAMED = (torch.dtype, torch.device, torch.layout, torch.memory_format)
# FX hands a node's list arguments over as immutable_list: a list to the op.
SEQUENCES = {tuple: "tuple", list: "list", torch.Size: "Size", immutable_list: "list"}


def describe(value, tensors: list):
    """`value` as JSON for the key; a tensor by its metadata (and added to `tensors`)."""
    if type(value) is torch.Tensor:  # a subclass may answer differently (__torch_function__)
        if not plain(value) or value.is_inference():
            raise NotKeyable("a tensor that is not a plain meta tensor")
        tensors.append(value)
        layout = [list(value.shape), list(value.stride()), value.storage_offset()]
        return ["Tensor", *layout, str(value.dtype), value.requires_grad]
    if type(value) in SCALARS:
        return [type(value).__name__, repr(value)]  # repr: 0.1 and nan come back exactly
    if type(value) in NAMED:
        return [type(value).__name__, str(value)]
    if type(value) in SEQUENCES:
        return [SEQUENCES[type(value)], [describe(v, tensors) for v in value]]
    if type(value) is dict:  # in its order; a key as any scalar (JSON's keys are strings)
        if any(type(k) not in SCALARS for k in value):
            raise NotKeyable("a dict key that is not a scalar")
        return ["dict", [[describe(k, tensors), describe(v, tensors)] for k, v in value.items()]]
    if type(value) is slice:
        return ["slice", [describe(v, tensors) for v in (value.start, value.stop, value.step)]]
    if value is Ellipsis:
        return ["Ellipsis"]
    raise NotKeyable(type(value).__name__)


def plain(tensor: torch.Tensor) -> bool:
    """A dense meta tensor with no conjugate or negative bit."""
    return (
        tensor.device.type == "meta"
        and tensor.layout == torch.strided
        and not tensor.is_quantized
        and not tensor.is_conj()
        and not tensor.is_neg()
    )


def state(tensor: torch.Tensor):
    """What an op that writes into `tensor` changes: its version, sizes or strides."""
    return tensor._version, tuple(tensor.shape), tuple(tensor.stride())


# ----------------------------------------------------------------------------- the answer


def plain_answer(result, tensors: list, before: list) -> Answer | None:
    """The answer to keep, or None: the op wrote into an argument, or its result is not fresh
    tensors (an argument's memory, two results sharing one) that `Answer.result` makes the
    same (not a view, an offset, strides that clone would change)."""
    if any(state(t) != s for t, s in zip(tensors, before, strict=True)):
        return None
    if type(result) is torch.Tensor:
        results = [result]
    elif type(result) in (tuple, list) and result and all(type(r) is torch.Tensor for r in result):
        results = list(result)
    else:  # a Python value, or a named tuple (`torch.max(x, 1)`): asked each time
        return None
    storages = {t.untyped_storage()._cdata for t in tensors}
    for r in results:
        storage = r.untyped_storage()._cdata
        if not plain(r) or storage in storages:
            return None
        storages.add(storage)
    metadata = tuple(
        (tuple(r.shape), tuple(r.stride()), str(r.dtype).removeprefix("torch."), r.requires_grad)
        for r in results
    )
    answer = Answer(type(result).__name__, metadata)
    made = answer.result()
    made = [made] if answer.kind == "Tensor" else made
    return answer if list(map(observed, results)) == list(map(observed, made)) else None


# ----------------------------------------------------------------------------- the files


def directory() -> pathlib.Path:
    """`meta/` in the cache directory of stage 5's kernels (its kernel_cache.py)."""
    default = pathlib.Path.home() / ".cache" / "minidynamo"
    return pathlib.Path(os.environ.get("MINIDYNAMO_CACHE_DIR", default)) / "meta"


def path_of(key: str) -> pathlib.Path:
    return directory() / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"


def recall(key: str) -> Answer | None:
    """The kept answer to `key`, from memory or from its file; None if there is none."""
    if key in _known:
        return _known[key]
    data = read_kept(path_of(key), key)
    if data is None:
        return None
    try:
        metadata = tuple((tuple(s), tuple(t), d, g) for s, t, d, g in data["tensors"])
        answer = Answer(data["kind"], metadata)
    except (KeyError, TypeError, ValueError):  # damaged: asked again, and written over
        return None
    _known[key] = answer
    return answer


def remember(key: str, answer: Answer | None):
    """Keep `answer` in memory and, if there is one, in its file."""
    _known[key] = answer
    if answer is not None:  # (stage 5 warns, once, about a directory it cannot write)
        write_kept(path_of(key), key, {"kind": answer.kind, "tensors": answer.tensors})


def read_kept(path: pathlib.Path, key: str) -> dict | None:
    """What the file at `path` keeps for `key`; None if there is no file, it keeps another
    key's (two keys of one hash), or it is cut short or damaged (written over later)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("key") == key else None


def write_kept(path: pathlib.Path, key: str, data: dict):
    """Keep `data` for `key` in the file at `path`, which says whose it is; a directory that
    cannot be written (a full disk) keeps nothing, and the next process works it out again."""
    with contextlib.suppress(OSError):
        write_atomically(path, json.dumps({"key": key, **data}))


def write_atomically(path: pathlib.Path, text: str):
    """Write under a temporary name, then rename: a process running beside this one reads a
    whole file or none (stage 5's kernel cache does the same)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as file:
            file.write(text)
        os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):  # renamed: nothing to remove
            os.unlink(temporary)
