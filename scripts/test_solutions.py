"""Check the book's worked solutions: each one solves its exercise, and the shipped code does not.

`make test-solutions` runs this. The exercises of chapter N are the tests of
tests/stageN/test_exercises.py (skipped unless MINIDYNAMO_EXERCISES=1); the
solution of `test_x` is the patch docs/solutions/stageN/test_x.diff, which
the chapter shows in its collapsed "Solution" block. For each exercise:

- the patch applies to a copy of the tree (tracked and untracked files, and
  stage 1's built extension, which a patch of a C file rebuilds in the copy);
- with it, that exercise's test passes (every parametrization of it);
- without it, in this tree, the test fails (at least one parametrization):
  an exercise the shipped code already solves teaches nothing.

It also checks that every exercise has a solution, that every solution has an
exercise, and that each chapter includes its solutions. The copies run in
parallel, one pytest each, as many at once as the machine has cores.

Usage: python scripts/test_solutions.py [-k SUBSTRING of stageN/test_name] [--jobs N]
"""

import argparse
import ast
import concurrent.futures
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "docs" / "solutions"


def exercises() -> list[tuple[str, str]]:
    """(stage folder, test name) of every exercise, in the chapters' order."""
    found = []
    for tests in sorted(ROOT.glob("tests/stage*/test_exercises.py")):
        tree = ast.parse(tests.read_text())
        names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
        found += [(tests.parent.name, name) for name in names if name.startswith("test_")]
    return found


def chapter_of(stage: str) -> pathlib.Path:
    (chapter,) = ROOT.glob(f"docs/{stage}_*.md")
    return chapter


def check_the_books_solutions(wanted: list[tuple[str, str]]) -> list[str]:
    """Every exercise has a patch, every patch an exercise, and its chapter shows it."""
    problems = []
    patches = {(p.parent.name, p.stem) for p in SOLUTIONS.glob("stage*/*.diff")}
    for stage, name in sorted(set(wanted) - patches):
        problems.append(
            f"{stage}: exercise {name} has no solution docs/solutions/{stage}/{name}.diff"
        )
    for stage, name in sorted(patches - set(exercises())):
        problems.append(f"docs/solutions/{stage}/{name}.diff: no test {name} in tests/{stage}")
    for stage, name in sorted(patches & set(wanted)):
        if f"docs/solutions/{stage}/{name}.diff" not in chapter_of(stage).read_text():
            problems.append(
                f"{chapter_of(stage).name} does not show docs/solutions/{stage}/{name}.diff"
            )
    return problems


def run_tests(tree: pathlib.Path, ids: list[str], report: pathlib.Path) -> dict[str, list[str]]:
    """Run these test ids in `tree` with the exercises on: outcomes per test function."""
    env = {**os.environ, "MINIDYNAMO_EXERCISES": "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += [f"--junitxml={report}", "-o", "junit_family=xunit2", *ids]
    subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False)
    outcomes: dict[str, list[str]] = {}
    if not report.exists():
        return outcomes
    for case in ET.parse(report).getroot().iter("testcase"):
        name = case.get("name", "").split("[")[0]
        failed = case.find("failure") is not None or case.find("error") is not None
        skipped = case.find("skipped") is not None
        outcomes.setdefault(name, []).append(
            "failed" if failed else "skipped" if skipped else "passed"
        )
    return outcomes


def copy_tree(destination: pathlib.Path):
    """The files git knows or would add, and stage 1's built extension."""
    git = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    listed = subprocess.run(git, cwd=ROOT, capture_output=True, check=True).stdout.decode()
    built = [str(p.relative_to(ROOT)) for p in ROOT.glob("stage1_eval_frame/*.so")]
    for name in [*filter(None, listed.split("\0")), *built]:
        source = ROOT / name
        if source.is_file():  # a file deleted in the work tree is still listed by git
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)


def solve(stage: str, name: str, scratch: pathlib.Path) -> str | None:
    """Apply the solution in a copy and run its test there; None if it passes, else why not."""
    tree = scratch / f"{stage}-{name}"
    copy_tree(tree)
    patch = SOLUTIONS / stage / f"{name}.diff"
    applied = subprocess.run(
        ["git", "apply", "--verbose", str(patch)], cwd=tree, capture_output=True, text=True
    )
    if applied.returncode != 0:
        return f"the patch does not apply:\n{applied.stderr.strip()}"
    if ".c b/" in patch.read_text() or ".h b/" in patch.read_text():
        built = subprocess.run(
            [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
            cwd=tree,
            capture_output=True,
            text=True,
        )
        if built.returncode != 0:
            return f"the C extension does not build:\n{built.stdout}{built.stderr}"
    test_id = f"tests/{stage}/test_exercises.py::{name}"
    outcomes = run_tests(tree, [test_id], scratch / f"{stage}-{name}.xml").get(name, [])
    if not outcomes or set(outcomes) != {"passed"}:
        log = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", test_id],
            cwd=tree,
            env={**os.environ, "MINIDYNAMO_EXERCISES": "1"},
            capture_output=True,
            text=True,
        ).stdout
        return f"with the solution, the test gives {outcomes or 'nothing'}:\n{log[-3000:]}"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-k", default="", help="only the exercises whose stageN/test_name has this")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    options = parser.parse_args()
    wanted = [(s, n) for s, n in exercises() if options.k in f"{s}/{n}"]
    if not wanted:  # pytest given no test ids would run the whole suite
        print(f"no exercise matches -k {options.k!r}", file=sys.stderr)
        return 1
    problems = check_the_books_solutions(wanted)

    with tempfile.TemporaryDirectory(prefix="minidynamo-solutions-") as scratch:
        scratch = pathlib.Path(scratch)
        ids = [f"tests/{stage}/test_exercises.py::{name}" for stage, name in wanted]
        shipped = run_tests(ROOT, ids, scratch / "shipped.xml")
        for stage, name in wanted:
            if "failed" not in shipped.get(name, []):
                got = shipped.get(name) or "nothing"
                problems.append(f"{stage}/{name}: the shipped code does not fail it ({got})")
        with concurrent.futures.ThreadPoolExecutor(options.jobs) as pool:
            runs = {pool.submit(solve, s, n, scratch): (s, n) for s, n in wanted}
            for run in concurrent.futures.as_completed(runs):
                stage, name = runs[run]
                why = run.result()
                print(f"{'ok  ' if why is None else 'FAIL'} {stage}/{name}", flush=True)
                if why is not None:
                    problems.append(f"{stage}/{name}: {why}")

    for problem in problems:
        print(f"\n{problem}", file=sys.stderr)
    print(f"\n{len(wanted)} solutions checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
