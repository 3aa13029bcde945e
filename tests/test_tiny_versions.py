"""The small programs each chapter opens with (docs/tiny/): they run, print what the book
shows, stay within 40 lines, and are shown by their chapter.

Each runs as a reader runs it, `python docs/tiny/NAME.py`, in a process of its own.
"""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
TINY = ROOT / "docs" / "tiny"

EXPECTED = {
    ("stage1_eval_frame", "frame_hook"): """\
sys.setprofile saw: ['cube', 'square']
the hook was asked about: ['cube(3,)', 'square(3,)']
cube(3) = 81 since square(3) answered pow(3, exp=3)
""",
    ("stage2_symbolic_vm", "symbolic_vm"): """\
  RESUME             stack []
  LOAD_FAST     x    stack []
  LOAD_CONST    2    stack ['x']
  BINARY_OP     *    stack ['x', 2]
  LOAD_CONST    1    stack ['t0']
  BINARY_OP     +    stack ['t0', 1]
  RETURN_VALUE       stack ['t1']
trace:
  t0 = x * 2
  t1 = t0 + 1
  return t1
""",
    ("stage3_guards", "guards_and_cache"): """\
size 3: miss, traced 2 nodes, guard x.size(0) == 3
size 3: hit, x.size(0) == 3
size 1: miss, traced 2 nodes, guard x.size(0) == 1
size 3: hit, x.size(0) == 3
size 1: hit, x.size(0) == 1
2 entries in the cache of f
""",
    ("stage4_fx", "graph_and_break"): """\
def forward(self, x):
    sin = torch.sin(x);  x = None
    mul = torch.mul(sin, 2);  sin = None
    return (mul,)
def forward(self, y, x):
    add = torch.add(y, x);  y = x = None
    return (add,)
a side effect the graph cannot hold
a side effect the graph cannot hold
""",
    ("stage5_inductor_cpp", "fused_loop"): """\
unfused  3000 loads, 3000 stores, sum 635.225569
fused    1000 loads, 1000 stores, sum 635.225569
""",
    ("stage6_inductor_triton", "triton_kernel"): """\
4 programs of 256 lanes for 1000 elements; equal to eager
""",
}


def test_every_tiny_version_is_checked():
    assert sorted(p.stem for p in TINY.glob("*.py")) == sorted(n for _, n in EXPECTED)


@pytest.mark.parametrize(("chapter", "name"), EXPECTED, ids=[n for _, n in EXPECTED])
def test_tiny_version(chapter, name):
    path = TINY / f"{name}.py"
    lines = path.read_text().splitlines()
    assert len(lines) <= 40, f"{path.name} has {len(lines)} lines: a tiny version has at most 40"
    # the tree's packages, installed or not (the GPU machine runs the suite from the tree)
    path_entries = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path_entries)}
    run = subprocess.run(
        [sys.executable, str(path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == EXPECTED[chapter, name]
    text = (ROOT / "docs" / f"{chapter}.md").read_text()
    assert f'path = "docs/tiny/{name}.py"' in text, f"chapter {chapter} does not show {name}.py"
