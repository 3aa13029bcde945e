"""Whole graphs and training plans on disk: a second process lowers and traces nothing again.

Each process runs SCRIPT (a small net with an embedding, a convolution, a batch norm and a
linear layer) in a fresh interpreter, checks its answers (and, training, its gradients
and running statistics) against eager's, and prints what the caches of whole graphs
(performance/graph_cache.py) and of training plans (performance/aot_cache.py) did.
"""

import json
import math
import subprocess
import sys

import hypothesis.strategies as st
import torch
from hypothesis import given

from stage5_inductor_cpp.performance import graph_text
from stage5_inductor_cpp.performance.graph_cache import key_of
from tests.stage5.test_cache import process_env

SCRIPT = """
import copy, json, sys
import torch
import stage4_fx
from stage5_inductor_cpp import compile_fx
from stage5_inductor_cpp.performance import aot_cache, graph_cache

dtype, batch, train, frozen = sys.argv[1:]
dtype, batch, train = getattr(torch, dtype), int(batch), train == "1"


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(10, 8)
        self.conv = torch.nn.Conv2d(2, 4, 3, padding=1)
        self.norm = torch.nn.BatchNorm2d(4)
        self.linear = torch.nn.Linear(8, 3)

    def forward(self, ids, x):
        image = self.norm(self.conv(x)).relu().mean((2, 3))  # (batch, 4)
        return self.linear(self.embed(ids) * image.repeat(1, 2)).sin()


torch.manual_seed(0)
model = Net().to(dtype).train(train)
if frozen == "1":
    model.conv.weight.requires_grad_(False)
eager = copy.deepcopy(model)
ids, x = torch.randint(0, 10, (batch,)), torch.randn(batch, 2, 5, 5, dtype=dtype)
compiled = stage4_fx.compile(model, backend=compile_fx)
if train:
    compiled(ids, x).square().mean().backward()
    eager(ids, x).square().mean().backward()
    for ours, theirs in zip(model.parameters(), eager.parameters()):
        if theirs.requires_grad:
            torch.testing.assert_close(ours.grad, theirs.grad)
    torch.testing.assert_close(model.norm.running_mean, eager.norm.running_mean)
    torch.testing.assert_close(model.norm.running_var, eager.norm.running_var)
else:
    with torch.no_grad():
        torch.testing.assert_close(compiled(ids, x), eager(ids, x))
print(json.dumps({"graphs": graph_cache.stats, "plans": aot_cache.stats}))
"""


def run(cache, dtype="float32", batch=3, train=True, frozen=False) -> dict:
    """SCRIPT in a new process with its caches in `cache`: what the two caches did."""
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, dtype, str(batch), str(int(train)), str(int(frozen))],
        env=process_env(cache), capture_output=True, text=True,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.splitlines()[-1])


COLD_TRAINING = {"graphs": {"written": 2, "from_disk": 0}, "plans": {"written": 1, "from_disk": 0}}
WARM_TRAINING = {"graphs": {"written": 0, "from_disk": 2}, "plans": {"written": 0, "from_disk": 1}}


def test_a_second_process_loads_an_inference_graph(tmp_path):
    cold = {"graphs": {"written": 1, "from_disk": 0}, "plans": {"written": 0, "from_disk": 0}}
    assert run(tmp_path, train=False) == cold
    warm = {"graphs": {"written": 0, "from_disk": 1}, "plans": {"written": 0, "from_disk": 0}}
    assert run(tmp_path, train=False) == warm


def test_a_second_process_loads_a_training_steps_plan_and_graphs(tmp_path):
    # the forward and backward graphs and the plan that splits them: no joint trace, no
    # lowering; gradients and running statistics as eager's (checked in SCRIPT)
    assert run(tmp_path) == COLD_TRAINING
    assert run(tmp_path) == WARM_TRAINING


def test_a_changed_input_is_another_key(tmp_path):
    # a dtype, a size, a requires_grad: each is a new key, compiled and written
    run(tmp_path)
    assert run(tmp_path, dtype="float64") == COLD_TRAINING
    assert run(tmp_path, batch=5) == COLD_TRAINING
    assert run(tmp_path, frozen=True) == COLD_TRAINING
    assert run(tmp_path, batch=5) == WARM_TRAINING


