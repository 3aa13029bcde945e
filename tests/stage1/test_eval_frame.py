"""Stage 1: the PEP 523 hook. Runs without torch, so it also runs on any CPython 3.11/3.12."""

import asyncio
import gc
import inspect
import subprocess
import sys
import threading
import tracemalloc
import warnings
import weakref

import pytest
from hypothesis import given
from hypothesis import strategies as st

import stage1_eval_frame as ef

# ---------------------------------------------------------------------------
# Random functions with random signatures, written as source text.

NAMES = ["a", "b", "c", "d", "e"]


@st.composite
def signatures(draw):
    """(source of a parameter list, positional args, keyword args) that bind to it."""
    n_pos = draw(st.integers(0, 3))
    n_defaults = draw(st.integers(0, n_pos))
    n_kwonly = draw(st.integers(0, 2))
    varargs = draw(st.booleans())
    varkw = draw(st.booleans())
    names = iter(NAMES)
    params, args, kwargs = [], [], {}
    value = st.one_of(st.integers(-5, 5), st.text("xyz", max_size=3), st.none())
    passed_defaults = draw(st.integers(0, n_defaults))  # defaults are filled left to right
    for i in range(n_pos):
        name = next(names)
        if i >= n_pos - n_defaults:
            params.append(f"{name}={draw(value)!r}")
            if i < n_pos - n_defaults + passed_defaults:
                args.append(draw(value))
        else:
            params.append(name)
            args.append(draw(value))
    if varargs:
        params.append("*rest")
        if len(args) == n_pos:
            args += draw(st.lists(value, max_size=3))
    elif n_kwonly:
        params.append("*")
    for _ in range(n_kwonly):
        name = next(names)
        if draw(st.booleans()):
            params.append(f"{name}={draw(value)!r}")
            if draw(st.booleans()):
                kwargs[name] = draw(value)
        else:
            params.append(name)
            kwargs[name] = draw(value)
    if varkw:
        params.append("**options")
        for key in draw(st.lists(st.sampled_from(["p", "q", "r"]), max_size=2, unique=True)):
            kwargs[key] = draw(value)
    return ", ".join(params), args, kwargs


def make_function(params, *, closure, recursive, args=(), kwargs=None):
    """A function whose result shows every argument it received (and a closure, a recursion)."""
    body = [
        f"def f(n, {params}):" if params else "def f(n):",
        "    here = dict(locals())",
        "    here.pop('n')",
    ]
    if closure:
        body.append("    here['captured'] = captured")
    if recursive:
        body.append("    if n > 0:")
        body.append("        return [here, n] + f(n - 1, *call_args, **call_kwargs)")
    body.append("    return [here, n]")
    source = "\n".join("    " + line for line in body)
    namespace = {}
    exec(f"def outer(captured, call_args, call_kwargs):\n{source}\n    return f\n", namespace)
    return namespace["outer"]([1, 2], args, kwargs or {})


def passthrough(frame):
    return None


@given(signatures(), st.booleans(), st.booleans(), st.integers(0, 3))
def test_passthrough_returns_what_the_function_returns(sig, closure, recursive, n):
    params, args, kwargs = sig
    fn = make_function(params, closure=closure, recursive=recursive, args=args, kwargs=kwargs)
    expected = fn(n, *args, **kwargs)
    with ef.eval_frame(passthrough):
        actual = fn(n, *args, **kwargs)
    assert actual == expected


@given(signatures())
def test_replacement_receives_exactly_the_frames_argument_slots(sig):
    params, args, kwargs = sig
    fn = make_function(params, closure=False, recursive=False)
    received = []

    def replacement(*slots):
        received.append(slots)
        return "replaced"

    def callback(frame):
        return replacement if frame.code is fn.__code__ else None

    with ef.eval_frame(callback):
        assert fn(0, *args, **kwargs) == "replaced"
    assert received == [expected_slots(fn, 0, *args, **kwargs)]


def expected_slots(fn, *args, **kwargs):
    """CPython's slot order: positional, keyword-only, then *args and **kwargs."""
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    order = [
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
        inspect.Parameter.VAR_POSITIONAL,
        inspect.Parameter.VAR_KEYWORD,
    ]
    parameters = sorted(
        inspect.signature(fn).parameters.values(), key=lambda p: order.index(p.kind)
    )
    return tuple(bound.arguments[p.name] for p in parameters)


# ---------------------------------------------------------------------------
# What the callback sees.


def add(a, b=2, *rest, c, **options):
    return a + b + c + sum(rest) + sum(options.values())


