# The cases spell Python the many ways model code does (`getattr(x, "name")`, `"%d" % n`,
# `str.rsplit` on a constant, a loop variable in a lambda ...): the linter's rewrites would
# change what they test.
# ruff: noqa: B009, B010, B023, B905, RUF005, RUF012, RUF015, RUF021, RUF058, RUF059, SIM905
# ruff: noqa: UP003, UP012, UP030, UP031, UP033, UP036
"""Small functions in the style of PyTorch's test/dynamo/test_functions.py: the breadth of Python.

Each entry is (function, arguments, kwargs, graphs, breaks), as in functions_table.py:
compiled in strict mode, the function must give eager's result, and `explain` must find
that many graphs and graph breaks. test_dynamo_style.py also checks that no frame ran
eagerly because of an internal error or an exception the VM predicted wrongly. These
cases are this project's own, written for the kinds of Python torch's tests exercise:
builtins, `math`, `operator`, containers and their methods, `functools`, `itertools`,
`collections`, closures, defaults, `*args`/`**kwargs`, classes, enums, dataclasses,
strings, tensor methods and torch's queries. A break count above 0 is a limitation the
VM names with a reason (NumPy's random generator, reading an array's data).
"""

import abc
import collections
import contextlib
import copy
import dataclasses
import enum
import functools
import itertools
import math
import operator
import os
import random
import sys
import typing
import warnings

import numpy as np
import torch
import torch.nn.functional as F

from tests.stage4.functions_table import registrar

_gen = torch.Generator().manual_seed(7)
T = torch.randn(4, 3, generator=_gen)
U = torch.randn(4, 3, generator=_gen)
V = torch.randn(3, generator=_gen)
B = torch.randn(2, 3, 4, generator=_gen)
I = torch.arange(12).reshape(4, 3)  # noqa: E741 (an int tensor)
CASES = []


case = registrar(CASES)


# --- module-level helpers the cases use -------------------------------------------------------


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 3


class Perm(enum.Flag):
    READ = 1
    WRITE = 2


@dataclasses.dataclass
class Config:
    scale: float = 2.0
    shift: int = 1
    names: list = dataclasses.field(default_factory=lambda: ["a", "b"])


@dataclasses.dataclass(frozen=True)
class Frozen:
    k: int
    label: str = "f"


@dataclasses.dataclass
class WithPost:
    a: int
    b: int = 0

    def __post_init__(self):
        self.total = self.a + self.b


class Point(typing.NamedTuple):
    x: float
    y: float = 0.0

    def norm2(self):
        return self.x * self.x + self.y * self.y


Pair = collections.namedtuple("Pair", ["left", "right"])


class Scaler:
    factor = 3

    def __init__(self, k):
        self.k = k

    def __call__(self, t):
        return t * self.k

    @property
    def double(self):
        return self.k * 2

    @classmethod
    def make(cls, k):
        return cls(k + cls.factor)

    @staticmethod
    def offset(t):
        return t + 0.5


class Base:
    def scale(self, t):
        return t * 2


class Child(Base):
    def scale(self, t):
        return super().scale(t) + 1


class Bag:
    """A container written in Python: the VM runs its special methods."""

    def __init__(self, items):
        self.items = list(items)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]

    def __iter__(self):
        return iter(self.items)

    def __contains__(self, item):
        return item in self.items


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a, self.b = a, b


class Registry(dict):
    pass


class Stop(Exception):
    pass


class Stats:
    def __init__(self, values):
        self.values = values

    @functools.cached_property
    def total(self):
        return sum(self.values)


class Recorder:
    """A context manager written in Python: the VM runs its __enter__ and __exit__."""

    def __init__(self, log):
        self.log, self.k = log, 2

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, *exc):
        self.log.append("exit")
        return False


@contextlib.contextmanager
def scaled(k):
    yield k


class Defaults:
    real = 1

    def __getattr__(self, name):
        return 5


class Validated:
    def __setattr__(self, name, value):
        object.__setattr__(self, name, abs(value))


class Temperature:
    def __init__(self):
        self._c = 0.0

    @property
    def celsius(self):
        return self._c

    @celsius.setter
    def celsius(self, value):
        self._c = value

    @property
    def fahrenheit(self):
        return self._c * 9 / 5 + 32


class Tracker:
    last = 0

    @classmethod
    def record(cls, n):
        cls.last = n


class Shape(abc.ABC):
    @abc.abstractmethod
    def area(self): ...


class Square(Shape):
    def __init__(self, side):
        self.side = side

    def area(self):
        return self.side**2


@dataclasses.dataclass(order=True)
class Version:
    major: int
    minor: int


class Mode(enum.Enum):
    SLOW = enum.auto()
    FAST = enum.auto()


class Unit(enum.StrEnum):
    METER = "m"


class Plugin:
    registry = []

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        Plugin.registry.append(cls.__name__)


class FirstPlugin(Plugin):
    pass


class Vec:
    def __init__(self, v):
        self.v = v

    def __add__(self, other):
        return Vec(self.v + other.v)

    def __mul__(self, k):
        return Vec(self.v * k)

    def __eq__(self, other):
        return isinstance(other, Vec) and self.v == other.v

    __hash__ = None


def add_one(t):
    return t + 1


def twice(fn):
    @functools.wraps(fn)
    def wrapper(t):
        return fn(fn(t))

    return wrapper


@twice
def add_two_twice(t):
    return t + 2


@functools.lru_cache(maxsize=None)
def cached_power(n):
    return 2**n


MULTIPLIERS = {"a": 2, "b": 3}
LIMITS = (0.5, 1.5)
STATE = {"rows": 0}


# --- builtins ---------------------------------------------------------------------------------


@case(T)
def builtin_divmod_ints(a):
    q, r = divmod(17, 5)
    return a * q + r


@case(T)
def builtin_divmod_negative(a):
    q, r = divmod(-7, 2)
    return a + q * 10 + r


@case(T)
def builtin_pow_mod(a):
    return a + pow(3, 4, 5)


@case(T)
def builtin_round_digits(a):
    return a * round(2.71828, 2) + round(7.5) + round(-2.5)


@case(T)
def builtin_min_key(a):
    words = ["pear", "fig", "banana"]
    return a * len(min(words, key=len)) + len(max(words, key=len))


@case(T)
def builtin_max_default(a):
    return a + max([], default=4) + min((), default=-1)


@case(T)
def builtin_sorted_key_reverse(a):
    pairs = [(3, "c"), (1, "a"), (2, "b")]
    order = sorted(pairs, key=lambda p: p[0], reverse=True)
    return a * order[0][0] + order[-1][0]


@case(T)
def builtin_sum_start(a):
    return sum([1, 2, 3], 10) + a


@case(T, U)
def builtin_sum_tensors_start(a, b):
    return sum([a, b, a], torch.zeros(4, 3))


@case(T)
def builtin_any_all_generator(a):
    xs = [1, 0, 3]
    return a + any(x > 2 for x in xs) * 1 + all(x >= 0 for x in xs) * 2


@case(T, U)
def builtin_zip_strict(a, b):
    out = a
    for x, y in zip([a, b], [2, 3], strict=True):
        out = out + x * y
    return out


@case(T)
def builtin_enumerate_start(a):
    total = a
    for i, k in enumerate([0.5, 0.25], start=1):
        total = total + i * k
    return total


@case(T)
def builtin_reversed_range(a):
    out = a
    for i in reversed(range(3)):
        out = out * 2 + i
    return out


@case(T)
def builtin_map_two_iterables(a):
    sums = list(map(operator.add, [1, 2, 3], [10, 20, 30]))
    return a + sums[2]


@case(T)
def builtin_filter_none(a):
    kept = list(filter(None, [0, 1, "", "x", None, 2]))
    return a * len(kept)


