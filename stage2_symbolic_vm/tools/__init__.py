"""Tools for looking at what the stage made, not needed to make it.

coverage.py      which opcodes the VM handles on this Python, and which a program reaches
opcode_sets.py   the opcodes of this Python, and those with a handler (`handled_opnames`)
diagrams.py      a trace drawn as a Mermaid flowchart (the book's pictures)
demo.py          `python -m stage2_symbolic_vm`: a few traces, and one that stops
"""