def test_frame_describes_the_call():
    frames = []
    with ef.eval_frame(lambda frame: frames.append(frame) if frame.code is add.__code__ else None):
        assert add(1, c=3, d=4) == 10
    (frame,) = frames
    assert frame.code is add.__code__
    assert frame.function is add
    assert frame.globals is globals()
    assert frame.builtins["len"] is len
    assert frame.slots == (1, 2, 3, (), {"d": 4})
    assert frame.arguments == {"a": 1, "b": 2, "c": 3, "rest": (), "options": {"d": 4}}
    assert repr(frame).startswith("<Frame add at ")


def test_callback_sees_nested_calls_in_order():
    def inner(x):
        return x + 1

    def outer(x):
        return inner(x) * 2

    names = []
    with ef.eval_frame(lambda frame: names.append(frame.code.co_name)):
        assert outer(1) == 4
    assert names[:2] == ["outer", "inner"]


def test_the_hook_is_off_while_the_callback_runs():
    depth = []

    def helper():
        return 1

    def callback(frame):
        depth.append(frame.code.co_name)
        helper()  # a Python call inside the callback must not reach the callback

    with ef.eval_frame(callback):
        add(1, c=1)
    assert "helper" not in depth


def test_the_hook_stays_on_inside_a_replacement():
    def inner():
        return "inner"

    def replacement(*slots):
        return inner()

    seen = []

    def callback(frame):
        seen.append(frame.code.co_name)
        return replacement if frame.code is add.__code__ else None

    with ef.eval_frame(callback):
        assert add(1, c=1) == "inner"
    assert seen[:3] == ["add", "replacement", "inner"]


@pytest.mark.parametrize(
    "kind",
    ["generator", "coroutine", "class body", "module body", "generator.throw"],
)
def test_frames_left_alone(kind):
    seen = []

    def gen():
        try:
            yield 1
        except KeyError:
            yield 2

    async def coro():
        return 3

    def callback(frame):
        seen.append(frame.code.co_name)

    with ef.eval_frame(callback):
        if kind == "generator":
            assert list(gen()) == [1]
        elif kind == "coroutine":
            assert asyncio.run(coro()) == 3
        elif kind == "class body":

            class Body:
                x = 1

        elif kind == "module body":
            exec("y = 1", {})
        else:
            g = gen()
            next(g)
            assert g.throw(KeyError) == 2
    assert not {"gen", "coro", "Body", "<module>"} & set(seen)


# ---------------------------------------------------------------------------
# Exceptions propagate unchanged.


class Custom(Exception):
    pass


def test_exception_from_the_callback_propagates():
    def callback(frame):
        if frame.code is add.__code__:
            raise Custom("from the callback")

    with ef.eval_frame(callback), pytest.raises(Custom, match="from the callback"):
        add(1, c=1)


def test_exception_from_the_replacement_propagates():
    def replacement(*slots):
        raise Custom("from the replacement")

    with (
        ef.eval_frame(lambda f: replacement if f.code is add.__code__ else None),
        pytest.raises(Custom, match="from the replacement"),
    ):
        add(1, c=1)


def test_exception_of_the_function_itself_propagates():
    with ef.eval_frame(passthrough), pytest.raises(TypeError):
        add("a", c=1)


def test_a_callback_must_return_none_skip_or_a_callable():
    with (
        ef.eval_frame(lambda f: 42 if f.code is add.__code__ else None),
        pytest.raises(TypeError, match="must return None, SKIP or a callable, not int"),
    ):
        add(1, c=1)
    with pytest.raises(TypeError, match="takes a callable or None"):
        ef.set_eval_frame(3)


# ---------------------------------------------------------------------------
# Installing, threads, skipping, recursion.


def test_set_eval_frame_returns_the_previous_callback():
    assert ef.get_eval_frame() is None
    assert ef.set_eval_frame(passthrough) is None
    try:
        assert ef.get_eval_frame() is passthrough
        with ef.disabled():
            assert ef.get_eval_frame() is None
        assert ef.get_eval_frame() is passthrough
    finally:
        assert ef.set_eval_frame(None) is passthrough


def test_threads_are_isolated():
    barrier = threading.Barrier(2)
    seen = []

    def worker_function():
        return 1

    def worker():
        barrier.wait()
        for _ in range(1000):
            worker_function()
        barrier.wait()

    def main_function():
        return 2

    thread = threading.Thread(target=worker)
    with ef.eval_frame(lambda frame: seen.append(frame.code.co_name)):
        thread.start()
        barrier.wait()
        for _ in range(1000):
            main_function()
        barrier.wait()
    thread.join()
    assert "main_function" in seen
    assert "worker_function" not in seen


def test_a_thread_that_ends_with_the_hook_on_gives_its_callback_back():
    class Callback:
        def __call__(self, frame):
            return None

    seen = []

    def forget_to_turn_it_off(callbacks):
        ef.set_eval_frame(callbacks.pop())
        seen.append(ef.evaluator())  # the hook is on in this thread

    callbacks = [Callback()]
    alive = weakref.ref(callbacks[0])
    thread = threading.Thread(target=forget_to_turn_it_off, args=(callbacks,))
    thread.start()
    thread.join()
    gc.collect()
    assert seen == ["minidynamo"]
    assert alive() is None  # released with the thread's state
    assert ef.evaluator() == "default"  # and no thread has a callback any more


