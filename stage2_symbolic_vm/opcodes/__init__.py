"""The handlers of the rarer opcodes, as mixins of the InstructionTranslator (vm.py)."""
