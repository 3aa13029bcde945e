"""`python -m stage2_symbolic_vm`: the demo of tools/demo.py."""

from .tools.demo import main

if __name__ == "__main__":
    main()
