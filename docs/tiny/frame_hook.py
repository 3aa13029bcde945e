"""Chapter 1 in miniature: see every call, then answer one instead of running it."""

import functools
import sys

import stage1_eval_frame as ef


def square(x):
    return x * x


def cube(x):
    return square(x) * x


# Seeing every call is possible in pure Python: a profile function is told of each one...
calls = []
sys.setprofile(lambda frame, event, arg: event == "call" and calls.append(frame.f_code.co_name))
cube(3)
sys.setprofile(None)
print("sys.setprofile saw:", calls)


# ...but it cannot keep a frame from running. PEP 523 can: our hook shows the callback each
# frame before its first instruction, and calls what the callback returns in its place.
def callback(frame):
    asked.append(f"{frame.code.co_name}{frame.slots}")
    if frame.code is square.__code__:
        return functools.partial(pow, exp=3)  # called with the frame's arguments: 3 ** 3
    return None  # run the frame as usual


asked = []
ef.set_eval_frame(callback)
result = cube(3)
ef.set_eval_frame(None)
print("the hook was asked about:", asked)
print("cube(3) =", result, "since square(3) answered pow(3, exp=3)")
