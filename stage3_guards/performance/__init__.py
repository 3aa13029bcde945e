"""Performance: checking many tensors in one C++ call (`tensor_checks.py`); guard functions'
sources kept on disk for later processes (`guard_sources.py`)."""