@case(T)
def builtin_len_of_many(a):
    return a + len("hello") + len((1, 2)) + len({1: 2}) + len({3, 4, 5}) + len(range(2, 9, 3))


@case(T)
def builtin_isinstance_tuple(a):
    values = [1, 2.0, "3", None, (4,)]
    n = sum(1 for v in values if isinstance(v, (int, float)))
    return a * n


@case(T)
def builtin_issubclass(a):
    return a + issubclass(bool, int) + issubclass(Child, Base) * 2


@case(T)
def builtin_callable_checks(a):
    return a + callable(len) + callable(3) * 10 + callable(Scaler(1)) * 100


@case(T)
def builtin_getattr_default(a):
    return a * getattr(Scaler, "factor", 0) + getattr(Scaler, "missing", 5)


@case(T)
def builtin_hasattr_on_tensor(a):
    if hasattr(a, "shape") and not hasattr(a, "not_an_attribute"):
        return a + 1
    return a - 1


@case(T)
def builtin_chr_ord(a):
    return a + ord("a") - ord(chr(98))


@case(T)
def builtin_bin_hex_oct(a):
    text = bin(5) + hex(255) + oct(8)
    return a + len(text)


@case(T)
def builtin_int_parse(a):
    return a + int("ff", 16) + int("101", 2) + int(" 7 ")


@case(T)
def builtin_float_special(a):
    return torch.clamp(a, min=float("-inf"), max=float("1.5"))


@case(T)
def builtin_bool_of_containers(a):
    n = bool([]) + bool([0]) * 2 + bool({}) * 4 + bool("x") * 8 + bool(None) * 16
    return a + n


@case(T)
def builtin_iter_next_default(a):
    it = iter([1])
    first = next(it)
    second = next(it, 9)
    return a + first * 10 + second


@case(T)
def builtin_range_negative_step(a):
    return a + sum(range(10, 0, -3))


@case(T)
def builtin_slice_object(a):
    s = slice(1, None, 2)
    return a[s] + a[slice(None, 2)]


@case(T)
def builtin_str_repr_of_numbers(a):
    text = str(12) + repr(1.5) + str(True)
    return a * len(text)


@case(T)
def builtin_hash_of_constants(a):
    same = hash((1, "a")) == hash((1, "a"))
    return a + same


@case(T)
def builtin_abs_of_float_and_tensor(a):
    return abs(a) + abs(-2.5)


@case(T)
def builtin_type_name(a):
    return a * len(type(3).__name__ + type(a).__name__)


@case(T)
def builtin_vars_of_object(a):
    cfg = Scaler(2)
    return a * vars(cfg)["k"]


@case(T)
def builtin_setattr_delattr(a):
    obj = Scaler(1)
    setattr(obj, "extra", 4)
    value = obj.extra
    delattr(obj, "extra")
    return a * value + hasattr(obj, "extra")


# --- math -------------------------------------------------------------------------------------


@case(T)
def math_constants(a):
    return a * math.pi + math.e - math.tau / 2


@case(T)
def math_sqrt_floor_ceil(a):
    return a + math.sqrt(16) + math.floor(2.7) + math.ceil(2.1)


@case(T)
def math_log_exp(a):
    return a * math.log(math.exp(2.0)) + math.log2(8) + math.log10(1000)


@case(T)
def math_gcd_lcm_prod(a):
    return a + math.gcd(12, 18) + math.lcm(4, 6) + math.prod([1, 2, 3, 4])


@case(T)
def math_comb_perm_factorial(a):
    return a + math.comb(5, 2) + math.perm(4, 2) + math.factorial(4)


@case(T)
def math_isclose_isfinite(a):
    flags = math.isclose(0.1 + 0.2, 0.3) + math.isfinite(1e308) * 2 + math.isnan(float("nan")) * 4
    return a * flags


@case(T)
def math_trig(a):
    return a + math.sin(math.pi / 2) + math.atan2(1.0, 1.0) + math.hypot(3, 4)


@case(T)
def math_degrees_radians(a):
    return a * math.radians(180) + math.degrees(math.pi)


@case(T)
def math_copysign_fabs_trunc(a):
    return a + math.copysign(2.0, -1.0) + math.fabs(-3) + math.trunc(-2.7)


@case(T)
def math_fsum_inf(a):
    big = math.fsum([0.1] * 10)
    return torch.clamp(a * big, max=math.inf)


@case(T)
def math_of_shape(a):
    return a * math.sqrt(a.shape[0]) + math.log(a.size(1))


@case(T)
def math_isqrt_modf(a):
    frac, whole = math.modf(3.25)
    return a + math.isqrt(17) + frac + whole


# --- operator ---------------------------------------------------------------------------------


@case(T, U)
def operator_on_tensors(a, b):
    return operator.sub(operator.mul(a, b), operator.truediv(a, 2))


@case(T)
def operator_neg_pos_abs(a):
    return operator.neg(a) + operator.abs(a) + operator.pos(a)


@case(T)
def operator_itemgetter(a):
    rows = operator.itemgetter(0, 2)(a)
    return rows[0] + rows[1]


@case(T)
def operator_itemgetter_dict(a):
    d = {"x": 2, "y": 3}
    get = operator.itemgetter("y")
    return a * get(d)


@case(T)
def operator_attrgetter(a):
    shape = operator.attrgetter("shape")(a)
    return a + shape[0]


@case(T)
def operator_methodcaller(a):
    return operator.methodcaller("sum", 0)(a)


@case(T)
def operator_contains_not(a):
    return a + operator.contains([1, 2], 2) + operator.not_(0) * 2 + operator.truth(3) * 4


@case(T, U)
def operator_matmul(a, b):
    return operator.matmul(a, b.t())


@case(T)
def operator_inplace(a):
    xs = [1]
    xs = operator.iadd(xs, [2, 3])
    return a * len(xs) + operator.index(4)


@case(T)
def operator_comparisons(a):
    flags = operator.lt(1, 2) + operator.ge(3, 3) * 2 + operator.is_(None, None) * 4
    return a + flags


@case(T)
def operator_getitem_setitem(a):
    d = {}
    operator.setitem(d, "k", 5)
    return a + operator.getitem(d, "k")


@case(T, U)
def reduce_operator_add(a, b):
    return functools.reduce(operator.add, [a, b, a * 2])


# --- dicts ------------------------------------------------------------------------------------


@case(T)
def dict_get_pop_setdefault(a):
    d = {"a": 1}
    b = d.get("b", 2)
    c = d.setdefault("c", 3)
    removed = d.pop("a")
    return a * (b + c + removed) + len(d)


@case(T)
def dict_popitem_order(a):
    d = {"x": 1, "y": 2, "z": 3}
    key, value = d.popitem()
    return a * value + len(key) + len(d)


@case(T, U)
def dict_update_kwargs_and_pairs(a, b):
    d = {"a": a}
    d.update(b=b)
    d.update([("c", a + b)])
    return d["a"] + d["b"] * d["c"]


@case(T, U)
def dict_merge_operator(a, b):
    left = {"a": a, "b": 1}
    right = {"b": b}
    merged = left | right
    left |= {"c": 2}
    return merged["a"] + merged["b"] * left["c"]


@case(T, U)
def dict_unpack_literal(a, b):
    base = {"a": a}
    extra = {"b": b}
    d = {**base, **extra, "c": 3}
    return d["a"] + d["b"] * d["c"]


@case(T)
def dict_items_loop(a):
    weights = {"a": 1.0, "b": 2.0, "c": 0.5}
    out = a
    for name, w in weights.items():
        out = out + w * len(name)
    return out


@case(T)
def dict_keys_values_views(a):
    d = {"a": 1, "b": 2}
    keys = d.keys()
    d["c"] = 3
    return a * len(keys) + sum(d.values()) + ("c" in keys)


