"""False alarms: N clean runs of the real CPU probe, then ``fleet history``: no device may be mercurial.

Each run is one probe on this host (torch, rnn and bert, 5 steps, 1 thread, strict), filed in a
temporary store as a fleet run of its own (the same layout ``envkit probe --slurm`` writes); the
history then compares the device's bits run after run. ``ENVKIT_BENCH_CLEAN_RUNS`` sets N (100 by
default, the issue's figure; 2 in the smoke run). Prints how many mercurial/suspect verdicts (0 expected).
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from benchmarks._goals import knob
from envkit.fleet.history import read_history
from envkit.probe.additions import FleetInfo
from envkit.probe.report import dump_report
from envkit.probe.runner import ProbeOptions, run_on_host
from envkit.store import layout

OPTS = ProbeOptions(frameworks=("torch",), workloads=("rnn", "bert"), steps=5, threads=1, readiness=False)


def main() -> None:
    runs = int(knob("ENVKIT_BENCH_CLEAN_RUNS", "100", "2"))
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp)
        start = time.perf_counter()
        for i in range(runs):
            run_id = f"clean-{i:03d}"
            run_dir = store / run_id
            run_dir.mkdir()
            manifest = {"run": run_id, "scheduler": "local", "options": {}, "created": float(i), "result": {}}
            (run_dir / layout.MANIFEST).write_text(json.dumps(manifest))
            report = run_on_host(OPTS, label=run_id).with_fleet(FleetInfo(run_id, "host", "host"))
            (run_dir / "host.json").write_text(dump_report(report))
        probing = time.perf_counter() - start
        history = read_history(store)
    verdicts = history.counts()
    bad = verdicts["mercurial"] + verdicts["suspect"]
    print(f"   {runs} clean CPU probe runs in {probing:.0f} s; verdicts: {verdicts}")
    print(f"   false alarms (mercurial or suspect): {bad}" + ("" if bad == 0 else "  <- UNEXPECTED"))
