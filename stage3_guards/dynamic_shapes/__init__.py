"""Dynamic shapes: the guards of a trace whose sizes are symbols (`shape_guards.py`)."""
