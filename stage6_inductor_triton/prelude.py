"""The helpers every generated module starts with (inductor's triton_helpers.py).

Where Triton's own semantics differ from torch's, a small `@triton.jit` helper says
what torch does: NaN wins in `maximum` and in `argmax`, `remainder` takes the sign of
the divisor. They are part of each generated module, not imported from here, so that
the module decorates them itself and they run the way the module runs (compiled, or
under the interpreter: runtime.py explains why that matters).
"""

PRELUDE = """import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def maximum(a, b):
    # torch.maximum and amax propagate NaN; tl.maximum does not.
    return tl.where((a > b) | (a != a), a, b)


@triton.jit
def minimum(a, b):
    return tl.where((a < b) | (a != a), a, b)


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
def remainder(a, b):
    # torch.remainder is Python's %: the result has the sign of the divisor, unlike fmod.
    mod = libdevice.fmod(a, b)
    return tl.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod)
"""
