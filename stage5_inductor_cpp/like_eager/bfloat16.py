"""bfloat16 in C++: its bits in memory, a float that holds its value in registers.

g++ 12's `__bf16` has no arithmetic, and a struct with conversion operators (how this
stage first spelled the type) keeps OpenMP's `simd` loops scalar: GCC does not vectorise a
loop whose temporaries are structs, and a kernel of bfloat16 values ran ten times slower
than eager's. So a buffer of bfloat16 is a `uint16_t*`, read and written by the prelude's
`bfloat16_to_float` and `float_to_bfloat16`, and a value of the dtype lives in a `float`,
rounded where it is declared (`round_to_bfloat16`), as eager rounds each op's result to
bfloat16 when it stores it. The rounding is c10's (c10/util/BFloat16.h): to nearest even,
NaN made 0x7FC0.
"""

import torch

# dtype -> (its C++ type in memory, how a load reads it, how a store writes it, how a
# register of the dtype is declared)
FORMATS = {
    torch.bfloat16: (
        "uint16_t", "bfloat16_to_float({})", "float_to_bfloat16({})", "round_to_bfloat16({})",
    ),
}  # fmt: skip


def memory_type(dtype: torch.dtype, register_type: str) -> str:
    return FORMATS[dtype][0] if dtype in FORMATS else register_type


def loaded(dtype: torch.dtype, place: str) -> str:
    return FORMATS[dtype][1].format(place) if dtype in FORMATS else place


def stored(dtype: torch.dtype, value) -> str:
    return FORMATS[dtype][2].format(value) if dtype in FORMATS else str(value)


def declared(dtype: torch.dtype, expr: str) -> str:
    """A value of the dtype: rounded to it, unless it is a load or a rounding already. A cast
    is rounded in its own text too (`CppOverrides.to_dtype`): the writer shares temporaries
    by their text, and `x.to(bfloat16)` must not read as `x.to(float32)`."""
    if dtype not in FORMATS or expr.startswith(EXACT[dtype]):
        return expr
    return FORMATS[dtype][3].format(expr)


# The calls whose results are a dtype's values already: its loads and its roundings.
EXACT = {
    dtype: tuple(f.split("{")[0] for f in (load, rounded))
    for dtype, (_, load, _, rounded) in FORMATS.items()
}
