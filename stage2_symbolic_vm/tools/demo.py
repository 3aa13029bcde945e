"""`python -m stage2_symbolic_vm`: trace a few functions, print their traces, and one that stops."""

import dis

import torch
import torch.nn.functional as F

from .. import Unsupported, replay, trace


def scale_and_shift(x, n):
    for i in range(n):  # unrolled: n is a Python int
        x = x * 2 + i
    return x


def attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
    return F.softmax(scores, dim=-1) @ v


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up, self.down = torch.nn.Linear(4, 8), torch.nn.Linear(8, 4)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(x)))


def sign_branch(x):
    y = x.sum()
    if y > 0:  # a branch on a tensor's value: the VM stops here
        return x
    return -x


def main():
    x = torch.randn(2, 4)
    print("=== bytecode of scale_and_shift ===")
    dis.dis(scale_and_shift)
    examples = [(scale_and_shift, (x, 2)), (attention, (x, x, x)), (MLP().forward, (x,))]
    for fn, args in examples:
        print(f"\n=== trace of {fn.__qualname__} ===")
        t = trace(fn, *args)
        print(t)
        print(
            "assumptions:", ", ".join(f"{a.kind} {a.source or ''}".strip() for a in t.assumptions)
        )
        assert torch.allclose(replay(t, fn, *args), fn(*args))
    print("\n=== sign_branch stops ===")
    try:
        trace(sign_branch, x)
    except Unsupported as stop:
        print(stop)
        print(f"kind={stop.kind} line={stop.lineno}\nVM state where it stopped:\n{stop.state}")
        print("trace so far:\n" + "\n".join(map(str, stop.trace.nodes)))


if __name__ == "__main__":
    main()
