"""A bug of ours in a lowering: an error in strict mode, else a warning and torch's answer.

A lowering that raises where torch does not, or an answer that disagrees with eager's, is
a bug of minidynamo, never the user's. In strict mode (stage 3's `config.strict`, on in
the test suite) it raises `LoweringError`; otherwise it is logged as a bug and torch
computes instead: the node (`lowering_bug`) or the whole graph (`internal_error`).
"""

from stage1_eval_frame.logs import get_logger
from stage3_guards import config

from ..lowering import EagerOnly

log = get_logger("kernels")


class LoweringError(Exception):
    """A bug of ours: a lowering disagrees with torch on a graph that torch accepts."""


def lowering_bug(node, target: str, error: Exception):
    """`node`'s lowering raised `error` where torch does not (its extern was made without
    error): strict mode raises it; else the node calls torch, with a warning."""
    if config.strict:
        message = f"lowering {node.name} ({target}) raised {error!r}, torch did not"
        raise LoweringError(message) from error
    log.warning(
        "lowering %s (%s) raised %r, torch did not: a bug of minidynamo; calling torch",
        node.name,
        target,
        error,
    )


def internal_error(message: str):
    """A bug of ours: strict mode raises it; else the graph runs in torch, with a warning."""
    if config.strict:
        raise LoweringError(message)
    log.warning("a bug of minidynamo: %s; the graph runs in torch", message)
    raise EagerOnly(message)