@case(T)
def dict_comprehension_filter(a):
    squares = {k: k * k for k in range(6) if k % 2}
    return a + squares[3] + len(squares)


@case(T)
def dict_int_and_tuple_keys(a):
    d = {1: "one", (2, 3): "pair"}
    return a * len(d[(2, 3)]) + len(d[1])


@case(T, U)
def dict_of_tensors_returned(a, b):
    out = {}
    out["sum"] = a + b
    out["diff"] = a - b
    return out


@case(T)
def dict_copy_independent(a):
    d = {"k": 1}
    e = d.copy()
    e["k"] = 5
    return a * d["k"] + e["k"]


@case(T)
def dict_clear_and_reuse(a):
    d = {"a": 1, "b": 2}
    d.clear()
    d["z"] = 7
    return a + len(d) + d["z"]


@case(T)
def dict_reversed_keys(a):
    d = {"a": 1, "bb": 2, "ccc": 3}
    return a * len(next(reversed(d)))


@case(T)
def dict_equality(a):
    return a + ({"a": 1, "b": 2} == {"b": 2, "a": 1}) + ({1: 2} != {1: 3}) * 2


@case(T)
def dict_fromkeys_builtin(a):
    d = dict.fromkeys(["x", "y"], 2)
    return a * d["x"] + len(d)


@case(T)
def dict_fromkeys_defaultdict(a):
    d = collections.defaultdict.fromkeys(["a", "b"], 0)
    d["a"] += 3
    return a + d["a"], d


@case(T)
def dict_fromkeys_defaultdict_string(a):
    d = collections.defaultdict.fromkeys("ab", 1)
    return a * d["b"], type(d).__name__, d.default_factory


@case(T)
def dict_fromkeys_ordered(a):
    d = collections.OrderedDict.fromkeys(("p", "q"))
    d["q"] = 4
    return a * d["q"], list(d)


@case(T)
def dict_fromkeys_user_subclass(a):
    d = Registry.fromkeys(["m", "n"], 3)
    return a * d["m"], type(d).__name__


@case(T)
def ordered_dict_move_to_end(a):
    d = collections.OrderedDict(a=1, b=2, c=3)
    d.move_to_end("a")
    return a * list(d)[-1].__len__() + list(d.values())[0]


@case(T, U)
def defaultdict_list_grouping(a, b):
    groups = collections.defaultdict(list)
    for key, t in [("x", a), ("y", b), ("x", b)]:
        groups[key].append(t)
    return torch.stack(groups["x"]).sum(0) + len(groups["y"])


@case(T)
def defaultdict_int_counter(a):
    counts = collections.defaultdict(int)
    for ch in "abracadabra":
        counts[ch] += 1
    return a * counts["a"] + counts["z"]


@case(T, graphs=1, breaks=2)  # Counter counts in C (_count_elements); heapq makes an object()
def counter_most_common(a):
    c = collections.Counter("mississippi")
    letter, n = c.most_common(1)[0]
    return a * n + len(letter)


@case(T)
def chainmap_lookup(a):
    cm = collections.ChainMap({"a": 1}, {"a": 2, "b": 3})
    return a * cm["a"] + cm["b"]


# --- lists ------------------------------------------------------------------------------------


@case(T, U)
def list_insert_remove_index(a, b):
    xs = [1, 2, 3]
    xs.insert(1, 7)
    xs.remove(2)
    return a * xs.index(3) + b * xs[1]


@case(T)
def list_count_reverse(a):
    xs = [1, 2, 2, 3, 2]
    xs.reverse()
    return a * xs.count(2) + xs[0]


@case(T)
def list_sort_key(a):
    xs = ["ccc", "a", "bb"]
    xs.sort(key=len, reverse=True)
    return a * len(xs[0]) + len(xs[-1])


@case(T, U)
def list_of_tensors_stack_cat(a, b):
    parts = [a, b]
    parts += [a * 2]
    return torch.stack(parts).sum(0), torch.cat(parts[:2], dim=1)


@case(T)
def list_slice_assign_and_del(a):
    xs = [0, 1, 2, 3, 4, 5]
    xs[1:3] = [9]
    del xs[::2]
    return a + sum(xs) + len(xs)


@case(T)
def list_repeat_and_concat(a):
    xs = [1] * 3 + [2, 3]
    return a * len(xs) + xs[-1]


@case(T)
def list_comparison(a):
    return a + ([1, 2] < [1, 3]) + ([1, 2] == [1, 2]) * 2 + ([2] > [1, 9]) * 4


@case(T)
def list_nested_mutation(a):
    grid = [[0] * 3 for _ in range(2)]
    grid[1][2] = 5
    return a + grid[1][2] + sum(map(sum, grid))


@case(T)
def list_star_unpack_middle(a):
    first, *middle, last = [1, 2, 3, 4, 5]
    return a * len(middle) + first + last


@case(T)
def list_pop_index(a):
    xs = [10, 20, 30]
    mid = xs.pop(1)
    return a + mid + len(xs)


@case(T)
def list_extend_generator(a):
    xs = []
    xs.extend(i * i for i in range(4))
    return a + xs[-1]


@case(T)
def list_copy_is_new(a):
    xs = [1, 2]
    ys = xs.copy()
    ys.append(3)
    return a + len(xs) * 10 + len(ys)


@case(T)
def list_of_rows_via_unbind(a):
    rows = list(a.unbind(0))
    rows[0] = rows[0] * 0
    return torch.stack(rows)


@case(T)
def list_enumerate_reversed(a):
    out = a
    for i, w in enumerate(reversed([1, 2, 3])):
        out = out + i * w
    return out


@case(T)
def list_in_with_tensor_shape(a):
    return a + (a.shape[0] in [2, 4]) + (a.shape[1] not in (3,)) * 2


# --- tuples and namedtuples -------------------------------------------------------------------


@case(T)
def tuple_count_index(a):
    t = (3, 1, 3, 2)
    return a * t.count(3) + t.index(2)


@case(T)
def tuple_comparison_and_concat(a):
    t = (1, 2) + (3,)
    return a + (t > (1, 2)) + len(t * 2)


@case(T, U)
def tuple_nested_unpack(a, b):
    (x, (y, z)), w = (a, (b, 2)), 3
    return x * z + y * w


@case(T)
def tuple_from_generator(a):
    t = tuple(i + 1 for i in range(3))
    return a * t[-1]


@case(T, U)
def namedtuple_fields_and_replace(a, b):
    p = Pair(a, b)
    q = p._replace(right=a)
    return q.left + q.right + len(Pair._fields)


@case(T, U)
def namedtuple_asdict(a, b):
    p = Pair(left=a, right=b)
    d = p._asdict()
    return d["left"] - d["right"]


@case(T)
def namedtuple_make(a):
    p = Pair._make([1, 2])
    return a * p.right + p[0]


@case(T)
def typed_namedtuple_method(a):
    p = Point(3.0, 4.0)
    return a * p.norm2() + Point(1.0).y


@case(T)
def namedtuple_unpack_and_index(a):
    left, right = Pair(2, 5)
    return a * left + Pair(1, 2)[-1] + right


@case(T)
def torch_max_namedtuple(a):
    result = a.max(dim=1)
    return result.values + result.indices, result[0]


@case(T)
def torch_sort_namedtuple(a):
    values, indices = torch.sort(a, dim=0, descending=True)
    return values * 2, indices


# --- sets -------------------------------------------------------------------------------------


@case(T)
def set_algebra(a):
    s = {1, 2, 3}
    t = {2, 3, 4}
    n = len(s | t) + len(s & t) * 10 + len(s - t) * 100 + len(s ^ t) * 1000
    return a + n


