"""CPython's own test_bisect, each test method compiled whole (benchmarks/cpython_tests.py):
no fewer of its tests pass than the record says. The benchmark runs every module and
torch.compile beside ours; this runs one small module, ours alone, so that a rule of
Python lost shows in CI. The record's counts hold for the Python it was taken with: CPython's
test modules differ from one version to the next."""

import json
import pathlib
import platform

import pytest

from benchmarks.cpython_tests import run_module

RECORD = pathlib.Path(__file__).resolve().parents[2] / "docs" / "data" / "cpython_tests.json"


def test_no_fewer_of_test_bisects_tests_pass_than_recorded():
    record = json.loads(RECORD.read_text())
    if platform.python_version() != record["python"]:
        pytest.skip(f"recorded on Python {record['python']}")
    (recorded,) = [r for r in record["rows"] if r["module"] == "test_bisect"]
    row = run_module("test_bisect", limit=30.0, labels=("ours",))
    assert row["ours"] >= recorded["ours"], row["reasons"]
