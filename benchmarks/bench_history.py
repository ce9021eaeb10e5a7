"""``envkit fleet history`` over 1,000 devices × 100 runs, as a process (the issue's bound: seconds).

The store holds 100 ended runs of 1,000 tasks each, every run already summarized (what a run's
first history query after it ended leaves in ``STORE/RUN/.history/numbers.json``): one device is
mercurial (other bits on 30 % of its runs), 5 run with another thread count (explained drift),
the rest agree. Timed: the whole command with ``--json`` and the timeline page, reading every
summary, judging every device and writing each node's verdict for ``envkit health``. Then
``envkit health`` on one node, as a process (the hook's bound: under 1 s).
Also timed, in this process: summarizing one run from its 1,000 reports (once per run).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._goals import ROOT, record, run_cli, scaled
from benchmarks.bench_fleet import _flip, _report
from envkit.fleet.numbers import Entry, RunNumbers, summarize_run
from envkit.store import layout

DEVICES = scaled(1000, 20)
RUNS = scaled(100, 5)


def _entries(run: int) -> list[Entry]:
    out = []
    for d in range(DEVICES):
        node = f"node{d:04d}"
        flipped = d == 3 and run % 10 in (2, 5, 8)
        explained = d % 200 == 11
        numbers = "b" * 20 if flipped else ("c" * 20 if explained else "a" * 20)
        state = "suspect" if flipped else ("explained" if explained else "majority")
        reason = "equivalent: threads 1 vs 2" if explained else None
        setup = "s2" * 10 if explained else "s1" * 10
        out.append(
            Entry(node, node, f"{node}:3d1219c7c4c5", setup, "host, driver none", numbers, state, reason)
        )
    return out


def _store(root: Path) -> None:
    for r in range(RUNS):
        run_dir = root / f"run-{r:03d}"
        (run_dir / layout.HISTORY).mkdir(parents=True)
        manifest = {"run": run_dir.name, "scheduler": "slurm", "options": {}, "created": float(r),
                    "result": {"tasks": []}}  # fmt: skip
        (run_dir / layout.MANIFEST).write_text(json.dumps(manifest))
        summary = RunNumbers(run_dir.name, float(r), tuple(_entries(r)))
        (run_dir / layout.HISTORY / "numbers.json").write_text(json.dumps(summary.to_json()))


def _summarize_one(root: Path) -> float:
    """One run of DEVICES reports summarized from the reports (N-way compare, digests)."""
    run_dir = root / "run-fresh"
    (run_dir / layout.TASKS).mkdir(parents=True)
    manifest = {"run": "run-fresh", "scheduler": "slurm", "options": {}, "created": 1e9}
    (run_dir / layout.MANIFEST).write_text(json.dumps(manifest))
    base = _report("x", 1, 0.0)
    for i in range(DEVICES):
        report = json.loads(json.dumps(base))
        report["fingerprint"]["host"] = f"node{i:04d}"
        report["fleet"] = {"run": "run-fresh", "task": f"node{i:04d}", "node": f"node{i:04d}", "job": None,
                           "repeat": None}  # fmt: skip
        if i == 3:
            step = report["frameworks"]["torch"]["workloads"]["bert"]["steps"][3]
            step["loss"] = _flip(step["loss"])
        (run_dir / f"node{i:04d}.json").write_text(json.dumps(report))
    start = time.perf_counter()
    summary = summarize_run(run_dir)
    seconds = time.perf_counter() - start
    assert [e.task for e in summary.entries if e.state == "suspect"] == ["node0003"]
    return seconds


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        _store(store)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        html = Path(tmp) / "history.html"
        argv = [sys.executable, "-m", "envkit", "fleet", "history", str(store), "--json", "--html", str(html)]
        measured = run_cli(argv, env, ok=(1,))
        verdicts = json.loads((store / layout.HEALTH / layout.HEALTH_FILE).read_text())["nodes"]["node0003"]
        verdicts = verdicts["verdict"]
        print(f"   {DEVICES} devices x {RUNS} runs: {measured.line()}; node0003: {verdicts}")
        print(f"   timeline page: {html.stat().st_size / 1e6:.1f} MB")
        record("history", measured.wall, f"{DEVICES} devices x {RUNS} runs")
        hook = [
            sys.executable,
            "-m",
            "envkit",
            "health",
            "--store",
            str(store),
            "--node",
            "node0003",
            "--json",
        ]
        measured = run_cli(hook, env, ok=(1,))
        print(f"   envkit health (node0003, mercurial): {measured.line()}")
        record("health", measured.wall, "one node's verdict, read")
        seconds = _summarize_one(Path(tmp))
        print(f"   summarizing one run of {DEVICES} reports (once per run): {seconds:.2f} s")
