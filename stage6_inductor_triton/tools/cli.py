"""`minidynamo`: the compiler on one screen — a tour of the six stages, or a report on a script.

    minidynamo tour                         # a built-in function through stages 1 to 6
    minidynamo explain script.py[:function] # compile one of your functions, print everything

`tour` (tour.py) calls each stage's public API on one small function with a graph
break and prints the real objects each stage makes. `explain` compiles a function of
a script with `stage6_inductor_triton.compile` (backend "inductor") and prints,
under headers, what `MINIDYNAMO_LOGS=all` would print while it runs: torch has
the same report behind `TORCH_LOGS=+dynamo,graph_code,output_code`.
"""

import argparse
import importlib.machinery
import importlib.util
import inspect
import logging
import os
import sys
import traceback
from collections import defaultdict
from contextlib import contextmanager

import stage4_fx
from stage1_eval_frame.logs import TOPICS, get_logger

from ..frontend import compile as inductor_compile
from .tour import describe, header, tour

# --- minidynamo explain ------------------------------------------------------------------

SECTIONS = {  # log topic -> the header of its part of the report
    "frames": "Frames compiled",
    "trace": "Where the symbolic VM stopped",
    "bytecode": "Bytecode: original, modified, and resume functions",
    "guards": "Guards",
    "recompiles": "Recompilations",
    "graph": "FX graphs",
    "breaks": "Graph breaks: where and why",
    "kernels": "Kernels: loop IR, fusion decisions, generated code",
}
assert set(SECTIONS) == set(TOPICS), "a new log topic needs a section of the report"


class UsageError(Exception):
    """A mistake in the command line: one line on stderr, exit code 2."""


class ScriptError(Exception):
    """The user's script raised: the report is its traceback, from its own frames on."""

    def __init__(self, path: str, error: BaseException):
        super().__init__(str(error))
        self.path, self.error = path, error