@case(T)
def set_methods(a):
    s = set()
    s.add(1)
    s.update([2, 3])
    s.discard(5)
    s.remove(2)
    return a + len(s) + s.issubset({1, 3, 4}) * 10 + s.isdisjoint({7}) * 100


@case(T)
def set_comprehension_sorted(a):
    s = {x % 3 for x in range(10)}
    return a + sorted(s)[-1] + len(s)


@case(T)
def frozenset_membership(a):
    allowed = frozenset({"relu", "gelu"})
    return F.relu(a) if "relu" in allowed else a


@case(T)
def set_union_method_chain(a):
    s = {1}.union({2}, [3, 4]).intersection(range(3, 9))
    return a * len(s)


@case(T)
def set_pop_and_clear(a):
    s = {5}
    n = s.pop()
    s.clear()
    return a + n + len(s)


# --- strings ----------------------------------------------------------------------------------


@case(T)
def str_split_join_strip(a):
    parts = "  a, b ,c ".strip().split(",")
    joined = "-".join(p.strip() for p in parts)
    return a * len(joined)


@case(T)
def str_replace_case(a):
    s = "Hello World".replace("World", "There").lower().upper()
    return a + len(s) + s.startswith("HELLO") + s.endswith("x")


@case(T)
def str_percent_format(a):
    s = "%d-%s-%.1f" % (3, "x", 2.25)
    return a * len(s)


@case(T)
def str_format_spec(a):
    s = "{:>6}|{:<4}|{:^5}|{:08.3f}".format("r", "l", "c", 3.14159)
    return a + len(s)


@case(T)
def fstring_with_shape(a):
    label = f"{a.shape[0]}x{a.shape[1]}:{a.dtype}"
    return a * len(label)


@case(T)
def fstring_conversions(a):
    name = "ab"
    s = f"{name!r} {name!s} {3:03d} {2.5:e}"
    return a + len(s)


@case(T)
def str_find_partition(a):
    s = "key=value"
    head, sep, tail = s.partition("=")
    return a + s.find("=") + len(head) * 10 + len(tail) * 100 + s.rfind("z")


@case(T)
def str_predicates(a):
    n = "123".isdigit() + "abc".isalpha() * 2 + " ".isspace() * 4 + "Ab".istitle() * 8
    return a * n


@case(T)
def str_zfill_center_ljust(a):
    s = "7".zfill(3) + "x".center(5, "*") + "y".ljust(3, ".")
    return a + len(s)


@case(T)
def str_index_slice_multiply(a):
    s = "abcdef"
    t = s[1:4] + s[-1] + s[::2] * 2
    return a * len(t) + (t[0] == "b")


@case(T)
def str_in_and_count(a):
    s = "banana"
    return a + ("nan" in s) + s.count("a") * 2


@case(T)
def str_splitlines_and_title(a):
    lines = "one\ntwo\nthree".splitlines()
    return a * len(lines) + len(lines[-1].title())


@case(T)
def str_encode_len(a):
    return a + len("héllo".encode("utf-8"))


@case(T)
def str_comparison_sorting(a):
    names = sorted(["beta", "Alpha", "gamma"], key=str.lower)
    return a * len(names[0]) + (names[0] < names[1])


@case(T)
def str_join_method_via_class(a):
    return a * len(str.join("+", ["a", "b", "c"]))


# --- functools --------------------------------------------------------------------------------


@case(T)
def partial_with_keywords(a):
    clamp01 = functools.partial(torch.clamp, min=0.0, max=1.0)
    return clamp01(a)


@case(T)
def partial_of_partial(a):
    def affine(x, w, b):
        return x * w + b

    scale = functools.partial(affine, w=2.0)
    shift = functools.partial(scale, b=1.0)
    return shift(a)


@case(T)
def partial_attributes(a):
    p = functools.partial(max, 3)
    return a * p(1) + len(p.args)


@case(T)
def partial_positional_and_call_time_kwargs(a):
    def blend(x, y, alpha=0.5):
        return x * alpha + y * (1 - alpha)

    mix = functools.partial(blend, a)
    return mix(a * 2, alpha=0.25)


@case(T)
def reduce_with_lambda_initial(a):
    return functools.reduce(lambda acc, k: acc * k + 1, [2, 3], a)


@case(T)
def wraps_preserves_name(a):
    return add_two_twice(a), add_two_twice.__name__


@case(T)
def lru_cached_function(a):
    return a * cached_power(3)


@case(T)
def decorator_defined_inside(a):
    def logged(fn):
        def inner(x):
            return fn(x) * 2

        return inner

    @logged
    def sq(x):
        return x * x

    return sq(a)


# --- itertools --------------------------------------------------------------------------------


@case(T)
def itertools_product_repeat(a):
    out = a
    for i, j in itertools.product(range(2), repeat=2):
        out = out + i * 2 + j
    return out


@case(T)
def itertools_accumulate(a):
    running = list(itertools.accumulate([1, 2, 3, 4]))
    return a * running[-1] + running[1]


@case(T)
def itertools_accumulate_func(a):
    best = list(itertools.accumulate([3, 1, 4, 1, 5], max))
    return a + best[-1] + best[2]


@case(T)
def itertools_islice_count(a):
    evens = list(itertools.islice(itertools.count(0, 2), 3))
    return a + sum(evens)


@case(T)
def itertools_zip_longest(a):
    pairs = list(itertools.zip_longest([1, 2, 3], [10], fillvalue=0))
    return a + pairs[2][1] + pairs[0][1]


@case(T)
def itertools_permutations_combinations(a):
    n = len(list(itertools.permutations(range(3), 2)))
    m = len(list(itertools.combinations("abcd", 3)))
    return a + n * 10 + m


@case(T)
def itertools_repeat_starmap(a):
    values = list(itertools.starmap(pow, zip([2, 3], itertools.repeat(2))))
    return a + values[1]


@case(T)
def itertools_takewhile_dropwhile(a):
    small = list(itertools.takewhile(lambda v: v < 3, [1, 2, 5, 1]))
    rest = list(itertools.dropwhile(lambda v: v < 3, [1, 2, 5, 1]))
    return a + len(small) * 10 + len(rest)


@case(T, U)
def itertools_chain_tensors(a, b):
    out = a
    for t in itertools.chain([a], (b,), [a * 2]):
        out = out + t
    return out


@case(T)
def itertools_pairwise(a):
    diffs = [y - x for x, y in itertools.pairwise([1, 4, 9, 16])]
    return a + diffs[-1]


@case(T)
def itertools_cycle_islice(a):
    seq = list(itertools.islice(itertools.cycle([1, 2]), 5))
    return a + sum(seq)


@case(T)
def itertools_compress(a):
    kept = list(itertools.compress("abcdef", [1, 0, 1, 0, 1, 1]))
    return a * len(kept)


@case(T)
def itertools_groupby(a):
    runs = [(k, len(list(g))) for k, g in itertools.groupby("aaabbc")]
    return a + runs[0][1] * 10 + len(runs)


# --- closures, defaults, *args and **kwargs -----------------------------------------------------


@case(T)
def closure_nonlocal_accumulator(a):
    total = 0

    def add(k):
        nonlocal total
        total += k

    for k in (1, 2, 3):
        add(k)
    return a * total


@case(T)
def closure_late_binding(a):
    fns = [lambda x: x * i for i in range(3)]
    return fns[0](a) + fns[1](a)


@case(T)
def closure_default_capture(a):
    fns = [lambda x, i=i: x * i for i in range(3)]
    return fns[0](a) + fns[1](a)


@case(T)
def closure_three_levels(a):
    k = 2

    def outer():
        m = 3

        def inner(x):
            return x * k + m

        return inner

    return outer()(a)


@case(T)
def closure_over_tensor(a):
    shift = a.mean()

    def center(x):
        return x - shift

    return center(a)


