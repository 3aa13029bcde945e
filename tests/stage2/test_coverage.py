"""Every opcode CPython emits for the random test programs has a handler, on this Python."""

from hypothesis import given, settings

from stage2_symbolic_vm import handled_opnames
from stage2_symbolic_vm.tools.coverage import reachable_opnames, report

from .opcode_examples import EXAMPLES
from .programs import programs

EMITTED = set()


@settings(max_examples=100)
@given(programs())
def test_random_programs_use_only_handled_opcodes(program):
    fn = program.function()
    helpers = [fn.__globals__[name] for name in ("helper", "helper2", "make_scale")]
    used = set().union(*(reachable_opnames(f.__code__) for f in [fn, *helpers]))
    EMITTED.update(used)
    assert used <= handled_opnames(), f"no handler for {sorted(used - handled_opnames())}"


def test_report_lists_handled_and_missing_opcodes():
    text = report()
    assert "LOAD_FAST" in text.split("not handled")[0]
    assert "MATCH_SEQUENCE" in text.split("not handled")[1]


def test_every_example_opcode_is_reported_as_handled_or_stops():
    for fn, _, expected_kind in EXAMPLES:
        code = getattr(fn, "__func__", fn).__code__
        unhandled = reachable_opnames(code) - handled_opnames()
        assert not unhandled or expected_kind is not None, (fn, unhandled)
