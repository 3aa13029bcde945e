"""Guards for sizes that are symbols (dynamic shapes): one cache entry for many sizes.

When stage 2 traced with symbolic sizes (a size seen to change, `mark_dynamic`,
`dynamic=True`), a tensor's TENSOR_MATCH cannot compare whole size tuples.
`symbolic_tensor_match` checks its static sizes and strides one by one, and
`shape_env_guard` adds one SHAPE_ENV guard: the relations between sizes that the
trace relied on (`L['x'].size()[0] >= 2`), as torch's ShapeEnv produces them.
`build_guards` (guards.py) calls both for a trace with symbols.
"""

import ast
import math
import re
import weakref

import torch

from stage2_symbolic_vm.sources import Source

from ..generated import parse
from ..guards import Check, Guard, Names, _dtype, _type_check


def symbolic_tensor_match(source: Source, value, names: Names, fake, env) -> Guard:
    """TENSOR_MATCH for a tensor with symbolic sizes: the static sizes and strides one by
    one (torch's check_tensor takes None for the others), the rest in the SHAPE_ENV guard."""
    expr = source.name()
    sizes = [_static_value(s, env) for s in fake.size()]
    strides = [_static_value(s, env) for s in fake.stride()]
    dtype, device, grad = value.dtype, value.device, value.requires_grad
    checks = [
        _type_check(expr, type(value), names),
        Check(f"{expr}.dtype is {names(dtype)}", "dtype", dtype, f"{expr}.dtype", _dtype),
        Check(f"{expr}.device == {names(device, str(device))}", "device", device, f"{expr}.device"),
        Check(f"{expr}.dim() == {len(sizes)}", "number of dims", len(sizes), f"{expr}.dim()"),
    ]
    for i, size in enumerate(sizes):
        if size is not None:
            actual = f"{expr}.size()[{i}]"
            checks.append(Check(f"{actual} == {size}", f"size of dim {i}", size, actual))
    for i, stride in enumerate(strides):
        if stride is not None:
            actual = f"{expr}.stride()[{i}]"
            checks.append(Check(f"{actual} == {stride}", f"stride of dim {i}", stride, actual))
    checks.append(
        Check(f"{expr}.requires_grad is {grad}", "requires_grad", grad, f"{expr}.requires_grad")
    )
    shown = [_symbolic_text(s, env) for s in fake.size()]
    summary = f"{_dtype(dtype)}, {device}, size=({', '.join(shown)}), stride="
    summary += f"({', '.join(_symbolic_text(s, env) for s in fake.stride())})"
    if value.requires_grad:
        summary += ", requires_grad=True"
    example, dims = weakref.ref(value), (sizes, strides)  # the C++ check skips the Nones
    return Guard("TENSOR_MATCH", source, summary, tuple(checks), names.objects, example, dims)


def _static_value(size, env):
    """An int, or a symbol the trace specialised to one value; None for a symbolic size."""
    if isinstance(size, int):
        return size
    value = env.replace(size.node.expr)
    return int(value) if value.is_number else None


def _symbolic_text(size, env) -> str:
    return str(size if isinstance(size, int) else env.replace(size.node.expr))


def shape_env_guard(shapes) -> Guard | None:
    """The relations between sizes the trace relied on, from the ShapeEnv (torch's
    `produce_guards`), printed over our sources: `L['x'].size()[0] >= 2`,
    `L['y'].size()[0] == L['x'].size()[0]`. None when the trace has no symbols."""
    if shapes is None or not shapes.tracked:
        return None
    from torch.fx.experimental.symbolic_shapes import eval_is_non_overlapping_and_dense

    from stage2_symbolic_vm.dynamic_shapes.shapes import torch_source

    shapes.check_marked()  # every specialisation was checked where it happened; once more
    placeholders = [value for _, value in shapes.tracked]
    sources = [torch_source(source) for source, _ in shapes.tracked]
    codes = [_readable(code) for code in shapes.env.produce_guards(placeholders, sources)]
    if not codes:
        return None
    # The names torch's printer uses (torch/_dynamo/guards.py: CLOSURE_VARS)
    scope = {"math": math, "torch": torch, "inf": math.inf}
    scope["IsNonOverlappingAndDenseIndicator"] = eval_is_non_overlapping_and_dense
    checks = tuple(Check(code, "sizes", code, _read_values(code), str) for code in codes)
    return Guard("SHAPE_ENV", None, "; ".join(codes), checks, scope)


def _readable(code: str) -> str:
    """`2 <= L['x'].size()[0]` (sympy's order) as one reads it: `L['x'].size()[0] >= 2`."""
    match = re.fullmatch(r"(-?\d+) <= (.+)", code)
    if match is None or re.search(r"[<>=]=?", match.group(2)):
        return code
    return f"{match.group(2)} >= {match.group(1)}"


def _read_values(code: str) -> str:
    """An expression for what a failure shows: `"L['x'].size()[0] = " + str(...)`."""
    parts = [f"{read!r} + ' = ' + str({read})" for read in _reads(code)]
    return " + ', ' + ".join(parts) or "'false'"


def _reads(code: str) -> list[str]:
    """The sizes and ints a guard's expression reads, as source text: what a failure shows."""
    found = []

    def visit(node):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Call):
            found.append(ast.unparse(node))  # `L['x'].size()[0]`
            return
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            found.append(ast.unparse(node))  # `L['n']`
            return
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(parse(code))
    return list(dict.fromkeys(found))
