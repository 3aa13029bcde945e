"""Code for every value of the symbols: a graph with symbolic sizes compiled once.

A graph traced with dynamic shapes (stage 2's shapes.py) is compiled at once, while the
frontend builds the frame's guards: a decision the lowering takes on a symbol's value is
a guard of the ShapeEnv, and so of the frame (sizes.py). Its kernels take the symbols as
int arguments, which the wrapper reads from the call's arguments (`symbol_sources`); a
call runs the code if its tensors have the layouts it was compiled for (`fits_source`).
"""

import torch
import torch.fx

from stage1_eval_frame.logs import get_logger
from stage3_guards import config

from ..robustness.lowering_bugs import LoweringError
from .sizes import (
    SymbolicUnsupported,
    as_size,
    computed_sizes,
    free_symbols,
    is_symbolic,
    sizes_text,
    symbols_of,
)

recompile_log = get_logger("recompiles")


def compile_symbolic(compiled, gm: torch.fx.GraphModule, example_inputs):
    """`compiled`'s code for every value of the symbols (backend.py's `CompiledGraph`), and
    None; or None and why each call's sizes get their own specialisation instead, as a
    static graph's new shapes do (the reason is logged)."""
    placeholders = gm.graph.find_nodes(op="placeholder")
    args = [  # the tensors as the frontend traced them: FakeTensors with symbolic sizes
        node.meta.get("example_value", arg) if isinstance(arg, torch.Tensor) else arg
        for node, arg in zip(placeholders, example_inputs, strict=True)
    ]
    shape_env = next(a.node.shape_env for a in args if isinstance(a, torch.SymInt))
    try:
        with symbols_of(shape_env):
            computed_sizes().float_steps.read(gm)  # floats rounded twice (float_sizes.py)
            code = compiled.compile_graph(gm, args)
        if code.torch_reason:
            raise SymbolicUnsupported(code.torch_reason)
        if code.fits is None:  # every symbol was pinned to its value by a guard
            raise SymbolicUnsupported("the lowering specialised every symbol")
    except Exception as error:  # any: the per-size code is still correct
        # SymbolicUnsupported: a kernel cannot take these sizes (sizes.py); TypeError:
        # sympy cannot decide a comparison a lowering wrote for ints; the rest, a lowering
        # that reads sizes as ints. Each size then compiles as a static graph does. An
        # internal error is one still: strict mode (the tests) raises it.
        if config.strict and isinstance(error, LoweringError):
            raise
        reason = f"one specialisation per size: {type(error).__name__}: {error}"
        recompile_log.info("%s", reason)
        return None, reason
    return code, None


def symbol_sources(graph) -> dict[str, str]:
    """Where the wrapper reads each symbol: from an int argument (`_scalar0`), else from a
    size of a tensor argument (`arg1.size(0)`); then how it computes each computed size
    from them (`ps0 = (s0 - 1)//2`: computed.py)."""
    computed = computed_sizes()
    sources = {} if computed is None else computed.sources()
    found = {}
    for i, (buffer, example) in enumerate(zip(graph.inputs, graph.example_inputs, strict=True)):
        if buffer is None and is_symbolic(size := as_size(example)) and size.is_Symbol:
            found.setdefault(size.name, f"_scalar{i}")
    for buffer in filter(None, graph.inputs):
        for d, size in enumerate(buffer.layout.size):
            if is_symbolic(size) and size.is_Symbol and size.name not in sources:
                found.setdefault(size.name, f"{buffer.name}.size({d})")
    for name, definition in computed.definitions.items() if sources else ():
        if unread := free_symbols(definition) - found.keys():
            raise SymbolicUnsupported(f"no argument holds {sorted(unread)}, which {name} needs")
    return found | sources


def fits_source(graph, arguments: list[str]) -> str:
    """`fits(args)`: whether a call's tensors have the layouts the code was compiled for,
    with its symbols' values (`arguments`, the wrapper's lines that read them); only
    symbolic code needs to ask."""
    lines = ["def fits(args):", *arguments]
    checks = []
    for b in filter(None, graph.inputs):
        layout = b.layout
        strides = [st for sz, st in zip(layout.size, layout.stride, strict=True) if sz != 1]
        kept = [d for d, sz in enumerate(layout.size) if sz != 1]
        checks.append(
            f"{b.name}.dtype == {layout.dtype} and tuple({b.name}.shape) == "
            f"{sizes_text(layout.size)} and tuple({b.name}.stride()[d] for d in {kept}) == "
            f"{sizes_text(strides)}"
        )
    lines.append(f"    return {' and '.join(checks) or 'True'}")
    return "\n".join(lines) + "\n"
