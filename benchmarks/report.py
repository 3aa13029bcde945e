"""The benchmarks' results as data, and the book's tables and charts made from it.

Each benchmark run with `--json PATH` writes one file in this format, and the
book (docs/data/bench_*.json) shows the recorded files with `markdown(name)`:
where and when they were measured, a table and a Mermaid bar chart.

    {
      "benchmark": "benchmarks/bench_stage5.py",
      "what": "one line: what is measured, and how",
      "date": "2026-11-22T13:24:05Z",          # UTC; a date alone where the time is not known
      "device": "AMD EPYC, 2 cores (x86_64)",   # the CPU, or the GPU's name
      "python": "3.11.7", "torch": "2.13.0+cpu", "triton": null,
      "labels": {"eager": "eager", "torch_compile": "torch.compile", "ours": "ours"},
      "rows": [
        {"workload": "chain, 2^24",
         "eager_us": 224760.0, "torch_compile_us": 56290.0, "ours_us": 49630.0,
         "ours_vs_torch_compile": 0.88,         # ours' time / torch.compile's: < 1 is faster
         "eager_vs_ours": 4.53,                 # eager's time / ours: the speed-up over eager
         "extra_us": {"another system": 1.0},   # optional: more columns of times
         "bytes": 805306368,                    # optional: bytes a perfect kernel moves
         "ours_of_copy": 1.0}                   # optional: ours' bandwidth / copy bandwidth
      ],
      "targets": [{"target": "chain: ours / torch.compile <= 1.0", "met": true}],
      "extra": {"copy_gb_s": 3005}              # numbers particular to one benchmark
    }

Times are in µs; the tables pick µs or ms for reading.
"""

import datetime
import json
import math
import os
import pathlib
import platform

import torch

DATA = pathlib.Path(__file__).resolve().parent.parent / "docs" / "data"
LABELS = {"eager": "eager", "torch_compile": "torch.compile", "ours": "ours"}
SYSTEMS = ("eager", "torch_compile", "ours")


# --- writing (the benchmarks) ------------------------------------------------------------


def cpu_description() -> str:
    """`AMD EPYC, 2 cores (x86_64)`: the model name Linux reports, or the platform's words,
    and the cores this process may run on when they are fewer than the machine's."""
    model = platform.processor() or platform.machine()
    cpuinfo = pathlib.Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    cores = os.cpu_count()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    used = f"{usable} of {cores} cores (taskset)" if usable != cores else f"{cores} cores"
    return f"{model}, {used} ({platform.machine()})"


def row(workload: str, eager_us: float, torch_compile_us: float, ours_us: float, **more) -> dict:
    """One workload's times (µs) and the two ratios every table shows."""
    return {
        "workload": workload,
        "eager_us": round(eager_us, 2),
        "torch_compile_us": round(torch_compile_us, 2),
        "ours_us": round(ours_us, 2),
        "ours_vs_torch_compile": round(ours_us / torch_compile_us, 2),
        "eager_vs_ours": round(eager_us / ours_us, 2),
        **more,
    }


def target(text: str, met: bool) -> dict:
    """One target the benchmark sets, and whether this run met it."""
    return {"target": text, "met": bool(met)}


def verdict(targets: list[dict]) -> str:
    """The line a benchmark ends with: each missed target, or that all were met."""
    missed = [f"target missed: {t['target']}" for t in targets if not t["met"]]
    return "\n".join(missed) or "all targets met"


def write(path, *, benchmark, what, device, rows, targets=(), labels=None, extra=None, triton=None):
    """Write one run's results to `path` in the format above, with the date and versions.

    `triton` is the version of Triton the benchmark ran, if it ran any.
    """
    data = {
        "benchmark": benchmark,
        "what": what,
        "date": utc_now(),
        "device": device,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton,
        "labels": {**LABELS, **(labels or {})},
        "rows": list(rows),
        "targets": list(targets),
        "extra": dict(extra or {}),
    }
    dump(path, data)


def utc_now() -> str:
    """`2026-11-22T13:24:05Z`: the time a record is written."""
    now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    return now.isoformat().replace("+00:00", "Z")


def dump(path, data: dict) -> None:
    """Write a record as the book reads it (a benchmark of its own format, too)."""
    pathlib.Path(path).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


# --- reading (the book) ------------------------------------------------------------------


def load(name: str) -> dict:
    """A recorded file of docs/data by name: `load("bench_stage5")`."""
    return json.loads((DATA / f"{name}.json").read_text())


def markdown(name: str) -> str:
    """What a chapter prints for a recorded file: where and when, the table, the chart."""
    data = load(name)
    parts = [provenance(data)]
    if data["rows"]:  # a file may keep its results in `extra` (bench_stage5 --dynamic)
        parts += [table(data), chart(data)]
    if data["targets"]:
        parts.append(targets(data))
    return "\n\n".join(parts)


