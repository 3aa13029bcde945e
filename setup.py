"""Builds the one C extension of minidynamo: stage 1's PEP 523 frame evaluator.

Everything else is in pyproject.toml; setuptools needs this file only to know
about the extension (two C files: the hook, and its memory of SKIP answers).
`pip install -e .` compiles it with the system compiler.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "stage1_eval_frame._eval_frame",
            sources=["stage1_eval_frame/_eval_frame.c", "stage1_eval_frame/skip_marks.c"],
            extra_compile_args=["-O2", "-Wall", "-Wno-missing-field-initializers"],
        )
    ]
)
