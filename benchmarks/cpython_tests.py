"""CPython's own tests of its containers, iterators and exceptions, each test method compiled
with `fullgraph=True`: how many pass under ours and under torch.compile.

PyTorch runs CPython's test modules under Dynamo the same way (its test/dynamo/cpython, and
`CPythonTestCase` in torch/_dynamo/test_case.py): each test method is compiled whole with
the eager backend, unittest's own assert methods are traced (torch's config
`enable_trace_unittest`, with `enable_trace_load_build_class` for class statements),
three of them are replaced by Dynamo's polyfills, and `subTest` does nothing. Both systems
get that same harness here, on the test modules of the Python that runs this. A test
counts when it passes run plainly under the harness; it passes compiled when it raises
nothing, none of its asserts fails, and it makes no graph break. A test that takes longer
than `--limit` seconds compiled fails.

Each module runs in a process of its own, so that one that crashes the interpreter costs
only its own row.

    .venv/bin/python -m benchmarks.cpython_tests                      # every module
    .venv/bin/python -m benchmarks.cpython_tests --modules test_list,test_dict
    ... --json docs/data/cpython_tests.json                           # the book's record
    ... --reasons 20                                                  # ours' commonest failures
"""

import argparse
import collections
import contextlib
import doctest
import functools
import importlib
import json
import platform
import signal
import subprocess
import sys
import unittest
import warnings

from benchmarks import report

MODULES = (
    "test_list", "test_tuple", "test_dict", "test_set", "test_ordered_dict", "test_iter",
    "test_contextlib", "test_exceptions", "test_heapq", "test_sort", "test_deque",
    "test_bisect", "test_userlist", "test_userdict",
)  # fmt: skip


class TimeLimit(Exception):
    """A compiled test ran past `--limit` seconds."""


def on_alarm(signum, frame):
    raise TimeLimit


@contextlib.contextmanager
def no_subtests(self, *args, **kwargs):
    """`subTest` as torch's harness has it: a block that runs, and reports nothing apart."""
    yield


def harnessed(cls):
    """`cls` with torch's CPythonTestCase's assert methods (unittest's own, and the
    polyfills torch swaps in for three of them) and its `subTest`."""
    from torch._dynamo import polyfills

    return type(
        cls.__name__,
        (cls,),
        {
            "assertMultiLineEqual": polyfills.assert_multi_line_equal,
            "assertSequenceEqual": polyfills.assert_sequence_equal,
            "assertDictEqual": polyfills.assert_dict_equal,
            "subTest": no_subtests,
        },
    )


def cases(module):
    """Every test method of `module`, as (class, method name), in unittest's order (its
    doctests, which `load_tests` may add, are not test methods)."""
    found = []

    def walk(suite):
        for item in suite:
            if isinstance(item, unittest.TestSuite):
                walk(item)
            elif not isinstance(item, (doctest.DocTestCase, unittest.FunctionTestCase)):
                found.append((type(item), item._testMethodName))

    walk(unittest.defaultTestLoader.loadTestsFromModule(module))
    return found


def run_one(cls, name, compiler, limit: float) -> str | None:
    """None when the test passes (compiled by `compiler`, or plainly if it is None), else
    the first line of why not."""
    case = harnessed(cls)(name)
    if compiler is not None:
        method = getattr(case, name)
        setattr(case, name, functools.partial(compiler(method.__func__), case))
    result = unittest.TestResult()
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        case.run(result)
    except TimeLimit:
        return "ran past the time limit"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    problems = result.errors + result.failures
    if result.skipped:
        return "skipped"
    if problems:
        text = problems[0][1].strip().splitlines()
        last = [line for line in text if line and not line.startswith(" ")]
        return (last[-1] if last else text[-1])[:200]
    return None if result.testsRun else "did not run"


def compilers():
    """The two systems, each a function `fn -> compiled fn` with fullgraph, and a reset."""
    import torch
    import torch._dynamo

    import stage4_fx

    def torch_compile(fn):
        return torch.compile(fn, backend="eager", fullgraph=True)

    def ours(fn):
        return stage4_fx.compile(fn, backend="eager", fullgraph=True)

    def reset():
        torch._dynamo.reset()
        stage4_fx.reset()

    return {"torch_compile": torch_compile, "ours": ours}, reset


