"""Tools for looking at what the stage made, not needed to make it.

`diagrams.py` draws an FX graph, and the graphs and breaks of an `explain()`
run, as Mermaid flowcharts (the book's pictures are drawn by it). `progress.py`
shows a slow compile's steps on stderr, for the person waiting on it.
"""
