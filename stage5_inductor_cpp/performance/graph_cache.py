"""Whole graphs kept on disk: a fresh process loads a graph's code instead of lowering it.

The kernel cache (kernel_cache.py) spares a warm start the C++ compiler, but not the
lowering, the fusion and the code writers that come before it. `cached` wraps backend.py's
`compile_graph`: the wrapper's source, the kernels' source and arguments, and the objects
the wrapper names (as graph_text.py spells them) are kept in
`$MINIDYNAMO_CACHE_DIR/graphs/<hash>.json`; a process whose key matches execs the wrapper
and loads the kernels' library (from the kernel cache), and lowers nothing. Torch's FX
graph cache does the same (torch/_inductor/codecache.py, `FxGraphCache`).

The key holds everything the code is made of, and nothing that differs harmlessly between
two processes (addresses, ids, the order of dicts in memory):

* the graph, node by node (graph_text.py): ops, targets by their stable names (`aten.mm.
  default`, `torch._C._nn.linear`), arguments, and the metadata the lowering reads;
* each input's class, sizes, strides, offset, dtype, device, requires_grad, whether
  autograd made it, and which earlier input shares its memory; a number's value;
* the backend: its code writer, wrapper class, kernel prefix, prelude and device rules;
* the process's state the lowering reads: torch's version and build, the source files of
  stages 1 to 6 (a change to any code that writes code is a new key), the host's CPU,
  the C++ compiler, the number of threads, the default dtype and device, grad and
  inference mode, autocast, deterministic algorithms, and the oneDNN and cuDNN flags.

So two keys are equal only when the same code would lower the same graph from the same
inputs in the same settings; the rest (what a tensor holds, where it lies) is read by the
code when it runs, as it is by code compiled in this process: a tensor the graph holds is
in the key by its layout, and the code loaded reads this process's. What the key cannot
hold stably is not cached (`NotCacheable`: a graph that calls a module object, or a
user's function, whose code may change under its name; symbolic sizes, whose lowering
adds guards to the frame), and neither is a graph that runs in torch, nor one of stage
6's kernels, whose loader keeps their variants in memory. The file holds its key; one that
holds another's, or is cut short or damaged, is not used and is written again. Files are
written whole under a temporary name and renamed, so a process beside this one reads a
whole entry or none.
"""

import functools
import hashlib
import inspect
import json
import pathlib

import torch

from stage1_eval_frame.logs import get_logger
from stage2_symbolic_vm.performance.meta_cache import read_kept, write_kept
from stage2_symbolic_vm.torch_api import autocast
from stage3_guards import config

from ..kernel_cache import CompilerNotFound, compiler
from ..robustness.cache_files import cache_dir, host_cpu
from .graph_text import NotCacheable, constants_of, graph_text, inputs_text, read, spell

log = get_logger("kernels")

FORMAT = 1  # changes when the files' meaning does
STAGES = pathlib.Path(__file__).parents[2]
stats = {"written": 0, "from_disk": 0}  # what the tests count
_not_kept: set[str] = set()  # reasons already logged
_written: set[pathlib.Path] = set()  # the entries this process wrote


