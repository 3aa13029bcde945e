"""The benchmarks' JSON format, and the tables and charts the book makes from it."""

import json

import pytest

from benchmarks import report


def cpu_data(**changes) -> dict:
    data = {
        "benchmark": "benchmarks/bench_x.py",
        "what": "median of 3 calls",
        "date": "2026-11-22T13:24:05Z",
        "device": "AMD EPYC, 2 cores (x86_64)",
        "python": "3.11.7",
        "torch": "2.13.0+cpu",
        "triton": None,
        "labels": dict(report.LABELS),
        "rows": [
            report.row("(a+b)*2-a", 3000.0, 1500.0, 1000.0),
            report.row("layer_norm", 2000.0, 1000.0, 1250.0),
        ],
        "targets": [],
        "extra": {},
    }
    return {**data, **changes}


def gpu_data() -> dict:
    row = report.row("chain", 1500.0, 300.0, 250.0, bytes=750_000_000, ours_of_copy=1.0)
    return cpu_data(
        date="2026-11-22",
        device="NVIDIA H100 80GB HBM3",
        triton="3.6.0",
        rows=[row],
        targets=[{"target": "chain: ours / torch.compile <= 1.0", "met": True}],
        extra={"copy_gb_s": 3000, "target_of_copy": 0.85},
    )


def test_a_row_holds_the_times_and_both_ratios():
    assert report.row("w", 300.0, 150.0, 100.0, bytes=8) == {
        "workload": "w",
        "eager_us": 300.0,
        "torch_compile_us": 150.0,
        "ours_us": 100.0,
        "ours_vs_torch_compile": 0.67,
        "eager_vs_ours": 3.0,
        "bytes": 8,
    }


def test_write_records_the_machine_the_versions_and_the_date(tmp_path):
    path = tmp_path / "bench.json"
    rows = [report.row("w", 3.0, 2.0, 1.0)]
    report.write(path, benchmark="b.py", what="w", device="cpu", rows=rows, extra={"k": 1})
    data = json.loads(path.read_text())
    assert data["rows"] == rows and data["extra"] == {"k": 1} and data["targets"] == []
    assert data["labels"] == report.LABELS
    assert data["date"].endswith("Z") and data["torch"] and data["python"]


def test_provenance_says_when_where_and_with_what():
    assert report.provenance(cpu_data()) == (
        "Measured on 22 November 2026, 13:24 UTC, on AMD EPYC, 2 cores (x86_64), with "
        "Python 3.11.7 and torch 2.13.0+cpu, by `benchmarks/bench_x.py`: median of 3 calls."
    )
    assert report.provenance(gpu_data()).startswith(
        "Measured on 22 November 2026, on NVIDIA H100 80GB HBM3, with Python 3.11.7, "
        "torch 2.13.0+cpu and Triton 3.6.0,"
    )


def test_the_table_picks_milliseconds_and_escapes_markdown():
    assert report.table(cpu_data()) == "\n".join(
        [
            "| workload (times in ms) | eager | torch.compile | ours | ours / torch.compile "
            "| eager / ours |",
            "|---|---:|---:|---:|---:|---:|",
            "| (a+b)\\*2-a | 3.00 | 1.50 | 1.00 | 0.67 | 3.00 |",
            "| layer\\_norm | 2.00 | 1.00 | 1.25 | 1.25 | 1.60 |",
        ]
    )


def test_a_gpu_table_shows_bandwidth():
    assert report.table(gpu_data()).splitlines()[2] == (
        "| chain | 750 | 1500 (500 GB/s) | 300 (2500 GB/s) | 250 (3000 GB/s) | 0.83 | 100% |"
    )


def test_the_chart_is_time_relative_to_eager_one_bar_per_workload_and_system():
    assert report.chart(cpu_data()) == "\n".join(
        [
            "```mermaid",
            "xychart-beta horizontal",
            '    title "time relative to eager (shorter is faster)"',
            '    x-axis ["(a+b)*2-a · eager", "(a+b)*2-a · torch.compile", "(a+b)*2-a · ours", '
            '"layer_norm · eager", "layer_norm · torch.compile", "layer_norm · ours"]',
            '    y-axis "time / eager time" 0 --> 1.1',
            "    bar [1, 0.5, 0.33, 1, 0.5, 0.62]",
            "```",
        ]
    )


def test_a_gpu_chart_is_bandwidth_against_copy_with_the_target_as_a_line():
    chart = report.chart(gpu_data()).splitlines()
    assert chart[2] == '    title "bandwidth reached, % of copy (longer is better)"'
    assert chart[3] == '    x-axis ["eager", "torch.compile", "ours"]'  # one workload: no prefix
    assert chart[-3:] == ["    bar [17, 83, 100]", "    line [85, 85, 85]", "```"]


def test_a_label_with_double_quotes_is_still_one_string_in_the_chart():
    data = cpu_data(labels={**report.LABELS, "torch_compile": 'torch.compile(backend="eager")'})
    assert "\"(a+b)*2-a · torch.compile(backend='eager')\"" in report.chart(data)


@pytest.mark.parametrize(("biggest", "top"), [(1.0, 1.1), (1.06, 1.2), (14.6, 16), (100, 110)])
def test_the_axis_ends_a_little_above_the_longest_bar(biggest, top):
    assert report._axis_top(biggest) == top


@pytest.mark.parametrize("path", sorted(report.DATA.glob("bench_*.json")), ids=lambda p: p.stem)
def test_every_recorded_file_has_the_format_and_renders(path):
    data = json.loads(path.read_text())
    keys = {"benchmark", "what", "date", "device", "python", "torch", "triton", "labels"}
    assert keys | {"rows", "targets", "extra"} == set(data)
    for row in data["rows"]:
        ratios = {"ours_vs_torch_compile", "eager_vs_ours"}
        assert {"workload", "eager_us", "torch_compile_us", "ours_us"} | ratios <= set(row)
    assert all(set(t) == {"target", "met"} for t in data["targets"])
    text = report.markdown(path.stem)
    assert text.count("```mermaid") == (1 if data["rows"] else 0) and data["device"] in text


def test_the_verdict_names_each_missed_target():
    targets = [report.target("a <= 1.0", True), report.target("b >= 3", False)]
    assert report.verdict(targets) == "target missed: b >= 3"
    assert report.verdict(targets[:1]) == "all targets met"
