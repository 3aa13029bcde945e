"""Index math: the IR's affine indices, written over a kernel's flat `xindex` and `rindex`.

A Triton kernel numbers its outer iterations with one flat `xindex` (and a row's
elements with one flat `rindex`); the IR names one variable per dimension
(`x0, x1, r0`). `index_text` rewrites the IR's `sum(coef * var) + offset` over the
flat indices, merging the dimensions that walk memory contiguously.
"""

import math

from stage5_inductor_cpp.ir import Index
from stage5_inductor_cpp.symbolic.sizes import operand, text


def index_text(index: Index, xsizes, rsizes) -> tuple[str, frozenset]:
    """`index` written over the flat `xindex`/`rindex`, and the block axes it uses.

    `x0, x1` of sizes `(8192, 64)` are `xindex // 64` and `xindex % 64`; when their
    coefficients say they walk memory contiguously (`64*x0 + x1`), the group is just
    `xindex`. Triton can only prove a contiguous access (and use vector loads) from the
    plain `xindex`, so merging is worth more than tidiness (inductor simplifies with sympy).
    """
    parts, dims = [], set()
    for prefix, sizes in (("r", rsizes), ("x", xsizes)):
        real = [d for d in range(len(sizes)) if sizes[d] != 1]  # size-1 dims: always index 0
        coef = {d: index.coefficient(f"{prefix}{d}") for d in real}
        i = len(real) - 1
        while i >= 0:
            last = real[i]
            if coef[last] == 0:
                i -= 1
                continue
            while i > 0 and coef[real[i - 1]] == coef[real[i]] * sizes[real[i]]:
                i -= 1
            first = real[i]
            term, inner = f"{prefix}index", math.prod(sizes[last + 1 :])
            if inner != 1:
                term = f"({term} // {operand(inner)})"
            if math.prod(sizes[:first]) != 1:  # dims further out exist: wrap around
                term = f"({term} % {operand(math.prod(sizes[first : last + 1]))})"
            parts.append(term if coef[last] == 1 else f"{operand(coef[last])}*{term}")
            dims.add(prefix)
            i -= 1
    for name, coef in index.terms:  # index variables made of loaded values (`gather`)
        if not name.startswith(("x", "r")):
            parts.append(name if coef == 1 else f"{operand(coef)}*{name}")
            dims |= name.dims
    if index.offset != 0 or not parts:
        parts.append(text(index.offset))
    return " + ".join(parts).replace("+ -", "- "), frozenset(dims)
