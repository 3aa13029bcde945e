"""The breadth of Python: the values a real program uses besides tensors and constants."""
