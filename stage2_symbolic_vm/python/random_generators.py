"""`random.Random(seed)` made in the traced function: a generator the VM runs while tracing.

A generator made inside the function from a constant seed draws the same numbers at every
call: `random.Random(0).random()` is one number, whoever calls. So the VM makes a real
generator from that seed, runs each method on it now, in the program's order, and the
numbers are constants of the trace (torch's Dynamo models `random.Random` by running it
too). What a fixed seed does not decide is a break with its reason: a generator seeded
from the system (`random.Random()`), one from outside the function (its state moves between
calls), a method given values that are not constants, and a generator that leaves the
function (returned or stored: the new code cannot hand the program this generator back).
"""

import random

from ..errors import Unsupported
from ..variables import BoundMethodVariable, Variable, constant_args
from .constants import all_constants

# The methods that draw numbers, or read and set the state, from constants alone. `shuffle`
# is not among them: it changes a list in place, which this module does not model.
METHODS = frozenset(
    {
        "random", "uniform", "triangular", "randint", "randrange", "getrandbits", "randbytes",
        "choice", "choices", "sample", "gauss", "normalvariate", "lognormvariate",
        "expovariate", "vonmisesvariate", "gammavariate", "betavariate", "paretovariate",
        "weibullvariate", "binomialvariate", "seed", "getstate", "setstate",
    }
)  # fmt: skip


class RandomVariable(Variable):
    """A `random.Random` made in the trace from a constant seed, with its real generator."""

    def __init__(self, generator: random.Random):
        self.generator = generator

    def python_type(self):
        return random.Random

    def get_attr(self, tx, name):
        if name in METHODS and hasattr(self.generator, name):
            return BoundMethodVariable(self, name)
        raise Unsupported("unsupported_value", f"random.Random's {name!r} is not modeled")

    def call_method(self, tx, name, args, kwargs):
        if name not in METHODS or not hasattr(self.generator, name):
            raise Unsupported("unsupported_value", f"random.Random.{name} is not modeled")
        if not all_constants(args, kwargs):
            raise Unsupported(
                "unsupported_value", f"random.Random.{name} of values that are not constants"
            )
        args, kwargs = constant_args(args, kwargs)
        method = getattr(self.generator, name)
        return tx.wrap_constant_result(tx.run_python(method, *args, **kwargs), name)

    def __repr__(self):
        return "RandomVariable()"


def new_generator(tx, args, kwargs) -> RandomVariable:
    """`random.Random(seed)` in the trace: a real generator, seeded now."""
    if not args and not kwargs:
        raise Unsupported(
            "untraceable_call",
            "random.Random() seeds itself from the system: its numbers change at every call",
        )
    if not all_constants(args, kwargs):
        raise Unsupported("untraceable_call", "random.Random seeded with a value not a constant")
    args, kwargs = constant_args(args, kwargs)
    return RandomVariable(tx.run_python(random.Random, *args, **kwargs))