@case(T)
def closure_mutates_list(a):
    seen = []

    def record(x):
        seen.append(x.shape[0])
        return x + 1

    y = record(record(a))
    return y, seen


@case(T)
def recursion_on_ints(a):
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    return a + fib(7)


@case(T)
def default_argument_none(a):
    def scale(x, factor=None):
        return x * (2 if factor is None else factor)

    return scale(a) + scale(a, 3)


@case(T)
def keyword_only_with_default(a):
    def fn(x, *, bias=1.0, gain):
        return x * gain + bias

    return fn(a, gain=2.0)


@case(T)
def positional_only(a):
    def fn(x, k, /, m=1):
        return x * k + m

    return fn(a, 2, m=3)


@case(T, U)
def args_forwarding(a, b):
    def inner(*tensors, op=torch.add):
        return op(*tensors)

    def outer(*args, **kwargs):
        return inner(*args, **kwargs)

    return outer(a, b, op=torch.mul)


@case(T)
def kwargs_merging(a):
    def fn(x, **kw):
        return x * kw.get("scale", 1) + kw.get("shift", 0)

    defaults = {"scale": 2}
    return fn(a, **defaults, shift=3)


@case(T)
def kwargs_inspection(a):
    def fn(**kw):
        return sorted(kw), len(kw)

    names, n = fn(b=1, a=2)
    return a * n, names


@case(T, U)
def star_args_unpack_tuple_and_list(a, b):
    def fn(x, y, z):
        return x + y * z

    return fn(*(a,), *[b, 2])


@case(T)
def default_evaluated_once(a):
    def fn(x, cache=[]):  # noqa: B006 (the shared default is the point)
        return x * len(cache)

    return fn(a)


@case(T)
def lambda_immediately_called(a):
    return (lambda x, y=2: x**y)(a)


@case(T)
def function_attributes(a):
    def helper(x):
        """Doc."""
        return x

    return a * len(helper.__name__) + len(helper.__qualname__), helper.__doc__


# --- classes and objects ------------------------------------------------------------------------


@case(T)
def dataclass_default_factory(a):
    cfg = Config()
    return a * cfg.scale + cfg.shift + len(cfg.names)


@case(T)
def dataclass_replace_and_fields(a):
    cfg = dataclasses.replace(Config(), scale=3.0)
    names = [f.name for f in dataclasses.fields(cfg)]
    return a * cfg.scale, names


@case(T)
def dataclass_frozen_equality(a):
    x, y = Frozen(2), Frozen(2, "f")
    return a * (x == y) + x.k


@case(T)
def dataclass_post_init(a):
    w = WithPost(2, 3)
    return a * w.total


@case(T)
def dataclass_is_dataclass_and_fields(a):
    f = Frozen(3, "g")
    if dataclasses.is_dataclass(f) and not dataclasses.is_dataclass(3):
        return a * len(dataclasses.fields(Frozen)) + f.k, f.label
    return a


@case(T)
def class_property_classmethod_staticmethod(a):
    s = Scaler.make(1)
    return Scaler.offset(s(a)) + s.double


@case(T)
def class_attribute_via_instance(a):
    s = Scaler(1)
    return a * s.factor + Scaler.factor


@case(T)
def class_callable_object(a):
    return Scaler(3)(a)


@case(T)
def class_super_call(a):
    return Child().scale(a)


@case(T)
def class_special_methods(a):
    bag = Bag([1, 2, 3])
    return a * len(bag) + bag[1] + (3 in bag) + sum(bag)


@case(T)
def class_slots(a):
    s = Slotted(2, 3)
    s.b = 4
    return a * s.a + s.b


@case(T)
def class_operators_overloaded(a):
    v = Vec(2) + Vec(3) * 2
    return a * v.v + (v == Vec(8))


@case(T)
def class_isinstance_hierarchy(a):
    obj = Child()
    return (
        a + isinstance(obj, Base) + isinstance(obj, (int, Child)) * 2 + type(obj).__name__.__len__()
    )


@case(T)
def class_attribute_mutation_restored(a):
    obj = Scaler(1)
    obj.k = obj.k + 4
    return obj(a)


@case(T)
def user_dict_subclass(a):
    r = Registry()
    r["w"] = 2
    return a * r["w"] + len(r) + isinstance(r, dict)


# --- enums --------------------------------------------------------------------------------------


@case(T)
def enum_value_and_name(a):
    c = Color.GREEN
    return a * c.value + len(c.name)


@case(T)
def enum_comparison_and_lookup(a):
    c = Color(1)
    return a + (c is Color.RED) + (c == Color.GREEN) * 2 + Color["GREEN"].value * 4


@case(T)
def int_enum_arithmetic(a):
    return a * (Level.HIGH + 1) + (Level.LOW < Level.HIGH)


@case(T)
def enum_as_dict_key(a):
    scale = {Color.RED: 2.0, Color.GREEN: 3.0}
    return a * scale[Color.GREEN]


@case(T)
def enum_iteration_and_len(a):
    return a + len(Color) + sum(m.value for m in Color)


@case(T)
def flag_combination(a):
    p = Perm.READ | Perm.WRITE
    return a * (Perm.WRITE in p) + p.value


# --- control flow -------------------------------------------------------------------------------


@case(T)
def walrus_in_condition(a):
    if (n := a.shape[0]) > 2:
        return a * n
    return a


@case(T)
def chained_comparison(a):
    k = a.dim()
    return a + (1 < k <= 2) + (0 < k < 1) * 2


# `match` has no handlers in the VM yet (MATCH_SEQUENCE, MATCH_MAPPING, MATCH_CLASS): the
# frame runs eagerly, and says so.
@case(T, graphs=0, breaks=1)
def match_statement_tuple(a):
    match a.shape:
        case (4, n):
            return a * n
        case _:
            return a


@case(T, graphs=0, breaks=1)
def match_statement_mapping(a):
    cfg = {"mode": "scale", "k": 3}
    match cfg:
        case {"mode": "shift", "k": k}:
            return a + k
        case {"mode": "scale", "k": k}:
            return a * k
    return a


@case(T, graphs=0, breaks=1)
def match_statement_class(a):
    p = Point(2.0, 1.0)
    match p:
        case Point(x=x, y=0.0):
            return a * x
        case Point(x=x, y=y):
            return a * x + y
    return a


@case(T)
def for_else_no_break(a):
    for i in range(3):
        if i == 5:
            break
    else:
        a = a + 10
    return a


@case(T)
def while_with_counter(a):
    n, out = 0, a
    while n < 4:
        n += 1
        if n == 2:
            continue
        out = out + n
    return out


@case(T)
def try_except_value_error(a):
    try:
        k = int("not a number")
    except ValueError:
        k = 3
    return a * k


@case(T)
def try_except_key_error_finally(a):
    d = {"a": 1}
    steps = []
    try:
        v = d["b"]
    except KeyError as err:
        v = len(err.args)
    finally:
        steps.append("done")
    return a + v + len(steps)


@case(T)
def raise_and_catch_custom(a):
    try:
        raise Stop("early")
    except Stop as e:
        return a * len(str(e)), e.args


@case(T)
def try_else_branch(a):
    try:
        k = 2
    except Exception:
        k = 0
    else:
        k = k * 3
    return a * k


@case(T)
def generator_function(a):
    def squares(n):
        for i in range(n):
            yield i * i

    return a + sum(squares(4))


@case(T, U)
def generator_yield_from(a, b):
    def inner():
        yield a
        yield b

    def outer():
        yield from inner()
        yield a + b

    return torch.stack(list(outer()))


@case(T)
def generator_next_and_stopiteration(a):
    gen = (i for i in range(1))
    first = next(gen)
    try:
        next(gen)
        tail = 0
    except StopIteration:
        tail = 5
    return a + first + tail


@case(T)
def global_read_dict_and_tuple(a):
    return a * MULTIPLIERS["b"] + LIMITS[1]


