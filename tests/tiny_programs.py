"""The chapters' tiny programs (docs/tiny/), loaded as modules for the exercises' warm-ups."""

import importlib.util
import pathlib
import types

TINY = pathlib.Path(__file__).resolve().parents[1] / "docs" / "tiny"


def load_tiny(name: str) -> types.ModuleType:
    """docs/tiny/<name>.py as a fresh module: a solved warm-up is read as it is now."""
    spec = importlib.util.spec_from_file_location(name, TINY / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