class CollectedLogs(logging.Handler):
    """Keeps every message of the minidynamo loggers, by topic, in the order they came."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.messages = defaultdict(list)

    def emit(self, record):
        self.messages[record.name.removeprefix("minidynamo.")].append(record.getMessage())


@contextmanager
def collected_logs():
    """Every topic on, into a `CollectedLogs` (as MINIDYNAMO_LOGS=all, without the printing)."""
    handler, loggers = CollectedLogs(), [get_logger(topic) for topic in TOPICS]
    saved = [(logger.level, logger.propagate) for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    try:
        yield handler
    finally:
        for logger, (level, propagate) in zip(loggers, saved, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate


def load_script(path: str):
    """Import the script as a module named after its file (not `__main__`: its
    `if __name__ == "__main__":` block does not run), with its folder on sys.path.
    It is in sys.modules while it runs (dataclasses look themselves up there), and
    whatever had its name there before comes back after."""
    name = os.path.splitext(os.path.basename(path))[0]
    # Any file name: `spec_from_file_location` gives no loader for a file not named `.py`, and
    # a file that is not Python then fails as a SyntaxError, which the user is shown.
    loader = importlib.machinery.SourceFileLoader(name, path)
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    previous = sys.modules.get(name)
    sys.modules[name] = module
    sys.path.insert(0, os.path.dirname(path))
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        raise ScriptError(path, error) from None
    finally:
        sys.path.remove(os.path.dirname(path))
        sys.modules.pop(name)
        if previous is not None:
            sys.modules[name] = previous
    return module


def find_function(module, script: str, name: str):
    fn = getattr(module, name, None)
    if not inspect.isfunction(fn):
        defined = [v for v in vars(module).values() if inspect.isfunction(v)]
        listed = ", ".join(f.__name__ for f in defined if f.__module__ == module.__name__)
        raise UsageError(f"{script} has no function {name!r}; its functions: {listed or 'none'}")
    try:
        inspect.signature(fn).bind()
    except TypeError as error:
        raise UsageError(
            f"{name}() cannot be called with no arguments ({error}): minidynamo calls it with "
            "none; write a function that builds its own inputs and calls yours"
        ) from None
    return fn


def explain(target: str) -> int:
    script, colon, name = target.rpartition(":")
    script, name = (script, name or "main") if colon else (target, "main")
    path = os.path.abspath(script)
    if not os.path.isfile(path):
        raise UsageError(f"no such file: {script}")
    fn = find_function(load_script(path), script, name)
    compiled = inductor_compile(fn)
    with collected_logs() as logs:
        try:
            result = compiled()
        except Exception as error:
            raise ScriptError(path, error) from None
    frames, breaks = compiled.options.frames, compiled.options.breaks
    print(f"minidynamo explain {target}")
    header("Summary")
    print(f"{name}() compiled with stage6_inductor_triton.compile (backend 'inductor':")
    print("C++ kernels for CPU tensors, Triton for CUDA tensors), then called once.")
    print(f"  frames compiled: {len(frames)} ({', '.join(f.original.co_name for f in frames)})")
    print(f"  graphs: {sum(f.graph is not None for f in frames)}, graph breaks: {len(breaks)}")
    print(f"  it returned: {describe(result)}")
    for topic, title in SECTIONS.items():
        if not logs.messages[topic] and topic != "breaks":  # "no breaks" is news; the rest is not
            continue
        header(title)
        print("\n\n".join(logs.messages[topic]) or "(none: each function is one whole graph)")
        if topic == "graph":
            for frame in frames:
                if frame.graph is not None:
                    qualname = frame.original.co_qualname
                    print(f"\nFX graph of {qualname}, as Python:{frame.graph.gm.code}")
    return 0


def print_script_traceback(error: ScriptError):
    """The script's traceback from its first frame on: our frames (and importlib's) are not
    the user's business. A SyntaxError has no frame of the script: it prints alone. When
    the backend failed the bug is ours, and all of the traceback is worth reporting."""
    tb = error.error.__traceback__
    ours = isinstance(error.error, stage4_fx.BackendCompilerFailed)
    while not ours and tb is not None and tb.tb_frame.f_code.co_filename != error.path:
        tb = tb.tb_next
    traceback.print_exception(type(error.error), error.error, tb, file=sys.stderr)
    script = os.path.basename(error.path)
    if ours:
        print(f"minidynamo: error: compiling {script} failed: a bug of minidynamo", file=sys.stderr)
    else:
        print(f"minidynamo: error: {script} raised {type(error.error).__name__}", file=sys.stderr)


# --- the command line --------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="minidynamo",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  minidynamo tour\n  minidynamo explain examples/toy.py\n"
        "  minidynamo explain my_script.py:run_model\n"
        "The report's parts are the MINIDYNAMO_LOGS topics; see docs/minidynamo_command.md.",
        description="minidynamo: a small TorchDynamo + TorchInductor in six stages.\n"
        "`tour` shows what each stage makes of a built-in example; `explain` shows\n"
        "what the compiler does to a function of your own script.",
    )
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser(
        "tour",
        help="run a built-in example through all six stages and print what each produces",
        description="Run toy_example (a function with one branch on a tensor's value) through "
        "the six stages: frames, trace, guards, FX graphs and the graph break, C++ kernels, "
        "Triton kernels (on a GPU if there is one, interpreted otherwise), and rough timings.",
    )
    run = commands.add_parser(
        "explain",
        help="compile a function of your script and print the full report",
        description="Import SCRIPT as a module (so its `if __name__ == '__main__':` block does "
        "not run), compile FUNCTION (default: main) with stage6_inductor_triton.compile, call "
        "it once with NO arguments, and print its bytecode before and after, guards, FX graphs, "
        "graph breaks and kernels. FUNCTION must take no arguments: let it build its own "
        "inputs and call the code you want to see compiled.",
    )
    run.add_argument(
        "target", metavar="SCRIPT[:FUNCTION]", help="e.g. examples/toy.py or examples/toy.py:main"
    )
    return top


def main(argv=None) -> int:
    """The console script; returns the exit code: 0 ok, 1 the script raised, 2 a usage error."""
    args = parser().parse_args(argv)
    try:
        return tour() if args.command == "tour" else explain(args.target)
    except UsageError as error:
        print(f"minidynamo: error: {error}", file=sys.stderr)
        return 2
    except ScriptError as error:
        print_script_traceback(error)
        return 1


if __name__ == "__main__":
    sys.exit(main())
