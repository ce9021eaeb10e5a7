"""``envkit probe --compare runA runB --html OUT`` for two guarded runs of 100,000 steps: time and bytes.

The two ``RUN/report.json`` files are shaped as ``envkit.guard.runlog.RunLog`` writes them (one
workload, 100 parameters; ``tests/unit/probe/long_runs.py``); side B carries rounding noise growing
to a relative 1e-6, a relative 1e-2 spike at step 73,211 and 3 parameters that differ. Printed:
the size of each report, the whole command (read, parse, compare on every step, render, write) as
``compare_files`` runs it, the render alone, the page's size and its number of drawn points; the
same for an N-way page of three such runs. ``ENVKIT_BENCH_STEPS=N`` changes the step count.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from benchmarks._goals import knob
from envkit.comparison.files import compare_files
from envkit.comparison.html import render_html
from envkit.comparison.nway import compare_many
from envkit.comparison.nway_html import render_nway_html
from envkit.probe.report import load_report
from tests.unit.probe.long_runs import long_report

T = TypeVar("T")


def _timed(fn: Callable[[], T]) -> tuple[float, T]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main() -> None:
    steps = int(knob("ENVKIT_BENCH_STEPS", "100000", "200"))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths = []
        for name, doc in (
            ("runA", long_report(steps)),
            (
                "runB",
                long_report(steps, host="host-b", noise=1e-6, spikes={steps * 73 // 100: 1e-2}, differing=3),
            ),
        ):
            path = root / name / "report.json"
            path.parent.mkdir()
            path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
            paths.append(path)
        size = sum(p.stat().st_size for p in paths) / len(paths)
        print(f"   {steps:,} steps, 100 parameters: report.json {size / 1e6:.1f} MB each")
        out = root / "page.html"
        wall, done = _timed(lambda: compare_files((str(paths[0]), str(paths[1])), root, html=out))
        page = out.read_text("utf-8")
        points = sum(len(p.split()) for p in re.findall(r'points="([^"]*)"', page))
        verdict = done.comparison.verdict
        print(
            f"   probe --compare A B --html: {wall:.2f} s (read + parse + compare + render + write), "
            f"verdict {verdict}; page {len(page.encode()) / 1e3:.1f} KB, {points} points drawn"
        )
        a, b = load_report(paths[0]), load_report(paths[1])
        render, _ = _timed(lambda: render_html(a, b, done.comparison))
        print(f"   render_html alone: {render * 1e3:.0f} ms")
        named = [("n1", a), ("n2", a), ("n3", b)]
        nway = compare_many(named)
        render, nway_page = _timed(lambda: render_nway_html(named, nway))
        print(
            f"   render_nway_html, 3 runs: {render * 1e3:.0f} ms, page {len(nway_page.encode()) / 1e3:.1f} KB"
        )
