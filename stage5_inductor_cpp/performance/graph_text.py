"""Graphs, their inputs and the objects their code names, spelled as JSON a fresh process reads.

The caches of whole graphs (graph_cache.py, aot_cache.py) key an entry by a graph's text
and keep graphs and wrappers' namespaces in their files. Both need each object spelled by
what it is, never by where it lies in memory (a `repr` holds an address, which differs
between two processes harmlessly), and read back as the very object:

    torch.ops.aten.mm.default   ["op", "aten.mm.default"]
    torch.float32               ["dtype", "float32"]
    torch._C._nn.linear         ["global", "torch._C._nn", "linear"]
    a node of the graph         ["node", "addmm_1"]

A function is spelled by its module and name only when that names this very object, and
is read back only from a module this process has loaded (nothing is imported on a file's
word). What cannot be spelled so (a module object a graph calls, a user's closure, a
tensor constant, a symbolic size) raises `NotCacheable`: that graph is compiled, every
time, as without the cache. Torch's FX graph cache pickles the graph with a reducer that
makes the same choice (`FxGraphCachePickler`: tensors by metadata, and graphs it cannot
key are not cached).
"""

import sys

import torch
import torch.fx
from torch.fx.immutable_collections import immutable_dict, immutable_list

from ..like_eager.externs import MethodOf
from ..lowerings.gather import IndexCheck
from .channels_last import conv2d_with_channels_last_weights


class NotCacheable(Exception):
    """Something a graph or its code depends on that cannot be spelled stably."""


# Functions that make a fresh closure per call site, which the file names by its maker:
# reading it back makes a new one, as compiling did.
MAKERS = {conv2d_with_channels_last_weights}
# Classes whose objects hold plain data only: spelled by their attributes, as pickle does.
BY_STATE = {IndexCheck}
TORCH_NAMED = (torch.memory_format, torch.layout, torch.qscheme)
MAX_VALUES = 4096  # a tensor the code holds is spelled by its values up to this many
# The packages whose functions may be spelled by name: their code is in the key (torch's
# version, the stages' files: graph_cache.py's `settings`) or never changes (the standard
# library's). A user's function could change between two processes under the same name,
# and the joint trace runs its code: it is not spelled.
NAMED_FROM = {"torch", "_operator", "operator", "math", "builtins", "functools", "_functools"}
NAMED_FROM |= {f"stage{n}_{name}" for n, name in enumerate(
    ["eval_frame", "symbolic_vm", "guards", "fx", "inductor_cpp", "inductor_triton"], start=1
)}  # fmt: skip


