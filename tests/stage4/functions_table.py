"""Small functions in the style of PyTorch's dynamo function tests, with their expected cuts.

Each entry is (function, arguments, graphs, breaks): compiled, the function
must give eager's result, and `explain` must find that many graphs and
graph breaks on those arguments.
"""

import math
import operator

import torch
import torch.nn.functional as F

T = torch.randn(4, 3, generator=torch.Generator().manual_seed(0))
U = torch.randn(4, 3, generator=torch.Generator().manual_seed(1))
V = torch.randn(3, generator=torch.Generator().manual_seed(2))
SCALE = 2.5
NAMES = ("a", "b")
CASES = []


def registrar(cases: list):
    """The `@case(*args, graphs=, breaks=)` decorator of a table: it appends to `cases`."""

    def case(*args, graphs=1, breaks=0, kwargs=None):
        def register(fn):
            cases.append((fn, args, kwargs or {}, graphs, breaks))
            return fn

        return register

    return case


case = registrar(CASES)


def not_traced(t):
    """NumPy's sum of the tensor's array is traced; float() of it reads its data."""
    return float(t.detach().numpy().sum())


def double(t):
    return t * 2


def add_then_print(t):
    y = t + 1
    print("add_then_print")
    return y * 2


# --- arithmetic -----------------------------------------------------------------------------


@case(T, U)
def add(a, b):
    return a + b


@case(T, U)
def torch_add(a, b):
    return torch.add(a, b)


@case(T, U)
def sub_mul(a, b):
    return (a - b) * b


@case(T, U)
def true_div(a, b):
    return a / (b.abs() + 1)


@case(T)
def floor_div_scalar(a):
    return a // 2


@case(T)
def mod_scalar(a):
    return a % 1.5


@case(T)
def power(a):
    return a**2 + a**0.5 * 0


@case(T)
def negate(a):
    return -a + +a


@case(T, V)
def matmul(a, v):
    return a @ v


@case(T, U)
def chained(a, b):
    return ((a + b) * (a - b)).sin().cos()


@case(T)
def in_place_on_fresh(a):
    y = a.clone()
    y.add_(1)
    y.mul_(2)
    return y


@case(T)
def augmented_assign(a):
    y = a * 1
    y += 3
    y *= 2
    return y


@case(T)
def scalar_math(a):
    return a * math.pi + math.sqrt(4.0)


@case(T)
def python_float_ops(a):
    s = 1.5 * 2 - 0.5
    return a * s


