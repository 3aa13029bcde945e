"""One test per opcode handler: every opcode the VM handles is exercised by an example below.

`test_handler[OPNAME]` finds the examples whose bytecode (on this Python
version) reaches OPNAME and checks that each traces and replays like eager,
or stops with the expected kind. A handler with no example fails its test,
so adding a handler means adding an example here.
"""

import types

import pytest

from stage2_symbolic_vm import Unsupported, handled_opnames, replay, trace
from stage2_symbolic_vm.tools.coverage import reachable_opnames
from tests.oracle import assert_same_as_eager

from .opcode_examples import EXAMPLES, X


def code_of(fn):
    return (fn.__func__ if isinstance(fn, types.MethodType) else fn).__code__


def check(fn, args, expected_kind):
    if expected_kind is None:
        recorded = trace(fn, *args)
        assert_same_as_eager(
            lambda *a: replay(recorded, fn, *a), fn, *args, captured=lambda: recorded.nodes
        )
    else:
        with pytest.raises(Unsupported) as stop:
            trace(fn, *args)
        assert stop.value.kind == expected_kind, stop.value


@pytest.mark.parametrize("opname", sorted(handled_opnames()))
def test_handler(opname):
    examples = [e for e in EXAMPLES if opname in reachable_opnames(code_of(e[0]))]
    assert examples, f"no example exercises {opname}: add one to EXAMPLES"
    for fn, args, expected_kind in examples:
        check(fn, args, expected_kind)


def test_an_unhandled_opcode_stops_with_its_name():
    def uses_match(x):
        match [1, 2]:
            case [a, _]:
                return x + a

    with pytest.raises(Unsupported) as stop:
        trace(uses_match, X)
    assert stop.value.kind == "unsupported_opcode" and stop.value.opname == "MATCH_SEQUENCE"
    assert "MATCH_SEQUENCE" in stop.value.reason