def spell(value):
    """`value` as JSON (`read` makes it again)."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, torch.fx.Node):
        return ["node", value.name]
    if type(value) in (tuple, list, immutable_list, torch.Size):
        kind = {tuple: "tuple", torch.Size: "size"}.get(type(value), "list")
        return [kind, *map(spell, value)]
    if type(value) in (dict, immutable_dict):
        if any(type(k) is not str for k in value):
            raise NotCacheable("a dict whose keys are not strings")
        return ["dict", [[k, spell(v)] for k, v in value.items()]]
    if type(value) is slice:
        return ["slice", *map(spell, (value.start, value.stop, value.step))]
    if value is Ellipsis:
        return ["Ellipsis"]
    if isinstance(value, torch.dtype):
        return ["dtype", str(value).removeprefix("torch.")]
    if isinstance(value, torch.device):
        return ["device", str(value)]
    if isinstance(value, TORCH_NAMED):
        return ["torch", str(value).removeprefix("torch.")]
    if isinstance(value, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return ["op", str(value)]  # "aten.mm.default", read back through torch.ops
    if isinstance(value, MethodOf):
        return ["method_of", value.name]
    if type(value) in BY_STATE:
        return ["object", spell_named(type(value)), spell(vars(value))]
    if type(value) is torch.Tensor:
        return ["tensor", *tensor_layout(value), values_of(value)]
    return spell_named(value)


def tensor_layout(value: torch.Tensor) -> list:
    sizes = [*value.shape, *value.stride()]
    if not all(type(s) is int for s in sizes) or value.layout != torch.strided:
        raise NotCacheable("a tensor with symbolic sizes, or not dense")
    return [list(value.shape), list(value.stride()), spell(value.dtype), str(value.device)]


def values_of(value: torch.Tensor) -> list:
    """A tensor the code holds (made by the lowering or the trace, not the program's: the
    key holds what it is made from), by its values, which `tolist` gives exactly."""
    if value.numel() > MAX_VALUES or value.requires_grad or value.is_complex():
        raise NotCacheable(f"a tensor of {value.numel()} elements held by the code")
    return value.flatten().tolist()


def spell_named(value):
    """A module, class or function, by the name it is found under."""
    if type(value).__name__ == "module" and sys.modules.get(value.__name__) is value:
        return ["module", value.__name__]
    name, module = getattr(value, "__name__", None), getattr(value, "__module__", None)
    owner = getattr(value, "__objclass__", None)  # a method written in C: `Tensor.add`
    if owner is not None and getattr(torch.Tensor, name, None) is value:
        return ["tensor_method", name]
    qualname = getattr(value, "__qualname__", name) or ""
    for maker in MAKERS:
        if qualname.startswith(maker.__qualname__ + ".<locals>.") and value.__module__ == (
            maker.__module__
        ):
            return ["made_by", maker.__module__, maker.__qualname__]
    if module and module.split(".")[0] not in NAMED_FROM:
        raise NotCacheable(f"{module}.{qualname}, whose code the key does not hold")
    for path in (name, qualname):  # `torch.conv2d`: its qualname is the class it hides in
        if isinstance(path, str) and module and found(module, path) is value:
            return ["global", module, path]
    raise NotCacheable(f"{type(value).__name__} {name or value!r} has no stable name")


def found(module: str, path: str):
    """`module.path`, from a module this process has loaded, or None."""
    value = sys.modules.get(module)
    for part in path.split("."):
        value = getattr(value, part, None)
    return value


def read(spelled, nodes: dict | None = None):
    """The value `spell` spelled (a node from `nodes`, by name). A name that is not found
    raises `NotCacheable`: the file is not used."""
    if not isinstance(spelled, list):
        return spelled
    kind, *rest = spelled
    if kind in READERS:
        return READERS[kind](rest, nodes)
    if kind == "node":
        return nodes[rest[0]]
    named = NAMED_READERS[kind](*rest)
    if named is None:
        raise NotCacheable(f"{spelled} is not found in this process")
    return named


def ops_named(text: str):
    namespace, *path = text.split(".")
    return found("torch", ".".join(["ops", namespace, *path]))


def with_state(rest, nodes):
    kind, state = read(rest[0]), read(rest[1])
    if kind not in BY_STATE:
        raise NotCacheable(f"{kind} is not spelled by its state")
    value = kind.__new__(kind)
    vars(value).update(state)
    return value


def tensor_of(rest, nodes):
    shape, stride, dtype, device, values = rest
    made = torch.empty_strided(shape, stride, dtype=read(dtype), device=device)
    return made.copy_(torch.tensor(values, dtype=made.dtype).reshape(shape))


def made_by(module: str, path: str):
    maker = found(module, path)
    if maker not in MAKERS:
        raise NotCacheable(f"{module}.{path} is no maker of closures")
    return maker()


READERS = {
    "tuple": lambda rest, nodes: tuple(read(v, nodes) for v in rest),
    "list": lambda rest, nodes: [read(v, nodes) for v in rest],
    "size": lambda rest, nodes: torch.Size(rest),
    "dict": lambda rest, nodes: {k: read(v, nodes) for k, v in rest[0]},
    "slice": lambda rest, nodes: slice(*(read(v, nodes) for v in rest)),
    "Ellipsis": lambda rest, nodes: Ellipsis,
    "object": with_state,
    "tensor": tensor_of,
}
NAMED_READERS = {
    "dtype": lambda name: getattr(torch, name, None),
    "device": torch.device,
    "torch": lambda name: getattr(torch, name, None),
    "op": ops_named,
    "method_of": MethodOf,
    "module": sys.modules.get,
    "tensor_method": lambda name: getattr(torch.Tensor, name, None),
    "global": found,
    "made_by": made_by,
}


# ----------------------------------------------------------------------------- graphs


def graph_text(gm: torch.fx.GraphModule, constants: str | None = None) -> list:
    """Every node of `gm`: its op, name, target, arguments, and the metadata the lowering
    reads (`saved_for_backward`, training/aten.py), and a traced value's layout (`val`: a
    training graph run in torch takes its inputs so, training/in_torch.py).

    A tensor the graph holds (`get_attr`) is spelled as `constants` says: None, not at all
    (`NotCacheable`); "layout", by its layout (the code reads its values when it runs);
    "values", by its values too (a constant the trace made: the graph's own). A module
    the graph calls is never spelled: it is this process's, not the graph's."""
    if type(gm.graph._codegen) is not torch.fx.graph.CodeGen:
        raise NotCacheable("a graph with its own codegen (a pytree's inputs)")
    nodes = []
    for node in gm.graph.nodes:
        if node.op == "call_module" or (node.op == "get_attr" and constants is None):
            raise NotCacheable(f"the graph's {node.op} {node.target}")
        target = spell(node.target) if node.op == "call_function" else node.target
        meta = {}
        if "saved_for_backward" in node.meta:
            meta["saved_for_backward"] = node.meta["saved_for_backward"]
        if isinstance(node.meta.get("val"), torch.Tensor):  # (a fake tensor's device: not)
            meta["val"] = tensor_layout(node.meta["val"])[:3]
        if node.op == "get_attr":
            value = attribute(gm, node.target)
            if type(value) is not torch.Tensor:
                raise NotCacheable(f"the graph's get_attr {node.target}: not a tensor")
            meta["constant"] = tensor_layout(value)
            if constants == "values" and "." not in node.target:
                meta["constant"].append(values_of(value))
            elif constants == "values":
                raise NotCacheable(f"the graph's get_attr {node.target}: a submodule's")
        nodes.append([node.op, node.name, target, spell(node.args), spell(node.kwargs), meta])
    return nodes


def attribute(gm: torch.fx.GraphModule, target: str):
    for name in target.split("."):
        gm = getattr(gm, name)
    return gm


def constants_of(gm: torch.fx.GraphModule) -> list:
    """The tensors the graph holds, in the order of its `get_attr` nodes (the lowering's
    `const0`, `const1`, ...: graph_lowering.py)."""
    return [attribute(gm, n.target) for n in gm.graph.find_nodes(op="get_attr", sort=True)]


def graph_of(text: list) -> torch.fx.GraphModule:
    """The graph `graph_text` spelled with constants by "values", with the same node names
    (so the same text)."""
    graph, nodes, root = torch.fx.Graph(), {}, torch.nn.Module()
    for op, name, target, args, kwargs, meta in text:
        meta = dict(meta)  # the text stays as it is
        target = read(target) if op == "call_function" else target
        node = graph.create_node(op, target, read(args, nodes), read(kwargs, nodes), name)
        if "val" in meta:  # a stand-in on the meta device, of the traced layout
            shape, stride, dtype = meta.pop("val")
            meta["val"] = torch.empty_strided(shape, stride, dtype=read(dtype), device="meta")
        if "constant" in meta:
            setattr(root, target, tensor_of(meta.pop("constant"), None))
        node.meta.update(meta)
        nodes[name] = node
    return torch.fx.GraphModule(root, graph)


# ----------------------------------------------------------------------------- inputs


def inputs_text(args) -> list:
    """What a graph's code and trace depend on of each input: a tensor's class, sizes,
    strides, offset, dtype, device, requires_grad, whether autograd made it, and which
    earlier input shares its memory (their addresses are left out); a number's type and
    value (the code is specialised to it)."""
    storages, spelled = {}, []
    for i, arg in enumerate(args):
        if type(arg) in (torch.Tensor, torch.nn.Parameter):
            if arg.layout != torch.strided or arg.is_quantized or arg.is_meta:
                raise NotCacheable("an input that is not a dense tensor")
            shares = storages.setdefault(arg.untyped_storage()._cdata, i)
            spelled.append([
                type(arg).__name__, list(arg.shape), list(arg.stride()), arg.storage_offset(),
                spell(arg.dtype), str(arg.device), arg.requires_grad, arg.grad_fn is None, shares,
            ])  # fmt: skip
        elif type(arg) in (bool, int, float) or arg is None:
            spelled.append([type(arg).__name__, repr(arg)])
        else:  # a FakeTensor or SymInt: symbolic code, whose lowering adds guards
            raise NotCacheable(f"an input of type {type(arg).__name__}")
    return spelled
