"""`python -m stage1_eval_frame`: watch the frames of a small program, then swap a function.

In the spirit of the classic PEP 523 demo: the first callback prints every
frame it is shown and lets it run; the second replaces one function by another.
"""

import stage1_eval_frame as ef


def square(x):
    return x * x


def cube(x):
    return x * square(x)


def sum_of_cubes(n, *, start=1):
    return sum(cube(i) for i in range(start, n + 1))


def fast_square(x):
    """What the second callback runs instead of `square`."""
    return x**2


def print_frame(frame):
    args = ", ".join(f"{k}={v!r}" for k, v in frame.arguments.items())
    print(f"  frame: {frame.code.co_qualname}({args})")
    return None  # None: run the frame as usual


def swap_square(frame):
    if frame.code is square.__code__:
        print(f"  replacing square{frame.slots} by fast_square")
        return fast_square
    return None


def run_hooked(callback, fn, *args):
    """Call fn(*args) with the hook on. (The `eval_frame` context manager does the
    same, but its own `__exit__` frame would show up in the print-out.)"""
    previous = ef.set_eval_frame(callback)
    try:
        return fn(*args)
    finally:
        ef.set_eval_frame(previous)


def main():
    print("1. A callback that prints every frame it sees:")
    print(f"  cube(3) = {run_hooked(print_frame, cube, 3)}")
    print(f"  sum_of_cubes(2) = {run_hooked(print_frame, sum_of_cubes, 2)}")
    print("  (the generator expression inside sum_of_cubes is not shown: generators run as usual)")
    print()
    print("2. A callback that swaps square for fast_square:")
    print(f"  cube(4) = {run_hooked(swap_square, cube, 4)}")


if __name__ == "__main__":
    main()
