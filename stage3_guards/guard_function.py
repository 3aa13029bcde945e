"""All the guards of a cache entry, compiled into one generated Python function.

The cache calls this function on every call of the compiled frame, so it is
the hot path: one `and` chain over the checks of every guard, with the
readable form of each guard as a comment above its checks:

    def guards_f(L, G, F):
        return (
            # local 'x' TENSOR_MATCH: float32, cpu, size=(8,), stride=(1,)
            type(L['x']) is torch.Tensor
            and L['x'].dtype is torch.float32
            ...
        )

Early TorchDynamo did exactly this (a generated lambda); torch 2.x builds a
tree of C++ guard objects instead, which is faster but not something one can
print and read. When the function says False, `failure_reason` re-checks the
guards one by one to say which assumption broke, and how.
"""

import builtins
from dataclasses import dataclass

from .codegen import compile_function, identifier
from .guards import Guard


@dataclass(eq=False)
class GuardFunction:
    """`check(L, G, F) -> bool`, with the guards and the source it was generated from."""

    guards: list[Guard]
    source: str
    check: object  # the generated function

    def __str__(self):
        return self.source


def compile_guards(guards: list[Guard], name: str) -> GuardFunction:
    """Generate, compile and return the guard function of one cache entry."""
    function_name = f"guards_{identifier(name)}"
    lines = [f"def {function_name}(L, G, F):", "    return ("]
    first = True
    for guard in guards:
        lines.append(f"        # {' '.join(str(guard).split())}")  # one line, whatever reprs say
        for code in guard.code:
            lines.append(f"        {'' if first else 'and '}{code}")
            first = False
    if first:
        lines[-1] = "    return True  # the trace relied on nothing"
    else:
        lines.append("    )")
    source = "\n".join(lines) + "\n"
    namespace = {"B": builtins}  # sources of builtins read `B.range`
    for guard in guards:
        namespace.update(guard.names)
    return GuardFunction(guards, source, compile_function(source, function_name, namespace))


def failure_reason(guards: list[Guard], L: dict, G: dict, F) -> str | None:
    """The first guard that fails on these values, in words; None if they all pass."""
    for guard in guards:
        reason = guard.failure(L, G, F)
        if reason is not None:
            return reason
    return None
