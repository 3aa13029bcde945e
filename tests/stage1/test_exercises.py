"""The exercises at the end of docs/stage1_eval_frame.md (skipped unless MINIDYNAMO_EXERCISES=1).

In the chapter's order, easiest first: the tiny program, then hook.py (Python), then the
C code. Rebuild the C extension after each change to a C file, then:

.venv/bin/python setup.py build_ext --inplace
MINIDYNAMO_EXERCISES=1 .venv/bin/python -m pytest tests/stage1/test_exercises.py -q
"""

import gc
import os
import sys
import threading

import pytest

import stage1_eval_frame as ef
from stage1_eval_frame.__main__ import cube, run_hooked, square, sum_of_cubes
from tests.tiny_programs import load_tiny

pytestmark = pytest.mark.skipif(
    os.environ.get("MINIDYNAMO_EXERCISES") != "1",
    reason="exercises: set MINIDYNAMO_EXERCISES=1 to check your solutions",
)


def load_tiny_program():
    """docs/tiny/frame_hook.py as a module (running it prints its three lines)."""
    return load_tiny("frame_hook")


def test_tiny_calls_to():
    """`calls_to(fn, *args)`: fn's result, and the names of the frames the hook was asked about."""
    tiny = load_tiny_program()
    assert tiny.calls_to(tiny.cube, 3) == (27, ["cube", "square"])
    assert tiny.calls_to(tiny.square, 4) == (16, ["square"])
    assert ef.get_eval_frame() is None  # the hook is off again

    def fails():
        return tiny.square(1) / 0

    with pytest.raises(ZeroDivisionError):
        tiny.calls_to(fails)
    assert ef.get_eval_frame() is None  # off again, even after an exception


def test_replacing():
    """`with ef.hook.replacing(function, replacement):` runs `replacement` for every call of
    `function` in the block, with the same arguments, and lets every other frame run."""
    from stage1_eval_frame.hook import replacing

    with replacing(square, lambda x: -x):
        assert cube(3) == -9  # cube runs; its call of square is answered by the replacement
        assert square(x=5) == -5  # a keyword argument arrives in its slot, by position
        assert cube(2) == -4
    assert ef.get_eval_frame() is None and cube(3) == 27  # the hook is off after the block

    # The replacement runs with the hook on: to call the original, call it unhooked.
    with replacing(square, lambda x: ef.call_unhooked(square, x) + 1):
        assert cube(3) == 30  # 3 * (9 + 1)

    seen = []
    with ef.eval_frame(lambda frame: seen.append(frame.code.co_name)):
        with replacing(cube, lambda x: 0):
            assert sum_of_cubes(3) == 0
        seen.clear()
        square(2)  # the outer block's callback is back
    assert "square" in seen


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


def test_skip_recursive_hides_the_calls_too():
    def leaf(x):
        return x + 1

    def logger(x):
        return leaf(x) * 2

    def work():
        return [logger(1), leaf(5), logger(2)]

    asked = []

    def callback(frame):
        asked.append(frame.code.co_name)
        return ef.SKIP_RECURSIVE if frame.code is logger.__code__ else None

    assert run_hooked(callback, work) == [4, 6, 6]
    assert asked == ["work", "logger", "leaf"]  # logger once; leaf only when work calls it
    asked.clear()
    assert run_hooked(callback, work) == [4, 6, 6]
    assert asked == ["work", "leaf"]
    other = []
    assert run_hooked(lambda frame: other.append(frame.code.co_name), work) == [4, 6, 6]
    assert other == ["work", "logger", "leaf", "leaf", "logger", "leaf"]  # another callback
    ef.clear_skip_marks()
    asked.clear()
    run_hooked(callback, work)
    assert asked == ["work", "logger", "leaf"]  # asked again after a reset
    ef.clear_skip_marks()
