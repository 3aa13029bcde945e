"""Sizes that are symbols: one kernel for every batch size (sizes.py)."""
