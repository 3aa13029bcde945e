"""`MINIDYNAMO_LOGS=frames,bytecode,guards,graph,breaks,kernels`: every layer explains itself.

Each topic is an ordinary `logging` logger named `minidynamo.<topic>`. Setting
the environment variable (or calling `enable(...)`) attaches a handler that
prints to stderr; without it the loggers are silent and cost one level check.
torch has the same idea behind `TORCH_LOGS=graph_code,guards,...`.
"""

import logging
import os
import sys

TOPICS = ("frames", "trace", "bytecode", "guards", "recompiles", "graph", "breaks", "kernels")

_handler = logging.StreamHandler(sys.stderr)
_handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))


def get_logger(topic: str) -> logging.Logger:
    """The logger of one topic; it prints only when the topic is enabled."""
    if topic not in TOPICS:
        raise ValueError(f"unknown log topic {topic!r}; the topics are {', '.join(TOPICS)}")
    return logging.getLogger(f"minidynamo.{topic}")


def enable(*topics: str) -> None:
    """Print the given topics (`"all"` for every one) to stderr."""
    names = TOPICS if "all" in topics else topics
    for topic in names:
        logger = get_logger(topic)
        logger.setLevel(logging.INFO)
        if _handler not in logger.handlers:
            logger.addHandler(_handler)
        logger.propagate = False


def _enable_from_environment() -> None:
    requested = [t.strip() for t in os.environ.get("MINIDYNAMO_LOGS", "").split(",") if t.strip()]
    unknown = [t for t in requested if t != "all" and t not in TOPICS]
    if unknown:
        print(
            f"minidynamo: ignoring unknown MINIDYNAMO_LOGS topics {unknown}; "
            f"the topics are {', '.join(TOPICS)}",
            file=sys.stderr,
        )
    enable(*[t for t in requested if t not in unknown])


_enable_from_environment()
