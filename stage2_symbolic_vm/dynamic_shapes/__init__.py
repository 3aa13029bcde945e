"""Dynamic shapes: sizes that are symbols, for the inputs whose sizes change (`shapes.py`)."""