def run_module(name: str, limit: float, labels=("torch_compile", "ours")) -> dict:
    """One module's row: its tests, those that pass plainly, and of those, each system's
    (of `labels`). The warnings the tests provoke are silenced, and the time limit's
    alarm handler set, while it runs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        previous = signal.signal(signal.SIGALRM, on_alarm)
        try:
            return module_row(name, limit, labels)
        finally:
            signal.signal(signal.SIGALRM, previous)


def module_row(name: str, limit: float, labels) -> dict:
    import torch._dynamo

    module = importlib.import_module(f"test.{name}")
    systems, reset = compilers()
    systems = {label: systems[label] for label in labels}
    row = {"module": name, "tests": 0, "plain": 0, **dict.fromkeys(labels, 0)}
    reasons, examples = collections.Counter(), {}
    config = torch._dynamo.config.patch(
        enable_trace_unittest=True, enable_trace_load_build_class=True
    )
    for cls, method in cases(module):
        row["tests"] += 1
        if run_one(cls, method, None, limit) is not None:
            continue
        row["plain"] += 1
        for label, compiler in systems.items():
            reset()
            with config if label == "torch_compile" else contextlib.nullcontext():
                why = run_one(cls, method, compiler, limit)
            if why is None:
                row[label] += 1
            elif label == "ours":
                reasons[why] += 1
                examples.setdefault(why, f"{cls.__name__}.{method}")
    row["reasons"] = dict(reasons.most_common())
    row["examples"] = examples  # one failing test per reason, to start from
    return row


def in_a_process(name: str, limit: float, timeout: float) -> dict:
    """`run_module` in a child process: a crash or a hang costs this module's row only."""
    command = [sys.executable, "-m", "benchmarks.cpython_tests", "--child", name]
    command += ["--limit", str(limit)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"module": name, "error": f"ran past {timeout:.0f} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"module": name, "error": f"exit {done.returncode}: {tail[:200]}"}
    return json.loads(lines[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", default=",".join(MODULES))
    parser.add_argument("--limit", type=float, default=10.0, help="seconds for a compiled test")
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds a module may take")
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--reasons", type=int, default=12, help="ours' commonest failures to print")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        print(json.dumps(run_module(options.child, options.limit)))
        return 0
    rows, reasons = [], collections.Counter()
    print(f"{'module':22} {'tests':>6} {'plain':>6} {'torch.compile':>14} {'ours':>6}")
    for name in options.modules.split(","):
        row = in_a_process(name, options.limit, options.timeout)
        rows.append(row)
        if "error" in row:
            print(f"{name:22} {row['error']}")
            continue
        reasons.update(row["reasons"])
        print(
            f"{name:22} {row['tests']:6} {row['plain']:6} "
            f"{row['torch_compile']:14} {row['ours']:6}",
            flush=True,
        )
    done = [r for r in rows if "error" not in r]
    plain = sum(r["plain"] for r in done)
    totals = {label: sum(r[label] for r in done) for label in ("torch_compile", "ours")}
    shares = {label: count / max(plain, 1) for label, count in totals.items()}
    print(
        f"{'all':22} {sum(r['tests'] for r in done):6} {plain:6} "
        f"{totals['torch_compile']:8} {shares['torch_compile']:5.1%} "
        f"{totals['ours']} {shares['ours']:5.1%}"
    )
    print(f"\nours' commonest failures (of {sum(reasons.values())}):")
    for why, count in reasons.most_common(options.reasons):
        print(f"{count:5}  {why}")
    if options.json:
        import torch

        record = {
            "benchmark": "benchmarks/cpython_tests.py",
            "what": "CPython's test modules, each test method compiled with fullgraph=True "
            "(eager backend), torch's CPythonTestCase harness for both systems; counted over "
            "the tests that pass run plainly",
            "date": report.utc_now(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "rows": rows,
            "shares": shares,
        }
        report.dump(options.json, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