@case(T)
def global_dict_written(a):
    STATE["rows"] = a.shape[0]
    return a + 1


@case(T)
def conditional_expression_chain(a):
    k = a.shape[1]
    mode = "small" if k < 2 else "mid" if k < 5 else "big"
    return a * len(mode)


@case(T)
def del_local_and_reassign(a):
    tmp = a * 2
    out = tmp + 1
    del tmp
    tmp = 3
    return out * tmp


@case(T)
def is_and_is_not_none(a, b=None):
    if b is None and a is not None:
        return a + 1
    return a


# --- tensor methods -----------------------------------------------------------------------------


@case(B)
def tensor_flatten_unflatten(b):
    flat = b.flatten(1)
    return flat.unflatten(1, (3, 4)) + b


@case(B)
def tensor_permute_contiguous_view(b):
    return b.permute(2, 0, 1).contiguous().view(4, -1)


@case(T)
def tensor_masked_fill_where(a):
    mask = a > 0
    return a.masked_fill(mask, 0.0) + torch.where(mask, a, torch.zeros_like(a))


@case(T)
def tensor_clamp_inplace_on_clone(a):
    y = a.clone()
    y.clamp_(min=-0.5, max=0.5)
    y.mul_(2).add_(1)
    return y


@case(T, U)
def tensor_type_as_and_new(a, b):
    z = a.new_zeros(2, 3)
    o = a.new_ones((2,))
    f = a.new_full((1, 3), 7.0)
    return b.type_as(a) + z.sum() + o.sum() + f


@case(T)
def tensor_dtype_conversions(a):
    return a.double().float() + a.long().to(torch.float32) + a.to(dtype=torch.half).float()


@case(T)
def tensor_reductions_keepdim(a):
    return (
        a.sum(dim=1, keepdim=True) + a.mean(0, keepdim=True) + a.std(dim=0) + a.var(1, keepdim=True)
    )


@case(T)
def tensor_topk_argmax(a):
    values, indices = a.topk(2, dim=1)
    return values.sum(1) + a.argmax(dim=1) + indices[:, 0]


@case(T)
def tensor_split_sizes_chunk(a):
    left, right = a.split([1, 2], dim=1)
    c0, c1 = a.chunk(2)
    return left * right.sum(1, keepdim=True), c0 + c1


@case(T, I)
def tensor_gather_index_select(a, idx):
    picks = torch.gather(a, 1, (idx % 3)[:, :2])
    rows = a.index_select(0, torch.tensor([0, 2]))
    return picks, rows


@case(T)
def tensor_scatter_add(a):
    index = torch.tensor([[0, 1, 2], [2, 1, 0]])
    return torch.zeros(3, 3).scatter_add(0, index, a[:2])


@case(T, V)
def tensor_expand_as_repeat(a, v):
    return v.expand_as(a) + v.repeat(4, 1) + v.unsqueeze(0).tile(4, 1)


@case(T)
def tensor_roll_flip_tril(a):
    sq = a[:3]
    return sq.roll(1, 0) + sq.flip(1) + sq.tril() + sq.triu(1)


@case(T, U)
def tensor_einsum_outer(a, b):
    return torch.einsum("ij,kj->ik", a, b), torch.outer(a[0], b[0])


@case(B)
def tensor_bmm_baddbmm(b):
    m = b.transpose(1, 2)
    return torch.bmm(b, m) + torch.baddbmm(torch.zeros(2, 3, 3), b, m, alpha=0.5)


@case(T, U, V)
def tensor_lerp_addcmul(a, b, v):
    return torch.lerp(a, b, 0.3) + torch.addcmul(a, b, v, value=2.0) + a.addcdiv(b, b.abs() + 1)


@case(T)
def tensor_activations(a):
    return torch.sigmoid(a) + a.tanh() + torch.erf(a) + F.silu(a) + F.softplus(a)


@case(T)
def tensor_softmax_family(a):
    return a.softmax(-1) + a.log_softmax(dim=0).exp() + F.normalize(a, dim=1)


@case(T)
def tensor_size_stride_queries(a):
    s = a.size(-1) + a.stride(0) + a.stride()[1] + a.dim() + a.numel() + a.nelement()
    return a * s + a.element_size()


@case(T)
def tensor_contiguity_queries(a):
    t = a.t()
    return a + t.is_contiguous() + a.is_contiguous() * 2 + t.contiguous().is_contiguous() * 4


@case(T)
def tensor_shape_arithmetic(a):
    rows, cols = a.shape
    new_shape = a.shape[:-1] + (cols, 1)
    return a.reshape(new_shape).squeeze(-1) * rows


@case(T)
def tensor_size_equality(a):
    return a + (a.shape == torch.Size([4, 3])) + (a.size() == (4, 3)) * 2


@case(T)
def tensor_device_and_dtype_props(a):
    n = (a.device.type == "cpu") + a.dtype.is_floating_point * 2 + a.is_cpu * 4
    return a * n + (a.dtype.itemsize)


@case(T)
def tensor_finfo_iinfo(a):
    eps = torch.finfo(a.dtype).eps
    top = torch.iinfo(torch.int8).max
    return a * top + eps


@case(T)
def tensor_unbind_and_sum(a):
    total = 0
    for row in a.unbind():
        total = total + row
    return total


@case(T)
def tensor_narrow_select(a):
    return a.narrow(0, 1, 2) + a.select(1, 0).unsqueeze(1)


@case(T)
def tensor_diag_and_norm(a):
    sq = a[:3]
    return torch.diag(sq).sum() + torch.linalg.vector_norm(a, dim=1)


@case(T)
def tensor_cumulative_ops(a):
    return a.cumsum(0) + a.cumprod(1) + torch.cummax(a, dim=0).values


@case(T, U)
def tensor_comparison_ops(a, b):
    return (a > b).float() + torch.eq(a, a).int() + a.ge(0).to(a.dtype) + torch.isclose(a, b).long()


@case(T)
def tensor_new_tensor_from_python(a):
    scale = torch.tensor([1.0, 2.0, 3.0])
    return a * scale + torch.as_tensor([0.5]) + torch.full((3,), 2.0)


@case(T)
def tensor_arange_linspace(a):
    return a + torch.arange(3) * 0.1 + torch.linspace(0, 1, 3)


@case(T)
def tensor_item_like_python_scalar_arith(a):
    return a * 2**3 + 7 // 2 - 7 % 3 + 1e-3


@case(T)
def tensor_math_dunder_reflected(a):
    return 1 - a + 2 / (a.abs() + 1) + 3 ** a.clamp(max=1)


@case(T)
def tensor_inplace_indexing(a):
    y = a.clone()
    y[0] = 0.0
    y[:, 1] += 1.0
    y[y > 1] = 1.0
    return y


@case(T)
def tensor_advanced_indexing(a):
    return a[[0, 2]], a[None, ..., 1], a[[1, 3], [0, 2]]


@case(T, graphs=1, breaks=1)  # a mask's number of True items is data: a graph break
def tensor_bool_list_index(a):
    return a + 1, a[:, [True, False, True]]


@case(T)
def tensor_fill_and_zero(a):
    y = torch.empty(4, 3)
    y.fill_(2.0)
    z = a.clone().zero_()
    return y + z


# --- torch queries ----------------------------------------------------------------------------


@case(T)
def torch_is_tensor_and_floating(a):
    n = torch.is_tensor(a) + torch.is_floating_point(a) * 2 + torch.is_complex(a) * 4
    return a * n + torch.numel(a)


@case(T)
def torch_default_dtype_branch(a):
    if a.dtype == torch.get_default_dtype():
        return a + 1
    return a - 1


@case(T)
def torch_grad_mode_queries(a):
    with torch.no_grad():
        inside = torch.is_grad_enabled()
    outside = torch.is_grad_enabled()
    return a + inside * 10 + outside


