"""Builds the one C extension of minidynamo: stage 1's PEP 523 frame evaluator.

Everything else is in pyproject.toml; setuptools needs this file only to know
about the extension. `pip install -e .` compiles it with the system compiler.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "stage1_eval_frame._eval_frame",
            sources=["stage1_eval_frame/_eval_frame.c"],
            extra_compile_args=["-O2", "-Wall", "-Wno-missing-field-initializers"],
        )
    ]
)