def provenance(data: dict) -> str:
    """One sentence: which machine, when, with which versions, by which script."""
    when = datetime.datetime.fromisoformat(data["date"].replace("Z", "+00:00"))
    date = f"{when.day} {when:%B %Y}"
    if "T" in data["date"]:
        date += f", {when:%H:%M} UTC"
    versions = [f"Python {data['python']}", f"torch {data['torch']}"]
    if data.get("triton"):
        versions.append(f"Triton {data['triton']}")
    return (
        f"Measured on {date}, on {data['device']}, with {', '.join(versions[:-1])} "
        f"and {versions[-1]}, by `{data['benchmark']}`: {data['what']}."
    )


def _columns(data: dict) -> list[tuple[str, str]]:
    """(label, how to read a row's time) for every system, extras after ours."""
    columns = [(data["labels"][key], key) for key in SYSTEMS]
    extras = dict.fromkeys(name for r in data["rows"] for name in r.get("extra_us", {}))
    return columns + [(name, name) for name in extras]


def _time(r: dict, key: str) -> float | None:
    return r[f"{key}_us"] if key in SYSTEMS else r.get("extra_us", {}).get(key)


def table(data: dict) -> str:
    """The rows as a markdown table: times per system, then the ratios."""
    columns = _columns(data)
    times = [t for r in data["rows"] for _, key in columns if (t := _time(r, key)) is not None]
    unit, scale = ("ms", 1e-3) if min(times) >= 1000 else ("µs", 1.0)
    moved = any("bytes" in r for r in data["rows"])
    header = [f"workload (times in {unit})"] + (["MB moved"] if moved else [])
    header += [name for name, _ in columns]
    header += ["ours / torch.compile", "ours / copy" if moved else "eager / ours"]
    lines = ["| " + " | ".join(header) + " |", "|---" + "|---:" * (len(header) - 1) + "|"]
    for r in data["rows"]:
        cells = [_cell(r["workload"])] + ([f"{r['bytes'] / 1e6:.0f}"] if moved else [])
        for _, key in columns:
            t = _time(r, key)
            cell = "" if t is None else _number(t * scale)
            if moved and t is not None:
                cell += f" ({r['bytes'] / t / 1e3:.0f} GB/s)"
            cells.append(cell)
        cells.append(f"{r['ours_vs_torch_compile']:.2f}")
        cells.append(f"{r['ours_of_copy']:.0%}" if moved else f"{r['eager_vs_ours']:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell(text: str) -> str:
    """Text in a table cell, with the characters markdown would read escaped: `(a+b)*2-a`."""
    for char in "\\|*_`":
        text = text.replace(char, "\\" + char)
    return text


def _number(value: float) -> str:
    """Three significant digits or more: 1.65, 18.4, 594."""
    return f"{value:.2f}" if value < 10 else f"{value:.1f}" if value < 100 else f"{value:.0f}"


def chart(data: dict) -> str:
    """A Mermaid bar chart, one bar per workload and system (per system, for one workload).

    With bytes and the copy bandwidth recorded (the GPU), bars are the
    bandwidth reached as % of copy, with the target as a line; otherwise each
    bar is the time relative to eager (eager = 1, shorter is faster).
    Mermaid draws several bar series on top of each other, so there is one.
    """
    copy = data["extra"].get("copy_gb_s")
    bandwidth = copy is not None and all("bytes" in r for r in data["rows"])
    names, values = [], []
    for r in data["rows"]:
        for name, key in _columns(data):
            t = _time(r, key)
            if t is None:
                continue
            names.append(name if len(data["rows"]) == 1 else f"{r['workload']} · {name}")
            if bandwidth:
                values.append(round(r["bytes"] / t / 1e3 / copy * 100))
            else:
                values.append(round(t / r["eager_us"], 2))
    if bandwidth:
        title, axis = "bandwidth reached, % of copy (longer is better)", "% of copy bandwidth"
    else:
        title, axis = "time relative to eager (shorter is faster)", "time / eager time"
    top = _axis_top(max(values))
    lines = [
        "xychart-beta horizontal",
        f"    title {_quoted(title)}",
        "    x-axis [" + ", ".join(_quoted(n) for n in names) + "]",
        f"    y-axis {_quoted(axis)} 0 --> {top:g}",
        f"    bar [{', '.join(f'{v:g}' for v in values)}]",
    ]
    target = data["extra"].get("target_of_copy")
    if bandwidth and target is not None:
        lines.append(f"    line [{', '.join(f'{target * 100:g}' for _ in values)}]")
    return "\n".join(["```mermaid", *lines, "```"])


def _axis_top(biggest: float) -> float:
    """A round number a little above `biggest`: 1.2 for 1.06, 110 for 100, 16 for 14.6."""
    step = 10 ** math.floor(math.log10(biggest)) / 10
    return round(math.ceil(biggest * 1.05 / step) * step, 6)


def _quoted(text: str) -> str:
    # xychart-beta has no escapes inside its strings: a double quote becomes a single one.
    return '"' + text.replace('"', "'") + '"'


def targets(data: dict) -> str:
    """The benchmark's targets as a list, each marked met or missed."""
    return "\n".join(
        f"- {'met' if t['met'] else '**missed**'}: {t['target']}" for t in data["targets"]
    )