@case(T)
def torch_set_grad_enabled_block(a):
    with torch.set_grad_enabled(False):
        y = a * 2
    return y, y.requires_grad


@case(T)
def torch_promote_and_result_type(a):
    if torch.promote_types(torch.int32, torch.float16) == torch.float16:
        return a.to(torch.result_type(a, 1)) + 1
    return a


@case(T)
def torch_can_cast(a):
    return (
        a + torch.can_cast(torch.float32, torch.int32) + torch.can_cast(torch.int8, torch.int16) * 2
    )


@case(T, V)
def torch_broadcast_shapes(a, v):
    shape = torch.broadcast_shapes(a.shape, v.shape)
    return a.expand(shape) + v


@case(T)
def torch_compiling_queries(a):
    if not torch.jit.is_scripting() and not torch.jit.is_tracing():
        return a + 1
    return a - 1


@case(T)
def torch_distributed_available(a):
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return a + 1
    return a - 1


@case(T)
def torch_distributed_initialized(a):
    if torch.distributed.is_initialized():
        return a + 1
    return a - 1


@case(T)
def torch_cuda_available(a):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    return a.to(device) + 1


@case(T)
def torch_device_objects(a):
    d = torch.device("cpu")
    return a.to(d) + (d.type == "cpu") + (a.device == d) * 2


@case(T)
def torch_size_object(a):
    s = torch.Size([2, 6])
    return a.reshape(s).sum(1) + s.numel() + len(s)


@case(T)
def torch_dtype_attributes(a):
    dt = torch.float16
    return a.to(dt).float() + dt.is_floating_point + dt.itemsize


# Modules made outside the function: once torch._dynamo is imported (another test may do it),
# its mutation guard wraps nn.Module.__init__ with a call to id(), a graph break.
SOFTMAX, RELU = torch.nn.Softmax(dim=-1), torch.nn.ReLU()


@case(T)
def torch_module_objects(a):
    return SOFTMAX(a) + RELU(a)


# --- NumPy: traced as tensor operations (torch._numpy); its random generator breaks -------------


@case(T, graphs=1, breaks=1)
def numpy_random_rand(a):
    noise = np.random.rand(3)
    return a + 1, noise.shape


@case(T, graphs=1, breaks=2)
def numpy_default_rng(a):
    values = np.random.default_rng(0).random(3)
    return a * 2, values.shape


# float() reads the sum's data: a break. torch sums float32 in another order than NumPy
# does (its last bits differ): rounded, the answer is eager's.
@case(T, graphs=1, breaks=1)
def numpy_array_from_tensor(a):
    y = a * 2
    total = np.sum(y.detach().numpy())
    return y + 1, round(float(total), 3)


@case(T)
def numpy_constant_array(a):
    w = np.array([1.0, 2.0, 3.0])
    return a + torch.from_numpy(w).float()


# --- raising in eager: the compiled function raises the same ------------------------------------