def test_turning_the_hook_off_restores_another_tools_evaluator():
    torch_eval_frame = pytest.importorskip("torch._C._dynamo.eval_frame")
    # torch.compile's own C evaluator, in its "run only" mode (False): it compiles nothing
    previous = torch_eval_frame.set_eval_frame(False)
    try:
        assert ef.evaluator() == "another tool's"
        with ef.eval_frame(passthrough):
            assert ef.evaluator() == "minidynamo"
            assert recurse(5) == 5
        assert ef.evaluator() == "another tool's"
    finally:
        torch_eval_frame.set_eval_frame(previous)
    assert ef.evaluator() == "default"


def test_a_callback_set_in_another_thread_is_not_seen_here():
    started, stop = threading.Event(), threading.Event()
    seen = []

    def worker():
        with ef.eval_frame(lambda frame: seen.append(frame.code.co_name)):
            started.set()
            stop.wait()

    thread = threading.Thread(target=worker)
    thread.start()
    started.wait()
    add(1, c=1)
    stop.set()
    thread.join()
    assert "add" not in seen


def test_skip_code_hides_a_code_object():
    def hidden():
        return 1

    ef.skip_code(hidden.__code__)
    seen = []
    with ef.eval_frame(lambda frame: seen.append(frame.code.co_name)):
        hidden()
        add(1, c=1)
    assert "hidden" not in seen and "add" in seen
    with pytest.raises(TypeError):
        ef.skip_code(hidden)


def test_call_unhooked_runs_without_the_hook():
    seen = []
    with ef.eval_frame(lambda frame: seen.append(frame.code.co_name)):
        assert ef.call_unhooked(add, 1, c=2) == 5
    assert "add" not in seen


def recurse(n):
    return 0 if n == 0 else 1 + recurse(n - 1)


def test_recursion_gives_the_same_result():
    depth = 600
    with ef.eval_frame(passthrough):
        assert recurse(depth) == depth


def deepest(limit: int) -> int:
    """How deep `recurse` gets below this frame before RecursionError."""
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        try:
            recurse(middle)
            low = middle
        except RecursionError:
            high = middle - 1
    return low


def test_the_hook_does_not_lower_the_recursion_limit():
    # Hooked frames cost C stack (and, on 3.12, two units each of CPython's C-recursion
    # budget of 1500): past MAX_HOOKED_DEPTH the evaluator steps aside, so a hooked
    # recursion gets as deep as a plain one (3.12 used to stop near 750 of 1000).
    plain = deepest(sys.getrecursionlimit())
    with warnings.catch_warnings(), ef.eval_frame(passthrough):
        warnings.simplefilter("ignore", RuntimeWarning)  # "deeper than 400", once a process
        hooked = deepest(sys.getrecursionlimit())
    assert hooked >= plain - 5
    assert ef.evaluator() == "default"  # and it comes back off


DEEP_RECURSION = """
import sys
import stage1_eval_frame as ef

sys.setrecursionlimit(200_000)


def recurse(n):
    return 0 if n == 0 else 1 + recurse(n - 1)


with ef.eval_frame(lambda frame: None):
    print(recurse(100_000))
"""


def test_deep_recursion_below_a_raised_limit_returns_as_in_eager():
    # 100,000 hooked frames used to overflow the C stack: SIGSEGV, where eager returns.
    result = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", DEEP_RECURSION],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (result.returncode, result.stdout) == (0, "100000\n"), result.stderr


def test_an_endless_chain_of_replacements_raises_recursion_error():
    def replacement(*slots):
        return "never"

    def callback(frame):
        return (
            replacement
            if frame.code is add.__code__ or frame.code is replacement.__code__
            else None
        )

    with ef.eval_frame(callback), pytest.raises(RecursionError):
        add(1, c=1)


def test_too_deep_recursion_raises_recursion_error_as_without_the_hook():
    with pytest.raises(RecursionError):
        recurse(sys.getrecursionlimit() + 10)
    with ef.eval_frame(passthrough), pytest.raises(RecursionError):
        recurse(sys.getrecursionlimit() + 10)
    with ef.eval_frame(passthrough):  # and the hook still works afterwards
        assert recurse(10) == 10


# ---------------------------------------------------------------------------
# No reference is leaked or freed twice.


