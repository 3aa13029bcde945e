"""Performance: checking many tensors in one C++ call (`tensor_checks.py`)."""
