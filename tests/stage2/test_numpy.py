"""NumPy in the trace (numpy_interop/): an ndarray is a tensor, NumPy's rules come from
torch._numpy, and what cannot be traced stops the VM with its reason.

Each program is traced and its trace replayed on the same arguments: the replay must give
eager's answer (NumPy's types, dtypes and shapes: tests/oracle.py), and the trace must
hold no call into NumPy itself, only torch._numpy's operations on tensors.
"""

import numpy as np
import pytest
import torch

from stage2_symbolic_vm import Unsupported, replay, trace
from tests.oracle import assert_same_as_eager

X = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
Y = torch.randn(4, 3, generator=torch.Generator().manual_seed(1))
A = np.random.default_rng(0).random((3, 4))
I = np.arange(12).reshape(3, 4)  # noqa: E741 (an int array)


def numpy_times_two(x):
    return x.numpy() * 2


def sum_over_an_axis(x):
    return np.sum(x.numpy(), axis=0)


def where_positive(x):
    a = x.numpy()
    return np.where(a > 0, a, 0.0)


def transpose_matmul(x, y):
    return x.numpy().T @ y.numpy().T


def methods(a):
    return a.mean(axis=1), a.reshape(2, 6).max(axis=0), a.astype(np.float32), a.T.shape


def exp_and_concatenate(x):
    a = x.numpy()
    return np.concatenate([np.exp(a), a * 2], axis=1)


def indexing(a):
    return a[1:, ::2] + a[0, :2], a[-1]


def arange_to_tensor(x):
    return x + torch.from_numpy(np.arange(4))


def arrays_in_and_out(a, b):
    return np.maximum(a, b) * 2 - a.mean(axis=1, keepdims=True)


def a_scalar_as_numpy_gives_it(a):
    return np.sum(a), a.max(), a[0, 1]


def int_division_is_float64(i):
    return i / 2, i.mean(), np.sqrt(i), i // 2


def in_place(a):
    a += 1
    a[0] = 7.0
    a.fill(2.0) if a.ndim == 5 else None
    return a * 1


def back_to_torch(x):
    return torch.from_numpy(np.tanh(x.numpy())) + torch.as_tensor(x.numpy()) * 2


def iterating_rows(a):
    total = 0
    for row in a:
        total = total + row.max()
    return total


def metadata(a):
    return np.zeros(a.shape) + a, np.shape(a), a.ndim, a.size, a.astype(a.dtype) is a


@pytest.mark.parametrize(
    ("fn", "args"),
    [
        (numpy_times_two, (X,)),
        (sum_over_an_axis, (X,)),
        (where_positive, (X,)),
        (transpose_matmul, (X, Y)),
        (methods, (A,)),
        (exp_and_concatenate, (X,)),
        (indexing, (A,)),
        (arange_to_tensor, (X,)),
        (arrays_in_and_out, (A, A[::-1].copy())),
        (a_scalar_as_numpy_gives_it, (A,)),
        (int_division_is_float64, (I,)),
        (in_place, (A,)),
        (back_to_torch, (X,)),
        (iterating_rows, (A,)),
        (metadata, (A,)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_replayed_numpy_equals_eager(fn, args):
    recorded = trace(fn, *args)
    assert_same_as_eager(lambda *a: replay(recorded, fn, *a), fn, *args)
    targets = [node.target for node in recorded.nodes if node.op != "input"]
    assert not [t for t in targets if getattr(t, "__module__", "").startswith("numpy")]


def test_the_graph_holds_torch_numpy_on_tensors():
    recorded = trace(sum_over_an_axis, X)
    (call,) = [n for n in recorded.nodes if n.op != "input"]
    assert call.target.__name__ == "numpy_sum" and call.kwargs == {"axis": 0}
    assert call.meta.dtype == torch.float32 and tuple(call.meta.shape) == (4,)


def test_an_ndarray_argument_is_the_tensor_of_its_memory():
    (node,) = trace(lambda a: a + 1, A).inputs
    assert node.source.name() == "B.__import__('torch').from_numpy(L['a'])"


def random_draw(a):
    b = a * 2  # traced; NumPy's generator is not (torch.compile breaks there too)
    return b + np.random.rand(3, 4)


def reads_an_item(a):
    return a.sum().item()


def boolean_mask(a):
    return a[a > 0.5]


def branch_on_an_array(a):
    return a * 2 if (a > 0.5).any() else a


def tensor_that_needs_grad(x):
    return x.numpy() * 2


def object_array(a):
    return np.sum(a)


@pytest.mark.parametrize(
    ("fn", "arg", "kind", "words"),
    [
        (random_draw, A, "untraceable_call", "numpy.random"),
        (reads_an_item, A, "item_call", "`ndarray.item()`"),
        (boolean_mask, A, "untraceable_call", "torch._numpy cannot trace it here"),
        (branch_on_an_array, A, "data_dependent_branch", "branch on the value"),
        (
            tensor_that_needs_grad,
            X.requires_grad_(False).clone().requires_grad_(),
            "untraceable_call",
            "requires grad",
        ),
        (object_array, np.array([1, "a"], dtype=object), "untraceable_call", "dtype object"),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_what_cannot_be_traced_stops_with_its_reason(fn, arg, kind, words):
    with pytest.raises(Unsupported) as stop:
        trace(fn, arg)
    assert stop.value.kind == kind and words in stop.value.reason, stop.value
