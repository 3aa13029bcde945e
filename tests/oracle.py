"""The correctness oracle of every stage: compiled code must behave like eager PyTorch.

`assert_same_as_eager(compiled, eager, *args)` runs both on clones of the
arguments and checks, in this order, that
  * both raise the same exception type, or both return;
  * the results are equal (`torch.testing.assert_close` defaults, containers
    compared element by element, Python scalars exactly), and each tensor has
    eager's strides (the significant ones, as torch's own tests compare them);
    a NumPy array or scalar has eager's type, dtype and shape, and close values;
  * each result tensor shares memory with the same argument as in eager (an
    output that is an input, or a view of one, must be so when compiled too);
  * the arguments end up equal (an in-place op must mutate the compiled
    call's inputs exactly as eager mutates its own);
  * `captured()`, when given, says compilation really happened (a trace was
    recorded, a graph captured, a kernel generated) — a test that silently
    fell back to eager would otherwise pass.
"""

import copy

import numpy
import torch
import torch.utils._pytree as pytree


def clone_args(args):
    """Deep copies of the arguments; tensors keep their strides (`clone` preserves them)."""
    return copy.deepcopy(args)


def run_or_exception(fn, args, kwargs):
    try:
        return fn(*args, **kwargs), None
    except Exception as error:  # the oracle compares exception types, so it must catch all
        return None, error


def assert_same_as_eager(compiled, eager, *args, captured=None, kwargs=None, **close):
    """Check that `compiled(*args)` behaves exactly like `eager(*args)`; return eager's result."""
    kwargs = kwargs or {}
    eager_args, eager_kwargs = clone_args(args), clone_args(kwargs)
    ours_args, ours_kwargs = clone_args(args), clone_args(kwargs)
    expected, expected_error = run_or_exception(eager, eager_args, eager_kwargs)
    actual, actual_error = run_or_exception(compiled, ours_args, ours_kwargs)
    if expected_error is not None or actual_error is not None:
        assert type(actual_error) is type(expected_error), (
            f"eager raised {expected_error!r}, compiled raised {actual_error!r}"
        )
    else:
        assert_equal_values(actual, expected, **close)
        assert sharing(actual, (ours_args, ours_kwargs)) == sharing(
            expected, (eager_args, eager_kwargs)
        ), "a result shares memory with an argument in one run but not in the other"
    assert_equal_values(ours_args, eager_args, **close)
    assert_equal_values(ours_kwargs, eager_kwargs, **close)
    if captured is not None:
        assert captured(), "nothing was compiled: the test compared eager with eager"
    return expected


def significant_strides(tensor) -> list:
    """The strides that say where elements are: none for an empty tensor, and none of a dim
    of size 1 (torch's own tests compare the same, `check_significant_strides`)."""
    if tensor.numel() == 0:
        return []
    return [
        stride if size > 1 else None
        for size, stride in zip(tensor.shape, tensor.stride(), strict=True)
    ]


def sharing(results, arguments) -> list:
    """For each result tensor, the index of the argument tensor whose memory it uses, or None."""
    inputs = [t for t in pytree.tree_leaves(arguments) if isinstance(t, torch.Tensor)]
    storages = [t.untyped_storage().data_ptr() for t in inputs]
    found = []
    arrays = [a for a in pytree.tree_leaves(arguments) if isinstance(a, numpy.ndarray)]
    for t in pytree.tree_leaves(results):
        if isinstance(t, numpy.ndarray) and t.size:
            found.append(next((i for i, a in enumerate(arrays) if numpy.shares_memory(a, t)), None))
        if isinstance(t, torch.Tensor) and t.numel():
            pointer = t.untyped_storage().data_ptr()
            found.append(storages.index(pointer) if pointer in storages else None)
    return found


def assert_equal_values(actual, expected, path="result", **close):
    """Tensors with assert_close (dtype, device, strides included), containers recursively,
    the rest with ==."""
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor), f"{path}: expected a tensor, got {type(actual)}"
        torch.testing.assert_close(
            actual, expected, equal_nan=True, msg=lambda m: f"{path}: {m}", **close
        )
        assert significant_strides(actual) == significant_strides(expected), (
            f"{path}: strides {actual.stride()} where eager's are {expected.stride()} "
            f"(size {tuple(expected.shape)})"
        )
    elif isinstance(expected, (list, tuple)):
        assert type(actual) is type(expected), f"{path}: {type(actual)} != {type(expected)}"
        assert len(actual) == len(expected), f"{path}: length {len(actual)} != {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_equal_values(a, e, f"{path}[{i}]", **close)
    elif isinstance(expected, dict):
        assert type(actual) is type(expected), f"{path}: {type(actual)} != {type(expected)}"
        assert list(actual) == list(expected), f"{path}: keys {list(actual)} != {list(expected)}"
        for key in expected:
            assert_equal_values(actual[key], expected[key], f"{path}[{key!r}]", **close)
    elif isinstance(expected, (numpy.ndarray, numpy.generic)):  # NumPy's own type and dtype
        assert type(actual) is type(expected), f"{path}: {type(actual)} != {type(expected)}"
        assert actual.dtype == expected.dtype, f"{path}: dtype {actual.dtype} != {expected.dtype}"
        torch.testing.assert_close(  # values by the dtype's tolerance, the shape exactly
            torch.as_tensor(numpy.asarray(actual)),
            torch.as_tensor(numpy.asarray(expected)),
            equal_nan=True,
            msg=lambda m: f"{path}: {m}",
            **close,
        )
    elif isinstance(expected, float) and expected != expected:
        assert isinstance(actual, float) and actual != actual, f"{path}: {actual!r} != nan"
    else:
        assert type(actual) is type(expected) and actual == expected, (
            f"{path}: {actual!r} != {expected!r}"
        )
