"""The helpers every generated module starts with (inductor's triton_helpers.py).

Where Triton's own semantics differ from torch's, a small `@triton.jit` helper says what
torch does: NaN wins in `maximum` and in `argmax`, `remainder` takes the sign of the
divisor, a float32 rounds to bfloat16 to the nearest even value. They are part of each
generated module, not imported from here, so that the module decorates them itself and
they run the way the module runs (compiled, or under the interpreter: runtime.py
explains why that matters).
"""

PRELUDE_TEMPLATE = """import triton
import triton.language as tl
from triton.language.extra import libdevice


{extremes}

@triton.jit
def add(a, b):
    return a + b


@triton.jit
def multiply(a, b):
    return a * b


@triton.jit
def argmax_combine(a, a_index, b, b_index):
    # torch.argmax: the first NaN wins, else the first of the largest values.
    tie = (a == b) | ((a != a) & (b != b))
    pick_a = (a > b) | ((a != a) & (b == b)) | (tie & (a_index < b_index))
    return tl.where(pick_a, a, b), tl.where(pick_a, a_index, b_index)


@triton.jit
def argmin_combine(a, a_index, b, b_index):
    tie = (a == b) | ((a != a) & (b != b))
    pick_a = (a < b) | ((a != a) & (b == b)) | (tie & (a_index < b_index))
    return tl.where(pick_a, a, b), tl.where(pick_a, a_index, b_index)


@triton.jit
def to_bfloat16(x):
    # float32 -> bfloat16 rounded to nearest even, NaN to 0x7FC0, as torch's c10::BFloat16.
    # (The GPU's own conversion rounds so too; the interpreter's truncates.)
    bits = x.to(tl.uint32, bitcast=True)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    rounded = tl.where(x != x, 0x7FC0, rounded)
    return rounded.to(tl.uint16).to(tl.bfloat16, bitcast=True)


@triton.jit
def from_bfloat16(x):
    # bfloat16 -> float32: the upper half of its bits (the interpreter loses denormals).
    return (x.to(tl.uint16, bitcast=True).to(tl.uint32) << 16).to(tl.float32, bitcast=True)


@triton.jit
def remainder(a, b):
    # torch.remainder is Python's %: the result has the sign of the divisor, unlike fmod.
    mod = libdevice.fmod(a, b)
    return tl.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod)
"""


# torch.maximum and amax propagate NaN; tl.maximum does not. Two equal values differ only
# when they are zeros of two signs. Reductions (amax) keep the first, as torch's CPU does;
# torch.maximum on CUDA is fmaxf past NaN, so there +0.0 wins a maximum and -0.0 a
# minimum, in either order, where the CPU returns the first (maximum(-0.0, 0.0) is -0.0).
EXTREMES = """@triton.jit
def maximum(a, b):
    return tl.where((a >= b) | (a != a), a, b)


@triton.jit
def minimum(a, b):
    return tl.where((a <= b) | (a != a), a, b)
"""
ELEMENTWISE = {
    "cpu": """@triton.jit
def elementwise_maximum(a, b):
    return maximum(a, b)


@triton.jit
def elementwise_minimum(a, b):
    return minimum(a, b)
""",
    "cuda": """@triton.jit
def elementwise_maximum(a, b):
    larger = maximum(a, b)
    if a.dtype.is_floating():  # of two zeros, -0.0 + 0.0 is 0.0
        larger = tl.where((a == b) & (a == 0), a + b, larger)
    return larger


@triton.jit
def elementwise_minimum(a, b):
    smaller = minimum(a, b)
    if a.dtype.is_floating():  # of two zeros, -(-0.0 + 0.0) is -0.0 (Triton's `-x` is
        # `0 - x`, which makes -0.0 of 0.0 and 0.0 of -0.0 alike: a product flips the sign)
        smaller = tl.where((a == b) & (a == 0), (a * -1.0 + b * -1.0) * -1.0, smaller)
    return smaller
""",
}


def prelude_for(device_type: str) -> str:
    """The helpers for kernels whose tensors are on `device_type`'s device: "cuda", or
    "cpu" under the interpreter."""
    elementwise = ELEMENTWISE["cuda" if device_type == "cuda" else "cpu"]
    return PRELUDE_TEMPLATE.format(extremes=f"{EXTREMES}\n\n{elementwise}")