@functools.cache
def sources_digest() -> str:
    """A hash of the stages' source files: any change in them may change the code written."""
    digest = hashlib.sha256()
    for path in sorted(STAGES.glob("stage[1-6]_*/**/*.py")):
        digest.update(str(path.relative_to(STAGES)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def settings() -> list:
    """The process's state that a trace or a lowering reads."""
    return [
        FORMAT, torch.__version__, torch.version.git_version, sources_digest(), host_cpu(),
        compiler(), torch.get_num_threads(), str(torch.get_default_dtype()),
        str(torch.get_default_device()), torch.is_grad_enabled(),
        torch.is_inference_mode_enabled(), spell(autocast.ambient_key()),
        torch.are_deterministic_algorithms_enabled(), torch._C._get_mkldnn_enabled(),
        torch._C._get_cudnn_enabled(),
    ]  # fmt: skip


def key_of(
    what: str, gm: torch.fx.GraphModule, args, more: list, constants: str | None = None
) -> str | None:
    """The key of `gm` called with `args` (`more`: what else its result depends on; the
    tensors `gm` holds spelled as `constants` says, graph_text.py), or None when something
    in them cannot be spelled stably (the reason is logged once)."""
    try:
        graph = graph_text(gm, constants)
        return json.dumps([what, settings(), spell(more), graph, inputs_text(args)])
    except NotCacheable as reason:
        if str(reason) not in _not_kept:
            _not_kept.add(str(reason))
            log.info("a %s not kept on disk: %s", what, reason)
        return None


def path_of(kind: str, key: str) -> pathlib.Path:
    return cache_dir() / kind / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"


def read_entry(kind: str, key: str) -> dict | None:
    """The entry of `key` in `kind/`, written by another process; None if there is none.

    A process does not read back what it wrote: the graphs it compiled it holds already,
    and what it may have changed since (a rule set by hand, a patched module: a test's
    doing) no key holds. The files are for the next process, which starts from the code on
    disk; within a process, every graph is compiled, as without files."""
    path = path_of(kind, key)
    return None if path in _written else read_kept(path, key)


def write_entry(kind: str, key: str, data: dict):
    path = path_of(kind, key)
    _written.add(path)
    write_kept(path, key, data)


def cached(compile_graph):
    """`compile_graph(gm, args, write, load, ...)` (backend.py), its code kept on disk for
    the backend's own loader (its default `load`), which loads kernels from their source.

    The process that compiles a graph runs the code as the file keeps it (read back from
    what it wrote), so that a fault of the spelling shows where it is made, not in the
    next process."""
    signature = inspect.signature(compile_graph)
    own_loader = signature.parameters["load"].default

    @functools.wraps(compile_graph)
    def compile_or_load(*args, **kwargs):
        given = signature.bind(*args, **kwargs)
        given.apply_defaults()
        options = given.arguments
        if options["load"] is not own_loader:
            return compile_graph(*args, **kwargs)
        backend = [options[name] for name in ("write", "wrapper", "prefix")]
        backend += [hashlib.sha256(options["prelude"].encode()).hexdigest(), repr(options["rules"])]
        # The tensors the graph holds are the code's by their layout; it reads the values
        # of this process's (a module's buffer, which may change), as compiled code does.
        key = key_of("graph", options["gm"], options["args"], backend, constants="layout")
        if key is None:
            return compile_graph(*args, **kwargs)
        constants = constants_of(options["gm"])
        data = read_entry("graphs", key)
        if data is not None and (found := code_of(data, own_loader, options, constants)):
            stats["from_disk"] += 1
            log.info("output code (from disk):\n%s", found.code)
            return found
        kept = {}

        def load(source, params):  # the loader, noting the kernels' arguments for the file
            kept["params"] = params
            return own_loader(source, params)

        options["load"] = load
        compiled = compile_graph(*given.args, **given.kwargs)
        data = entry_of(compiled, kept.get("params", {}), constants)
        if data is None:
            return compiled
        write_entry("graphs", key, data)
        stats["written"] += 1
        return code_of(data, own_loader, options, constants, written_here=True)

    return compile_or_load


def code_of(data: dict, load, options: dict, constants: list, written_here=False):
    """The code an entry keeps, its kernels loaded and its wrapper run; None if the entry is
    damaged or names what this process cannot find (then it is compiled, and written
    over). Read back where it was written, a fault is this module's: strict mode raises."""
    from ..backend import CompiledCode  # (backend.py imports this module)

    try:
        namespace = {name: read(value) for name, value in data["namespace"].items()}
        namespace.update({f"const{i}": tensor for i, tensor in enumerate(constants)})
        kernels, path = load(data["source"], data["params"]) if data["params"] else ({}, None)
        namespace.update(kernels)
        exec(compile(data["wrapper"], "<minidynamo wrapper from disk>", "exec"), namespace)
        return CompiledCode(
            data["source"], data["wrapper"], data["kernel_names"], namespace["call"], path,
            options["prelude"], tuple(data["extern_names"]),
            written_inputs=tuple(data["written_inputs"]),
        )  # fmt: skip
    except (NotCacheable, KeyError, TypeError, ValueError, SyntaxError, CompilerNotFound):
        if written_here and config.strict:
            raise
        return None


def entry_of(compiled, params: dict, constants: list) -> dict | None:
    """What to keep of `compiled` (backend.py's `CompiledCode`); None for code that runs in
    torch (it calls the graph module), symbolic code (its `fits` is read with its guards),
    and a wrapper that names an object graph_text.py cannot spell. The graph's tensors
    (`constants`) are left out: `code_of` names this process's."""
    if compiled.torch_reason or compiled.fits is not None:
        return None
    held = {f"const{i}": tensor for i, tensor in enumerate(constants)}
    skipped = {"__builtins__", "call", *params, *held}
    try:
        if any(compiled.call.__globals__.get(name) is not t for name, t in held.items()):
            raise NotCacheable("the wrapper names the graph's tensors otherwise")
        namespace = {
            name: spell(value)
            for name, value in compiled.call.__globals__.items()
            if name not in skipped
        }
    except NotCacheable as reason:
        log.info("a graph's code not kept on disk: %s", reason)
        return None
    return {
        "source": compiled.source, "params": params, "wrapper": compiled.wrapper_source,
        "namespace": namespace, "kernel_names": compiled.kernel_names,
        "extern_names": list(compiled.extern_names),
        "written_inputs": list(compiled.written_inputs),
    }  # fmt: skip
