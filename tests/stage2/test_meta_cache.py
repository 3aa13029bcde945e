"""Meta answers kept on disk: a kept answer is torch's, and what is not plain is never kept."""

import operator

import pytest
import torch
import torch.nn.functional as F

from stage2_symbolic_vm.performance import meta_cache


@pytest.fixture(autouse=True)
def empty_cache(tmp_path, monkeypatch):
    """Each test asks a new directory, with nothing in memory."""
    monkeypatch.setenv("MINIDYNAMO_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(meta_cache, "_known", {})
    return tmp_path


def meta(*size, stride=None, dtype=torch.float32, requires_grad=False):
    stride = stride or torch.empty(size).stride()
    tensor = torch.empty_strided(size, stride, dtype=dtype, device="meta")
    return tensor.requires_grad_(requires_grad)


def torch_answer(target, args, kwargs):
    result = meta_cache.run(target, args, kwargs)
    return [meta_cache.observed(t) for t in (result if isinstance(result, tuple) else [result])]


KEPT = {
    "sin of a permuted tensor": (torch.sin, [meta(4, 3, stride=(1, 4))], {}),
    "broadcasting add": (operator.add, [meta(4, 1), meta(1, 5)], {}),
    "an int tensor times a float": (operator.mul, [meta(3, dtype=torch.int64), 0.5], {}),
    "sum by name, with a dim": ("sum", [meta(4, 5), 1], {"keepdim": True}),
    "matmul": (torch.matmul, [meta(2, 3, 4), meta(4, 5)], {}),
    "a factory": (torch.ones, [(2, 3)], {"device": "meta", "dtype": torch.float16}),
    "a tuple of fresh tensors": (torch.std_mean, [meta(4, 5)], {"dim": 0}),
    "linear with a weight that requires grad": (
        F.linear, [meta(2, 3), meta(4, 3, requires_grad=True)], {}
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", KEPT)
def test_a_kept_answer_is_torchs_from_memory_and_from_disk(case):
    target, args, kwargs = KEPT[case]
    expected = torch_answer(target, args, kwargs)
    first = meta_cache.call(target, args, kwargs)  # asks torch, keeps the answer
    (key,) = meta_cache._known
    assert meta_cache._known[key] is not None and meta_cache.path_of(key).exists()
    for _ in ("memory", "disk"):
        again = meta_cache.call(target, args, kwargs)
        got = again if isinstance(again, tuple) else [again]
        assert [meta_cache.observed(t) for t in got] == expected
        assert type(again) is type(first)
        meta_cache._known.clear()


x = meta(4, 4)
NOT_KEPT = {
    "a view": ("view", [x, 16], {}),
    "a transpose": (torch.t, [x], {}),
    "the argument itself": ("contiguous", [x], {}),
    "an in-place op": ("add_", [meta(4, 4), 1], {}),
    "out=": (torch.sin, [x], {"out": meta(4, 4)}),
    "a named tuple": (torch.max, [x, 1], {}),
    "views in a tuple": (torch.split, [x, 2], {}),
}


@pytest.mark.parametrize("case", NOT_KEPT)
def test_views_writes_and_aliases_are_asked_every_time(case, empty_cache):
    target, args, kwargs = NOT_KEPT[case]
    meta_cache.call(target, args, kwargs)
    assert list(meta_cache._known.values()) == [None]
    assert not list(empty_cache.glob("meta/*"))


def test_only_torchs_own_ops_are_kept():
    def sin(a):  # a user's function may change between two runs
        return torch.sin(a)

    assert meta_cache.op_name(torch.sin) == "torch.sin"
    assert meta_cache.op_name(operator.mul) == "_operator.mul"
    assert meta_cache.op_name("add") == "Tensor.add"
    assert meta_cache.op_name(sin) is None
    assert meta_cache.question(sin, [meta(3)], {}, []) is None


def test_a_dict_argument_is_described_by_its_keys_and_values_in_order():
    """Keys as scalars, so that `{1: x}` and `{"1": x}` differ (JSON's own keys are strings),
    and a key that is no scalar (a class, a tuple) is simply not kept, not an error of the op."""
    tensors = []
    one = meta_cache.question("add", [meta(3), meta(3)], {"d": {1: 0.5}}, tensors)
    text = meta_cache.question("add", [meta(3), meta(3)], {"d": {"1": 0.5}}, tensors)
    assert one is not None and text is not None and one != text
    assert meta_cache.question("add", [meta(3)], {"d": {int: 1}}, []) is None
    assert meta_cache.question("add", [meta(3)], {"d": {(1, 2): 1}}, []) is None


def test_a_damaged_file_is_asked_again_and_written_over():
    args = [meta(8)]
    meta_cache.call(torch.cos, args, {})
    (key,) = meta_cache._known
    path = meta_cache.path_of(key)
    whole = path.read_text()
    path.write_text(whole[: len(whole) // 2])  # cut short
    meta_cache._known.clear()
    assert meta_cache.observed(meta_cache.call(torch.cos, args, {})) == meta_cache.observed(
        torch.cos(args[0])
    )
    assert path.read_text() == whole
