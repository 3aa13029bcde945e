"""The row patterns the kernel benchmarks time, each in its library spelling and by hand.

The rule: a hand-written softmax must be scheduled as well as `torch.softmax`,
so every pattern is timed both ways. Nothing in the compilers knows these functions:
the hand-written forms reach the scheduler as the reductions and pointwise ops they
are (`max(...).values`, `exp`, `sum`, `mean`, `var`, `logsumexp`).
"""

import torch
import torch.nn.functional as F

EPS = 1e-5


def chain(a, b):
    return torch.relu(torch.sin(a) * torch.cos(b) + a * 0.5 - b)


def softmax(x):
    return torch.softmax(x, -1)


def softmax_by_hand(x):
    biggest = x.max(dim=-1, keepdim=True).values
    e = torch.exp(x - biggest)
    return e / e.sum(dim=-1, keepdim=True)


def log_softmax_by_hand(x):
    return x - torch.logsumexp(x, dim=-1, keepdim=True)


def layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, EPS)


def layer_norm_by_hand(x, w, b):
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True, unbiased=False)
    return (x - mean) / torch.sqrt(var + EPS) * w + b


def rms_norm_by_hand(x, w, b):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w


def row_cases(rows: int, cols: int, randn):
    """(name, fn, args, bytes a perfect kernel moves) for each row pattern."""
    x, w, b = randn(rows, cols), randn(cols), randn(cols)
    size = f"{rows}x{cols}"
    matrix = 2 * rows * cols * 4  # read x once, write the result once, float32
    return [
        (f"softmax {size}", softmax, (x,), matrix),
        (f"softmax by hand {size}", softmax_by_hand, (x,), matrix),
        (f"log_softmax by hand {size}", log_softmax_by_hand, (x,), matrix),
        (f"layer_norm {size}", layer_norm, (x, w, b), matrix + 2 * cols * 4),
        (f"layer_norm by hand {size}", layer_norm_by_hand, (x, w, b), matrix + 2 * cols * 4),
        (f"rms_norm by hand {size}", rms_norm_by_hand, (x, w, b), matrix + cols * 4),
    ]
