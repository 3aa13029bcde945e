"""Tools for looking at what the stage made, not needed to make it.

`coverage.py` says which opcodes the VM handles on this Python, `diagrams.py`
draws a trace as a Mermaid flowchart (the book's pictures), and `demo.py` is
`python -m stage2_symbolic_vm`.
"""