def test_a_million_hooked_calls_leak_nothing():
    argument = object()
    keyword = object()

    def function(x, *, y):
        return x

    def replacement(x, y):
        return x

    def callback(frame):
        return (
            replacement if frame.code is function.__code__ and frame.slots[0] is keyword else None
        )

    def run(count):
        for _ in range(count):
            function(argument, y=keyword)  # run normally
            function(keyword, y=argument)  # replaced

    with ef.eval_frame(callback):
        run(1000)  # warm up caches and allocators
        gc.collect()
        refs = sys.getrefcount(argument), sys.getrefcount(keyword)
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        run(500_000)
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
    assert (sys.getrefcount(argument), sys.getrefcount(keyword)) == refs
    assert after - before < 64 * 1024, f"{after - before} bytes were not freed"


# ---------------------------------------------------------------------------
# SKIP: a callback that is not asked again about a code object.


@pytest.fixture
def no_marks():
    ef.clear_skip_marks()
    yield


def skipping_callback(seen, skip=("hidden",)):
    """Records the frames of `hidden` and `add` it is asked about (not the context manager's);
    answers SKIP for the names in `skip`."""

    def callback(frame):
        if frame.code in (hidden.__code__, add.__code__):
            seen.append(frame.code.co_name)
        return ef.SKIP if frame.code.co_name in skip else None

    return callback


def hidden(n):
    return n + 1


def test_skip_asks_once_then_never_again_for_that_code(no_marks):
    seen = []
    callback = skipping_callback(seen)
    with ef.eval_frame(callback):
        assert [hidden(n) for n in range(5)] == [1, 2, 3, 4, 5]  # the frames still run
        add(1, c=1)
        add(1, c=1)
    assert seen == ["hidden", "add", "add"]  # entered once for `hidden`, every time for `add`
    assert ef.skip_marks(hidden.__code__) == [callback]


def test_a_skip_mark_belongs_to_the_callback_that_asked(no_marks):
    first, second = [], []
    skipper = skipping_callback(first)
    with ef.eval_frame(skipper):
        hidden(1)
        hidden(1)
    with ef.eval_frame(skipping_callback(second, skip=())):  # another compile(), other options
        hidden(1)
        hidden(1)
    with ef.eval_frame(skipper):
        hidden(1)
    assert first == ["hidden"] and second == ["hidden", "hidden"]


def test_clear_skip_marks_asks_again(no_marks):
    seen = []
    callback = skipping_callback(seen)
    with ef.eval_frame(callback):
        hidden(1)
        hidden(1)
        ef.clear_skip_marks(hidden.__code__)  # one code
        hidden(1)
        hidden(1)
        ef.clear_skip_marks()  # every code
        hidden(1)
    assert seen == ["hidden"] * 3
    ef.clear_skip_marks()
    assert ef.skip_marks(hidden.__code__) == []
    with pytest.raises(TypeError):
        ef.clear_skip_marks(hidden)


def test_threads_share_the_marks_of_a_shared_callback(no_marks):
    seen = []
    callback = skipping_callback(seen)

    def run():
        with ef.eval_frame(callback):
            for n in range(100):
                hidden(n)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert 1 <= len(seen) <= 4  # each thread may ask before another has marked the code
    assert ef.skip_marks(hidden.__code__) == [callback]  # marked once


def test_a_mark_does_not_keep_its_callback_alive_nor_outlive_it(no_marks):
    seen = []
    callback = skipping_callback(seen)
    with ef.eval_frame(callback):
        hidden(1)
    dead = weakref.ref(callback)
    del callback
    gc.collect()
    assert dead() is None  # the code object held it weakly
    assert ef.skip_marks(hidden.__code__) == []  # and a new callback is not taken for it
    again = []
    with ef.eval_frame(skipping_callback(again)):
        hidden(1)
    assert again == ["hidden"]


def test_marks_of_callbacks_that_died_do_not_pile_up(no_marks):
    def mark_and_die():
        with ef.eval_frame(skipping_callback([])):  # a new callback each time, as compile() makes
            hidden(1)

    def run(count):
        for _ in range(count):
            mark_and_die()
        ef.clear_skip_marks()  # a reset now and then: the list of marked codes keeps its size
        for _ in range(count):
            mark_and_die()
        gc.collect()

    run(100)  # warm up
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    run(5_000)
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert after - before < 10_000  # 10,000 weak references kept would be about 800 kB


def test_a_callback_that_cannot_be_weakly_referenced_is_asked_every_time(no_marks):
    class Slotted:
        __slots__ = ("seen",)

        def __init__(self):
            self.seen = []

        def __call__(self, frame):
            if frame.code is hidden.__code__:
                self.seen.append(frame.code.co_name)
            return ef.SKIP

    callback = Slotted()
    with ef.eval_frame(callback):
        hidden(1)
        hidden(1)
    assert callback.seen == ["hidden", "hidden"]


def test_skip_is_one_object_that_cannot_be_made_again():
    assert repr(ef.SKIP) == "SKIP"
    with pytest.raises(TypeError):
        type(ef.SKIP)()
