"""`random.Random(seed)` made in the compiled function draws CPython's numbers: Lib/random.py's
methods, run on a real generator while tracing (python/random_generators.py), in the
program's order; what a fixed seed does not decide is a break with its reason."""

import random

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import stage4_fx
from tests.stage2.conformance import check, outcome

pytestmark = pytest.mark.stage2

X = torch.ones(2)


@pytest.mark.parametrize("seed", [0, 12345, -7, 2**70, "a string", b"bytes", 3.5])
def test_a_seed_gives_cpythons_sequence(seed):
    def case(x):
        rng = random.Random(seed)
        first = rng.random()
        return x * first, first, rng.random(), rng.getrandbits(70), rng.randint(-5, 5)

    check(case, X)


def test_the_drawing_methods():
    def case(x):
        rng = random.Random(2024)
        drawn = [
            rng.uniform(1, 3), rng.randrange(0, 100, 7), rng.choice("abcdef"),
            rng.choice((1, 2, 3)), rng.sample(range(50), 4), rng.choices("xyz", k=5),
            rng.gauss(0, 1), rng.normalvariate(1, 2), rng.expovariate(1.5),
            rng.triangular(0, 10, 3), rng.betavariate(2, 3), rng.randbytes(5),
        ]  # fmt: skip
        return x + len(drawn), drawn

    check(case, X)


def test_state_saved_and_restored_draws_the_same_again():
    def case(x):
        rng = random.Random(9)
        state = rng.getstate()
        a = rng.random()
        rng.setstate(state)
        b = rng.random()
        rng.seed(9)
        return x * a, a == b, rng.random() == a

    check(case, X)


def test_the_errors_of_bad_arguments():
    def case(x):
        rng = random.Random(1)
        return (
            x * 2,
            outcome(rng.randint, 5, 1),
            outcome(rng.choice, ()),
            outcome(rng.sample, range(3), 5),
            outcome(rng.randrange, 0),
        )

    check(case, X)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(-(2**40), 2**40),
    calls=st.lists(st.sampled_from(["random", "randint", "getrandbits", "sample"]), max_size=6),
)
def test_random_sequences_of_draws(seed, calls):
    def case(x):
        rng = random.Random(seed)
        drawn = []
        for name in calls:
            if name == "random":
                drawn.append(rng.random())
            elif name == "randint":
                drawn.append(rng.randint(0, 1000))
            elif name == "getrandbits":
                drawn.append(rng.getrandbits(33))
            else:
                drawn.append(rng.sample(range(20), 3))
        return x * len(drawn), drawn

    check(case, X)


def reasons(fn) -> list[str]:
    report = stage4_fx.explain(fn)(X)
    return [str(b).splitlines()[0] for b in report.break_reasons]


def test_what_a_seed_does_not_decide_is_a_break_with_its_reason():
    outside = random.Random(3)

    def unseeded(x):
        return x * random.Random().random()

    def from_outside(x):
        return x * outside.random()

    def escapes(x):
        return x + 1, random.Random(5)

    def shuffles(x):
        items = [1, 2, 3]
        random.Random(0).shuffle(items)
        return x * items[0]

    assert "seeds itself from the system" in reasons(unseeded)[0]
    assert "Random.random of Random" in reasons(from_outside)[0]
    assert "exists only inside the trace" in reasons(escapes)[0]
    assert "'shuffle' is not modeled" in reasons(shuffles)[0]