@case(T)
def int_ops(a):
    n = (7 // 2) % 3 + 2**3
    return a + n


@case(T)
def comparison_tensor(a):
    return a > 0


@case(T, U)
def maximum(a, b):
    return torch.maximum(a, b)


@case(T)
def clamp(a):
    return a.clamp(min=-0.5, max=0.5)


@case(T)
def where_not_if(a):
    return torch.where(a > 0, a, torch.zeros_like(a))


@case(T)
def reductions(a):
    return a.sum(), a.mean(dim=0), a.amax(dim=1, keepdim=True)


@case(T)
def softmax(a):
    return F.softmax(a, dim=-1)


@case(T)
def relu_gelu(a):
    return F.gelu(F.relu(a))


@case(T)
def dtype_cast(a):
    return a.to(torch.float64) * 2


@case(T)
def reshape_view(a):
    return a.reshape(3, 4).t().contiguous().view(-1)


@case(T)
def transpose_permute(a):
    return a.transpose(0, 1).permute(1, 0)


@case(T)
def indexing(a):
    return a[0], a[1:3], a[:, 1], a[..., -1]


@case(T, U)
def cat_stack(a, b):
    return torch.cat([a, b]), torch.stack((a, b), dim=1)


@case(T)
def unsqueeze_expand(a):
    return a.unsqueeze(0).expand(2, 4, 3)


@case(T)
def ones_like_arith(a):
    return torch.ones_like(a) + torch.zeros(4, 3)


@case(T)
def arange_factory(a):
    return a + torch.arange(3)


@case(T)
def full_factory(a):
    return torch.full((4, 3), 2.0) * a


@case(T)
def tensor_attr_T(a):
    return a.T @ a


@case(T)
def exp_log(a):
    return torch.log(torch.exp(a) + 1)


@case(T)
def abs_sign(a):
    return a.abs() * a.sign()


@case(T)
def norm(a):
    return a.norm(dim=1)


@case(T)
def cumsum(a):
    return a.cumsum(0)


@case(T)
def chunk_split(a):
    first, second = a.chunk(2)
    return first + second


@case(T)
def bool_ops(a):
    return (a > 0) & (a < 1) | (a == 0)


# --- shapes and Python values from tensors ------------------------------------------------------


@case(T)
def shape_branch(a):
    if a.shape[0] > 2:
        return a * 2
    return a


@case(T)
def size_arith(a):
    n, m = a.size()
    return a.reshape(n * m)


@case(T)
def dim_and_numel(a):
    return a * a.dim() + a.numel()


@case(T)
def dtype_branch(a):
    if a.dtype == torch.float32:
        return a + 1
    return a - 1


@case(T)
def is_floating(a):
    return a * 2 if a.is_floating_point() else a


@case(T)
def len_of_tensor(a):
    return a * len(a)


@case(T)
def device_attribute(a):
    return torch.zeros(2, device=a.device) + 1


@case(T)
def requires_grad_branch(a):
    return a + 1 if not a.requires_grad else a


# --- control flow --------------------------------------------------------------------------


@case(T, True)
def python_bool_branch(a, flag):
    if flag:
        return a + 1
    return a - 1


@case(T, 3)
def python_int_branch(a, n):
    if n > 2:
        return a * n
    return a


@case(T, None, graphs=0)
def none_branch(a, b):
    if b is None:
        return a
    return a + b


@case(T, U)
def not_none_branch(a, b):
    if b is not None:
        return a + b
    return a


@case(T, 4)
def for_range(a, n):
    for i in range(n):
        a = a + i
    return a


@case(T)
def while_loop(a):
    i = 0
    while i < 3:
        a = a * 2
        i += 1
    return a


@case(T)
def nested_loops(a):
    for i in range(2):
        for j in range(2):
            a = a + i * j
    return a


@case(T)
def loop_break_continue(a):
    for i in range(10):
        if i == 1:
            continue
        if i == 4:
            break
        a = a + i
    return a


@case(T)
def ternary(a):
    return a + 1 if a.dim() == 2 else a


@case(T)
def and_or(a):
    flag = (a.dim() == 2 and a.shape[1] == 3) or False
    return a * flag


@case(T)
def early_return(a):
    for i in range(5):
        if i == 2:
            return a * i
    return a


@case(T, graphs=2, breaks=1)
def tensor_branch(a):
    if a.sum() > 0:
        return a + 1
    return a - 1


@case(-T.abs() - 1, graphs=2, breaks=1)
def tensor_branch_negative(a):
    if a.sum() > 0:
        return a + 1
    return a - 1


@case(T, graphs=1, breaks=1)
def tensor_branch_no_ops_after(a):
    if a.max() > 100:
        return None
    return 1


@case(T, U, graphs=2, breaks=1)
def toy_example(a, b):
    x = a / (torch.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


@case(T, graphs=2, breaks=1)
def branch_then_more(a):
    y = a.sin()
    if y.mean() > 0:
        y = y * 2
    return y.cos()


@case(T, graphs=3, breaks=2)
def two_branches(a):
    a = a + 1
    if a.sum() > 0:
        a = a * 2
    a = a - 1
    if a.mean() > 100:
        a = a / 2
    return a + 3


@case(T, graphs=2, breaks=1)
def bool_of_tensor(a):
    b = a.sum()
    if b:
        return a * 2
    return a


@case(T, graphs=2, breaks=2)
def while_on_tensor(a):
    while a.sum() < 100:
        a = a + 50
    return a


# The loop's resume function compiles for its first step; at the next step its iterator has
# moved on, and it runs eagerly from then on (stage 3's frame_cache.py, `moved_on`): the
# graphs of the frame and of two steps.
@case(T, graphs=3, breaks=3)
def branch_in_loop(a):
    for i in range(3):
        a = a + i
        if a.sum() > 3:
            a = a - 1
    return a


# --- graph breaks ------------------------------------------------------------------------------


@case(T, graphs=2, breaks=1)
def print_break(a):
    y = a + 1
    print("print_break")
    return y * 2


@case(T, graphs=2, breaks=1)
def item_break(a):
    n = a.sum().item()
    return a * n


@case(T, graphs=2, breaks=1)
def tolist_break(a):
    values = a[0].tolist()
    return a * len(values)


@case(T, graphs=2, breaks=1)
def float_break(a):
    s = float(a.max())
    return a / s


@case(T, graphs=3, breaks=2)
def numpy_call_break(a):
    y = a * 2
    s = not_traced(y)
    return y + s


@case(T, graphs=3, breaks=2)
def inlined_helper_breaks(a):
    return add_then_print(a) * 3


@case(T, graphs=2, breaks=2)
def two_prints(a):
    print("one")
    y = a + 1
    print("two")
    return y * 2


@case(T, graphs=2, breaks=1)
def keyword_call_break(a):
    y = a.cos()
    print("keyword", end="\n", sep=" ")
    return y.sin()


@case(T, graphs=2, breaks=1)
def break_keeps_locals(a):
    b = a * 2
    c = [b, 3]
    d = {"k": b}
    print("keeps locals")
    return c[0] + d["k"] + c[1]


@case(T, graphs=2, breaks=1)
def break_in_expression(a):
    return a + a.sum().item() * torch.ones_like(a)


@case(T, graphs=2, breaks=1)
def break_with_stack(a):
    return [a * 2, int(a.sum() > 0), a + 1]


@case(T, graphs=2, breaks=1)
def break_in_call_args(a):
    return torch.add(a * 2, a.sum().item())


@case(T, graphs=1, breaks=1)
def break_alias_list(a):
    xs = [a]
    ys = xs
    print(len(xs))
    ys.append(a * 2)
    return xs


@case(T, graphs=0, breaks=1)
def break_in_try(a):
    try:
        y = a + 1
        print("in try")
    except ValueError:
        y = a
    return y


@case(T, graphs=0, breaks=1)
def break_in_with(a):
    with torch.no_grad():
        y = a * 2
        print("in with")
    return y


@case(T, graphs=2, breaks=1)
def break_before_closure_made(a):
    b = a * 2
    print("before closure")
    return b.sin()


@case(T)
def mutate_input_list(a, out=None):
    out = [] if out is None else out
    return a + 1


@case(T, [1, 2], graphs=1, breaks=0)
def append_to_input_list(a, lst):
    lst.append(a + 1)
    return len(lst)


@case(T, {"k": 1}, graphs=1, breaks=0)
def set_input_dict_item(a, d):
    d["new"] = a * 2
    return d["k"]


@case(T, graphs=1, breaks=0)
def in_place_on_input(a):
    a.add_(1)
    return a * 2


@case(T, graphs=1, breaks=0)
def global_counter(a):
    global SCALE
    y = a * SCALE
    SCALE = SCALE + 0
    return y


@case(T, graphs=1, breaks=1)
def break_then_loop(a):
    print("break then loop")
    for i in range(3):
        a = a + i
    return a


@case(T, graphs=2, breaks=1)
def format_tensor_break(a):
    s = f"{a.sum()}"
    return a * len(s)


# --- closures and nested functions ---------------------------------------------------------------


@case(T)
def closure_read(a):
    c = 3

    def g(y):
        return y * c

    return g(a)


def make_adder(n):
    def adder(t):
        return t + n

    return adder


ADD_FIVE = make_adder(5)


@case(T)
def closure_from_outside(a):
    return ADD_FIVE(a)


@case(T)
def lambda_inline(a):
    f = lambda t: t * 2  # noqa: E731
    return f(a)


@case(T)
def nested_defaults(a):
    def g(t, k=3):
        return t * k

    return g(a) + g(a, k=1)


@case(T)
def helper_call(a):
    return double(double(a))


@case(T)
def recursion_bounded(a):
    def fact(n):
        return 1 if n <= 1 else n * fact(n - 1)

    return a * fact(4)


@case(T)
def higher_order(a):
    def apply(f, x):
        return f(x)

    return apply(torch.sin, a) + apply(double, a)


@case(T)
def enumerate_list(a):
    total = a
    for i, t in enumerate([a, a * 2]):
        total = total + t * i
    return total


@case(T)
def closure_counter(a):
    total = 0

    def bump(t):
        nonlocal total
        total += 1
        return t + total

    return bump(a) + bump(a)


# --- containers --------------------------------------------------------------------------------


@case(T, U)
def return_tuple(a, b):
    return a + b, a - b


@case(T, U)
def return_list(a, b):
    return [a + b, 3, "s"]


@case(T, U)
def return_dict(a, b):
    return {"sum": a + b, "n": 2}


@case(T)
def return_nested(a):
    return {"x": [a, (a * 2, None)], "y": 1.5}


@case((T, U))
def tuple_argument(ab):
    a, b = ab
    return a * b


@case([T, U])
def list_argument(xs):
    return xs[0] + xs[-1]


@case({"a": T, "b": U})
def dict_argument(d):
    return d["a"] * d["b"]


@case([T, U, T])
def list_len(xs):
    return xs[0] * len(xs)


@case(T)
def list_methods(a):
    xs = [a, a * 2]
    xs.append(a * 3)
    xs.extend([a])
    xs.insert(0, a - 1)
    last = xs.pop()
    return sum(xs) + last


@case(T)
def dict_methods(a):
    d = {"a": a}
    d.update(b=a * 2)
    total = 0
    for _, v in d.items():
        total = total + v
    return total, list(d.keys()), d.get("c", 0)


@case(T)
def list_slicing(a):
    xs = [a, a + 1, a + 2, a + 3]
    return xs[1:3], xs[::2]


@case(T)
def tuple_concat(a):
    t = (a,) + (a * 2,)  # noqa: RUF005 (concatenation is what is tested)
    return t * 2


@case(T)
def list_contains(a):
    return a * 2 if 3 in [1, 2, 3] else a


@case(T)
def dict_contains(a):
    d = {"x": 1}
    return a + 1 if "x" in d else a


@case(T, {"x": 1, "y": 2})
def dict_len_argument(a, d):
    return a + len(d)


@case(T, (1, 2, 3))
def tuple_of_ints(a, shape):
    return a.sum() * sum(shape)


@case(T, [1, 2])
def list_of_ints(a, xs):
    return a * xs[0] + xs[1]


@case(T, graphs=0)
def empty_containers(a):
    return [], (), {}, a


# --- unpacking ------------------------------------------------------------------------------------


@case(T)
def unpack_tuple(a):
    x, y = a * 2, a * 3
    return y - x


@case(T)
def unpack_star(a):
    first, *rest = [a, a + 1, a + 2]
    return first + sum(rest)


@case(T)
def unpack_rows(a):
    r0, r1, r2, r3 = a
    return r0 + r3 - r1 * r2


@case(T)
def swap_values(a):
    x, y = a, a * 2
    x, y = y, x
    return x - y


@case(T)
def nested_unpack(a):
    (x, y), z = (a, a + 1), a + 2
    return x + y + z


@case(T)
def star_call(a):
    args = (a, 1)
    return torch.add(*args)


@case(T)
def double_star_call(a):
    kw = {"dim": 0, "keepdim": True}
    return a.sum(**kw)


# --- comprehensions ------------------------------------------------------------------------


@case(T)
def list_comprehension(a):
    return [a * i for i in range(3)]


@case(T)
def dict_comprehension(a):
    return {str(i): a + i for i in range(2)}


@case(T)
def filtered_comprehension(a):
    return sum([a * i for i in range(5) if i % 2 == 0])


@case(T)
def nested_comprehension(a):
    return [[a * i * j for j in range(2)] for i in range(2)]


@case(T)
def comprehension_over_tensor(a):
    return [row.sum() for row in a]


@case(T, graphs=1, breaks=0)
def generator_expression(a):
    return sum(t for t in [a, a])


# --- methods --------------------------------------------------------------------------------


@case(T)
def tensor_methods(a):
    return a.sin().exp().sum(dim=1).softmax(dim=0)


@case(T)
def string_methods(a):
    name = "Abc".lower().upper()
    return a * len(name)


@case(T)
def str_format(a):
    key = f"x_{2}"
    return a * len(key)


@case(T)
def fstring(a):
    key = f"{a.shape[0]}-{a.dtype}"
    return a + len(key)


@case(T)
def int_methods(a):
    return a * (5).bit_length()


@case(T)
def tensor_size_method(a):
    return a.new_zeros(a.size(0)) + a.size(-1)


# --- globals and builtins -------------------------------------------------------------------


@case(T)
def read_global_scalar(a):
    return a * SCALE


@case(T)
def read_global_tuple(a):
    return a * len(NAMES)


@case(T)
def global_tensor(a):
    return a + V


@case(T)
def builtin_len_range(a):
    return a * len(range(3))


@case(T)
def builtin_min_max(a):
    return a * max(2, 3) + min(1.0, 4.0)


@case(T)
def builtin_isinstance(a):
    return a * 2 if isinstance(a, torch.Tensor) else a


@case(T)
def builtin_abs_round(a):
    return a * abs(-2) + round(2.6)


@case(T)
def builtin_zip_enumerate(a):
    total = a
    for i, (x, y) in enumerate(zip([1, 2], [3, 4], strict=True)):
        total = total + i * x * y
    return total


@case(T)
def builtin_sum_list(a):
    return sum([a, a, a])


@case(T)
def builtin_getattr(a):
    return a.sum()


@case(T)
def builtin_type_check(a):
    return a * 2 if int is int else a


@case(T)
def operator_module(a):
    return operator.add(a, operator.mul(a, 2))


@case(T)
def math_module(a):
    return a * math.floor(2.7) + math.cos(0.0)


@case(T)
def torch_is_tensor(a):
    return a * torch.is_tensor(a)


@case(T, graphs=0)
def no_tensor_ops(a):
    return a


@case(3, 4, graphs=0)
def only_python(a, b):
    return a * b + 1


@case(T, graphs=0)
def return_input_and_constant(a):
    return a, 1, "x"


# --- kwargs and *args --------------------------------------------------------------------------


@case(T, kwargs={"scale": 3.0})
def keyword_argument(a, scale=1.0):
    return a * scale


@case(T, U, kwargs={"alpha": 2})
def keyword_only(a, b, *, alpha=1):
    return a + alpha * b


@case(T, U, T)
def var_args(*tensors):
    return sum(tensors)


@case(T, kwargs={"x": 1, "y": 2})
def var_kwargs(a, **kw):
    return a * kw["x"] + kw["y"]


@case(T, 2, 3, kwargs={"k": 4})
def mixed_args(a, *args, k=1, **kw):
    return a * sum(args) * k


@case(T)
def default_arguments(a, b=2, c=None):
    return a * b if c is None else a


@case(T, graphs=2, breaks=1, kwargs={"k": 2})
def var_args_break(a, *args, **kw):
    y = a + 1
    print(kw)
    return y * kw["k"]


@case(T)
def torch_kwargs(a):
    return torch.sum(a, dim=0, keepdim=True)


@case(T)
def functional_kwargs(a):
    return F.softmax(a, dim=-1, dtype=torch.float64)


# --- modules ----------------------------------------------------------------------------------


class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)

    def forward(self, x):
        return self.lin(x).relu()


class Sequential(torch.nn.Module):
    def __init__(self):
        super().__init__()
        layers = (torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
        self.layers = torch.nn.Sequential(*layers)

    def forward(self, x):
        return self.layers(x)


class WithBuffer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("offset", torch.ones(3))
        self.weight = torch.nn.Parameter(torch.full((3,), 0.5))
        self.factor = 2

    def forward(self, x):
        return (x + self.offset) * self.weight * self.factor


class DynamicModule(torch.nn.Module):
    """The classic example: a branch on a tensor's value splits forward in two."""

    def forward(self, x):
        x = x * 2
        if x.sum() > 0:
            return x.relu()
        return -x


class HelperMethod(torch.nn.Module):
    def helper(self, x):
        return x * 3

    def forward(self, x):
        return self.helper(x) + 1


class PrintingModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        y = self.lin(x)
        print("PrintingModule")
        return self.lin(y)


LINEAR, SEQUENTIAL, WITH_BUFFER = Linear(), Sequential(), WithBuffer()
DYNAMIC, HELPER, PRINTING = DynamicModule(), HelperMethod(), PrintingModule()


@case(T)
def call_linear(a):
    return LINEAR(a)


@case(T)
def call_sequential(a):
    return SEQUENTIAL(a)


@case(T)
def call_with_buffer(a):
    return WITH_BUFFER(a)


@case(T, graphs=2, breaks=2)
def call_dynamic(a):
    return DYNAMIC(a)


@case(T)
def call_helper_method(a):
    return HELPER(a)


@case(T, graphs=2, breaks=2)
def call_printing(a):
    return PRINTING(a)


@case(T)
def module_parameters_sum(a):
    return a * LINEAR.lin.weight.sum()


@case(T)
def functional_linear(a):
    return F.linear(a, LINEAR.lin.weight, LINEAR.lin.bias)


# --- exceptions: the compiled function raises what eager raises -----------------------------------


@case(T, U[:2], graphs=0, breaks=0)
def shape_mismatch(a, b):
    return a + b


@case(T, graphs=0, breaks=0)
def raises_value_error(a):
    raise ValueError("no")


@case(T, graphs=0, breaks=0)
def assert_fails(a):
    assert a.dim() == 3, "wrong rank"
    return a


@case([T], graphs=0, breaks=0)
def index_error(xs):
    return xs[3]


@case({"a": T}, graphs=0, breaks=0)
def key_error(d):
    return d["b"]


@case(T, graphs=1, breaks=1)
def raise_after_break(a):
    y = a * 2
    if y.sum() > -1000:
        raise RuntimeError("after the branch")
    return y


# --- breaks inside loops: the rest of the loop is unrolled in the resume function --------------


@case(T, graphs=3, breaks=3)
def print_in_loop(a):
    for i in range(3):
        a = a * 2 + i
        print(i)
    return a


@case(T, graphs=5, breaks=4)
def item_in_loop_over_rows(a):
    total = 0.0
    for row in a:
        total = total + row.max().item()
    return a * total


@case(T, graphs=3, breaks=2)
def loop_over_list_with_break(a):
    out = []
    for t in [a, a + 1]:
        print(len(out))
        out.append(t * 2)
    return out


@case(T, graphs=2, breaks=2)  # the loop's resume function: one step compiled (branch_in_loop)
def shared_iterator(a):
    it = iter([a, a * 2, a * 3])
    first = next(it)
    for t in it:
        print("shared")
        first = first + t
    return first


# --- breaks with closures: cells are shared by the functions made before and after ------------


@case(T, graphs=1, breaks=1)
def closure_with_break(a):
    c = 3

    def g(y):
        return y * c

    print("closure")
    return g(a)


@case(T, graphs=1, breaks=1)
def closure_cell_changed_after_break(a):
    count = 0

    def bump():
        nonlocal count
        count += 1
        return count

    bump()
    print("shared cell")
    bump()
    return a * count


@case(T, graphs=2, breaks=1)
def recursive_closure_with_break(a):
    def fact(n):
        return 1 if n <= 1 else n * fact(n - 1)

    y = a + 1
    print("recursive")
    return y * fact(3)


@case(T, graphs=1, breaks=1)
def lambda_with_default_and_break(a, k=2):
    scale = lambda t, m=k: t * m  # noqa: E731
    print("lambda")
    return scale(a)
