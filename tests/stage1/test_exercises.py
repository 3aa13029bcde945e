"""The exercises at the end of docs/stage1_eval_frame.md (skipped unless MINIDYNAMO_EXERCISES=1).

Rebuild the C extension after each change, then:

.venv/bin/python setup.py build_ext --inplace
MINIDYNAMO_EXERCISES=1 .venv/bin/python -m pytest tests/stage1/test_exercises.py -q
"""

import gc
import os
import sys
import threading

import pytest

import stage1_eval_frame as ef
from stage1_eval_frame.__main__ import cube, run_hooked, sum_of_cubes

pytestmark = pytest.mark.skipif(
    os.environ.get("MINIDYNAMO_EXERCISES") != "1",
    reason="exercises: set MINIDYNAMO_EXERCISES=1 to check your solutions",
)


def test_frames_seen():
    before = ef.frames_seen()
    run_hooked(lambda frame: None, sum_of_cubes, 10)
    after = ef.frames_seen()
    assert after - before == 21  # sum_of_cubes, cube and square ten times each

    seen_there = []

    def work():
        start = ef.frames_seen()
        run_hooked(lambda frame: None, cube, 3)  # cube and square
        seen_there.append(ef.frames_seen() - start)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert seen_there == [2]
    assert ef.frames_seen() == after  # the other thread counted in its own count


def test_frame_qualname():
    class Model:
        def forward(self, x):
            return x

    frames = []
    run_hooked(frames.append, Model().forward, 1)
    (frame,) = frames
    assert frame.qualname == "test_frame_qualname.<locals>.Model.forward"
    with pytest.raises(AttributeError):
        frame.qualname = "something else"

    def read_and_let_go(frame):
        assert frame.qualname

    name = frame.qualname
    references = sys.getrefcount(name)
    for _ in range(100):
        run_hooked(read_and_let_go, Model().forward, 1)
    assert sys.getrefcount(name) == references  # each snapshot let go of its reference
    del Model, name
    gc.collect()
    assert frame.qualname.endswith("Model.forward")  # the snapshot holds its own reference


def test_callback_can_skip_a_code_object():
    def helper(x):
        return x + 1

    asked = []

    def callback(frame):
        if frame.code is helper.__code__:
            asked.append(frame.arguments["x"])
            return ef.SKIP
        return None

    def work():
        return [helper(1), helper(2), helper(3)]

    assert run_hooked(callback, work) == [2, 3, 4]
    assert asked == [1]  # asked once; from then on helper's code is skipped
    assert run_hooked(callback, work) == [2, 3, 4]
    assert asked == [1]