@case(T, graphs=0)
def raises_zero_division(a):
    return a * (1 // 0)


@case(T, graphs=0)
def raises_type_error_on_call(a):
    def fn(x, y):
        return x + y

    return fn(a)


@case(T, graphs=0)
def raises_attribute_error(a):
    return a.not_a_method()


@case(T, graphs=0)
def raises_unpack_mismatch(a):
    x, y = [a, a, a]
    return x + y


@case(T, graphs=0)
def raises_missing_dict_key(a):
    return a * {"a": 1}["b"]


# --- more of the standard library ---------------------------------------------------------------


@case(T)
def wraps_inside_the_function(a):
    def logged(fn):
        @functools.wraps(fn)
        def inner(x):
            return fn(x) + 1

        return inner

    @logged
    def double(x):
        return x * 2

    return double(a), double.__name__


# Python 3.11's cached_property takes an RLock (C) in its __get__: a graph break; 3.12's has none.
@case(T, breaks=1 if sys.version_info < (3, 12) else 0)
def cached_property_on_class(a):
    return a * Stats([1, 2, 3]).total


@case(T, U)  # maxlen drops `a` on the left
def deque_operations(a, b):
    d = collections.deque([a, b], maxlen=3)
    d.append(a * 2)
    return d[0] + len(d)


@case(T)
def ordered_dict_popitem_first(a):
    d = collections.OrderedDict(x=1, y=2, z=3)
    key, value = d.popitem(last=False)
    return a * value + len(d), key


@case(T)
def dict_views_set_operations(a):
    d = {"a": 1, "b": 2, "c": 3}
    common = d.keys() & {"b", "c", "z"}
    return a * len(common) + len(d.keys() - {"a"})


@case(T)
def dict_from_zip_and_enumerate(a):
    names = ["w", "b"]
    d = dict(zip(names, [2.0, 0.5]))
    e = dict(enumerate("xy"))
    return a * d["w"] + d["b"], e


@case(T, U)
def sorted_items_by_value(a, b):
    scores = {"a": 3, "b": 1, "c": 2}
    ranked = [k for k, _ in sorted(scores.items(), key=lambda kv: kv[1])]
    tensors = {"a": a, "b": b, "c": a - b}
    return tensors[ranked[0]] + tensors[ranked[-1]], ranked


@case(T, U)
def zip_star_transpose(a, b):
    ids, tensors = zip(*[(1, a), (2, b)])
    return tensors[0] * ids[1] + tensors[1], ids


@case(T)
def str_format_map_and_keywords(a):
    fields = {"name": "x", "n": 3}
    s = "{name}:{n}".format(**fields) + "{0}{1}".format(*"ab") + "{n}".format_map(fields)
    return a * len(s)


@case(T)
def str_translate_and_affixes(a):
    table = str.maketrans("ab", "xy")
    s = "aabbc".translate(table).removeprefix("xx").removesuffix("c")
    return a * len(s), s


@case(T)
def str_rsplit_casefold_expandtabs(a):
    head, tail = "a.b.c".rsplit(".", 1)
    s = "ÄB".casefold() + "x\ty".expandtabs(4)
    return a * len(head) + len(s), tail


@case(T)
def str_of_dtype_and_shape(a):
    name = str(a.dtype).split(".")[-1]
    shape = str(tuple(a.shape))
    return a * len(name) + len(shape) + len(repr(a.dtype)) + len(f"{a.dtype}")


@case(T)
def join_map_str(a):
    s = ",".join(map(str, range(4)))
    return a * len(s)


@case(T)
def int_and_float_methods(a):
    n = (255).bit_length() + len((1024).to_bytes(2, "big")) + (7.0).is_integer()
    num, den = (0.75).as_integer_ratio()
    return a * n + num / den


@case(T)
def int_from_bytes_and_float_fromhex(a):
    return a * int.from_bytes(b"\x01\x02", "big") + float.fromhex("0x1.8p1")


@case(T)
def complex_numbers(a):
    z = complex(3, 4)
    return a * abs(z) + (z * z.conjugate()).real + z.imag


@case(T)
def bytes_operations(a):
    data = b"abc" + bytes([100])
    return a * len(data) + data[0] + data.count(b"a") + len(data.hex())


# --- shapes and sizes -----------------------------------------------------------------------------


@case(B)
def shape_slices_and_star(b):
    head = b.shape[:-1]
    return b.view(-1, *b.shape[2:]).sum(0) + len(head), b.size()[1:]


@case(B)
def shape_math(b):
    n = (
        math.prod(b.shape)
        + max(b.shape)
        + min(b.size())
        + sum(b.shape)
        + operator.mul(*b.shape[:2])
    )
    return b * n + -(-b.shape[0] // 3) + (b.shape[1] + 1) // 2


@case(B)
def shape_to_python_containers(b):
    return b + len(b.shape), tuple(b.shape), list(b.size()), torch.Size(b.shape[1:]).numel()


@case(T)
def shape_to_tensor(a):
    return a + torch.tensor(a.shape).sum() + torch.tensor([a.shape[0], 2]).float().mean()


@case(T)
def dtype_sets_and_dict_keys(a):
    eps = {torch.float32: 1e-5, torch.float16: 1e-3}[a.dtype]
    floating = a.dtype in {torch.float32, torch.float64}
    return a + eps + floating


@case(T, U)
def isinstance_tensor_checks(a, b):
    ok = (
        isinstance(a, torch.Tensor)
        and type(a) is torch.Tensor
        and not isinstance(a, torch.nn.Parameter)
    )
    both = all(isinstance(t, torch.Tensor) for t in (a, b))
    return a + ok + both * 2 + isinstance(a.shape, tuple) * 4


@case(T, U)
def generator_of_numels(a, b):
    return a * sum(t.numel() for t in (a, b)), [t.shape for t in (a, b)]


@case(T, U)
def map_torch_function(a, b):
    return list(map(torch.relu, [a, b])), functools.reduce(torch.mul, [a, b, a])


@case(T, U)
def torch_ops_with_unpacked_kwargs(a, b):
    kw = {"dim": 1, "keepdim": True}
    return a.sum(**kw), torch.cat(tensors=[a, b], dim=0), torch.stack((a, b), dim=-1)


@case(T, U)
def tensor_to_other_tensor(a, b):
    return a.to(b) + b.to(torch.float64).to(a), a.type(torch.float64), a.type()


@case(T)
def tensor_empty_like_fill(a):
    return torch.empty_like(a).fill_(1.5) + a.clone().masked_fill_(a < 0, 0.0)


@case(T)
def tensor_detach_and_data(a):
    return a.detach() + a.clone().detach() * 2 + a.data


@case(T)
def functional_misc(a):
    padded = F.pad(a, (1, 1))
    hot = F.one_hot(torch.tensor([0, 2]), num_classes=3)
    normed = F.layer_norm(a, (3,))
    return padded, hot, normed


@case(B)
def functional_conv_and_interpolate(b):
    w = torch.ones(2, 3, 2) / 6
    return F.conv1d(b, w), F.interpolate(b, scale_factor=2, mode="nearest")


@case(T)
def getattr_on_torch_modules(a):
    act = getattr(F, "relu")
    dtype = getattr(torch, "float64")
    return act(a).to(dtype) + hasattr(torch, "compile")


@case(T)
def assert_with_message_passes(a):
    assert a.shape[0] == 4, "expected four rows"
    assert isinstance(a, torch.Tensor)
    return a + 1


@case(T)
def shape_boolean_logic(a):
    if a.shape[0] > 2 and a.shape[1] < 5 or False:
        return a * 2
    return a


# --- context managers, exceptions, generators -----------------------------------------------------


@case(T)
def user_context_manager(a):
    log = []
    with Recorder(log) as rec:
        y = a * rec.k
    return y + len(log), log


@case(T)
def nullcontext_block(a):
    import contextlib

    with contextlib.nullcontext(2) as k:
        return a * k


@case(T)
def contextmanager_generator(a):
    with scaled(3) as k:
        y = a * k
    return y


@case(T)
def no_grad_decorator_inner(a):
    @torch.no_grad()
    def frozen(x):
        return x * 2

    y = frozen(a)
    return y, y.requires_grad


@case(T)
def enable_grad_inside_no_grad(a):
    with torch.no_grad():
        with torch.enable_grad():
            on = torch.is_grad_enabled()
        off = torch.is_grad_enabled()
    return a + on * 2 + off


@case(T)
def try_finally_with_return(a):
    steps = []
    try:
        return a + 1, steps
    finally:
        steps.append("cleanup")


@case(T)
def nested_try_reraise(a):
    try:
        try:
            {}["missing"]
        except KeyError as err:
            raise ValueError("converted") from err
    except ValueError as err:
        return a * len(err.args[0]), isinstance(err.__cause__, KeyError)


@case(T)
def except_tuple_of_types(a):
    try:
        [1][5]
    except (KeyError, IndexError) as err:
        return a + isinstance(err, IndexError)


@case(T)
def generator_return_value(a):
    def gen():
        yield 1
        return 7

    g = gen()
    next(g)
    try:
        next(g)
    except StopIteration as stop:
        return a * stop.value


@case(T)
def generator_with_send(a):
    def averager():
        total, n = 0.0, 0
        while True:
            value = yield (total / n if n else 0.0)
            total, n = total + value, n + 1

    avg = averager()
    next(avg)
    avg.send(2.0)
    return a * avg.send(4.0)


# --- classes, again -------------------------------------------------------------------------------


@case(T)
def getattr_fallback_class(a):
    d = Defaults()
    return a * d.anything + d.real


@case(T)
def setattr_override_class(a):
    v = Validated()
    v.k = -3
    return a * v.k


@case(T)
def property_setter(a):
    t = Temperature()
    t.celsius = 10.0
    return a + t.celsius + t.fahrenheit


@case(T)
def classmethod_sets_class_attribute(a):
    Tracker.record(a.shape[0])
    return a + Tracker.last


@case(T)
def abstract_base_class(a):
    shape = Square(2.0)
    return a * shape.area() + isinstance(shape, Shape)


@case(T)
def abc_virtual_subclass_check(a):
    import collections.abc

    return (
        a + isinstance([], collections.abc.Sequence) + isinstance({}, collections.abc.Mapping) * 2
    )


@case(T)
def dataclass_order_and_eq(a):
    small, big = Version(1, 2), Version(1, 10)
    return a + (small < big) + (small == Version(1, 2)) * 2 + (big >= small) * 4


@case(T)
def sorted_dataclass_objects(a):
    small, big = Version(1, 2), Version(1, 10)
    return a * sorted([big, small])[0].minor


@case(T, graphs=2, breaks=1)  # EnumType.__members__ makes a mappingproxy, a C class
def enum_members_and_auto(a):
    names = [m.name for m in Mode]
    return a * Mode.FAST.value + len(Mode.__members__), names


@case(T)
def str_enum_behaves_like_str(a):
    return a * len(Unit.METER + "s") + (Unit.METER == "m")


@case(T)
def namedtuple_class_attributes(a):
    return a + len(Point._fields) + Point._field_defaults["y"], isinstance(Point(1.0), tuple)


@case(T)
def init_subclass_hook(a):
    return a * len(Plugin.registry)


# --- other modules -----------------------------------------------------------------------------


@case(T, graphs=0, breaks=1)  # sys.version_info has no guard yet: the frame runs eagerly
def sys_version_check(a):
    import sys

    if sys.version_info >= (3, 8):
        return a + 1
    return a


@case(T)
def typing_helpers(a):
    b = typing.cast(torch.Tensor, a)
    if typing.TYPE_CHECKING:
        return b
    return b * 2


@case(T, graphs=2, breaks=1)
def random_module_call(a):
    y = a * 2
    k = random.random()
    return y + 1, isinstance(k, float)


@case(T, graphs=2, breaks=1)
def warnings_warn(a):
    y = a * 2
    warnings.warn("careful", UserWarning, stacklevel=1)
    return y + 1


@case(T)
def os_environ_get(a):
    return a * len(os.environ.get("MINIDYNAMO_NOT_SET", "abc"))


@case(T)  # copy's dispatch dict has classes for keys; deepcopy's memo is keyed by id()
def copy_of_list_and_dict(a):
    xs = copy.copy([1, 2])
    d = copy.deepcopy({"k": [1, 2]})
    xs.append(3)
    return a * len(xs) + len(d["k"])


@case(T, breaks=1)
def torch_manual_seed_breaks(a):
    torch.manual_seed(0)
    return a + 1
