"""The classic TorchDynamo example, for `minidynamo explain examples/toy.py`.

minidynamo compiles `main` and calls it with no arguments, so `main` uses inputs
made when the script is imported. Everything `main` calls from this file is
compiled too: here `toy_example`, which has one graph break.
"""

import torch

A = torch.randn(10, generator=torch.Generator().manual_seed(0))
B = torch.randn(10, generator=torch.Generator().manual_seed(1))


def toy_example(a, b):
    x = a / (torch.abs(a) + 1)
    if b.sum() < 0:  # a branch on a tensor's value: a graph break
        b = b * -1
    return x * b


def main():
    return toy_example(A, B)


if __name__ == "__main__":
    print(main())
