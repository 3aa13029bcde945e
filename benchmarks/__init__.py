"""The benchmarks: ours against eager and torch.compile, each in one run.

Run them from the repository root (`make bench`, or `python -m benchmarks.bench_stage5`);
with `--json PATH` each writes its results in `report.py`'s format, which the book reads.
It is a package so that the book's build can import `benchmarks.report`.
"""