def test_a_damaged_entry_is_compiled_and_written_again(tmp_path):
    run(tmp_path)
    graphs, plans = sorted((tmp_path / "graphs").iterdir()), list((tmp_path / "plans").iterdir())
    assert len(graphs) == 2 and len(plans) == 1
    graphs[0].write_bytes(graphs[0].read_bytes()[:1000])  # cut short (a full disk, a crash)
    graphs[1].write_text(json.dumps({"key": "another graph's", "source": ""}))  # another key's
    plans[0].write_bytes(plans[0].read_bytes()[: plans[0].stat().st_size // 2])
    assert run(tmp_path) == COLD_TRAINING
    assert run(tmp_path) == WARM_TRAINING


def test_processes_writing_at_once_leave_whole_entries(tmp_path):
    env = process_env(tmp_path)
    command = [sys.executable, "-c", SCRIPT, "float32", "3", "1", "0"]
    procs = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(3)
    ]
    assert all(p.wait() == 0 for p in procs)
    written = list((tmp_path / "graphs").iterdir()) + list((tmp_path / "plans").iterdir())
    assert len(written) == 3 and not [p for p in written if not p.name.endswith(".json")]
    assert run(tmp_path) == WARM_TRAINING


# ----------------------------------------------------------------------------- the spelling

LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(), st.text(max_size=4),
    st.sampled_from([torch.float32, torch.bfloat16, torch.int64, torch.bool]),
    st.sampled_from([torch.channels_last, torch.contiguous_format, torch.strided]),
    st.sampled_from([torch.device("cpu"), torch.device("cuda", 1), Ellipsis]),
    st.sampled_from([torch.ops.aten.mm.default, torch.ops.aten.sum, torch.conv2d, math.prod]),
    st.builds(slice, st.integers(-3, 3) | st.none(), st.integers(-3, 3) | st.none()),
)  # fmt: skip
VALUES = st.recursive(
    LEAVES,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=12,
)


def same(a, b) -> bool:
    """Equal, of the same types all the way down (nan equal to itself)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a is b or a == b


@given(VALUES)
def test_a_spelled_value_reads_back_as_itself(value):
    text = json.dumps(graph_text.spell(value))
    assert same(graph_text.read(json.loads(text)), value)
    assert "0x" not in text  # no address


def users_function(x):
    return x


def test_what_has_no_stable_name_is_not_spelled():
    # a closure; a module object; a large tensor; an object; and a user's function, whose
    # code may change under the same name between two processes
    things = (lambda x: x, torch.nn.Linear(2, 2), torch.randn(5000), object(), users_function)
    for value in things:
        try:
            graph_text.spell(value)
        except graph_text.NotCacheable:
            continue
        raise AssertionError(f"{value!r} was spelled")


def test_a_graph_reads_back_with_the_same_text_and_keys_hold_no_address():
    class Net(torch.nn.Module):
        def forward(self, x, w):
            return (x @ w).relu().sum(-1, keepdim=True) * 2.5, x[:, 1:]

    args = [torch.randn(3, 4), torch.randn(4, 5)]
    gm = torch.fx.symbolic_trace(Net())
    text = graph_text.graph_text(gm)
    rebuilt = graph_text.graph_of(json.loads(json.dumps(text)))
    assert graph_text.graph_text(rebuilt) == text
    torch.testing.assert_close(rebuilt(*args), gm(*args))
    again = torch.fx.symbolic_trace(Net())  # another module, other tensors: the same key
    key = key_of("graph", gm, args, [])
    assert key == key_of("graph", again, [a.clone() for a in args], [])
    assert "0x" not in key
    assert key != key_of("graph", gm, [args[0].double(), args[1]], [])
    assert key != key_of("graph", gm, [args[0].t().contiguous().t(), args[1]], [])  # strides
    with torch.no_grad():
        assert key != key_of("graph", gm, args, [])  # grad mode
