"""``envkit guard show RUN --html OUT`` over a large ``steps.jsonl``: seconds and peak memory.

A run folder with a ``report.json`` (the shape of ``tests/unit/guard/test_show_hostile.py``) and a
``steps.jsonl`` of ``ENVKIT_BENCH_STEPS_MB`` MB (100; 1 under ``--smoke``) of step records with
random losses and two parameter groups; the command runs in a child process (``python -m envkit``)
and its peak resident memory is the child's ``ru_maxrss`` (``os.wait4``). The page's memory is
bounded by its width (a min/max envelope per pixel column, streamed), not by the file: 100 MB of steps
took 20 MiB where the whole-file parse took 862 MiB (issue 43 item 6).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._goals import knob
from tests.unit.guard.test_show_hostile import _step, report


def _steps(path: Path, megabytes: int) -> int:
    rnd = random.Random(0)
    n = 0
    with path.open("w") as fh:
        while fh.tell() < megabytes << 20:
            row = _step(n) | {"loss": rnd.random(), "grad_norm": 10 * rnd.random(), "lrs": [0.1, 0.01]}
            row["update_ratios"] = [1e-3, rnd.random()]
            fh.write(json.dumps(row) + "\n")
            n += 1
    return n


def main() -> None:
    megabytes = int(knob("ENVKIT_BENCH_STEPS_MB", "100", "1"))
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        run.mkdir()
        (run / "report.json").write_text(json.dumps(report()))
        count = _steps(run / "steps.jsonl", megabytes)
        repo = str(Path(__file__).resolve().parents[1])
        env = {**os.environ, "PYTHONPATH": repo + os.pathsep + os.environ.get("PYTHONPATH", "")}
        start = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-m", "envkit", "guard", "show", str(run), "--html", f"{tmp}/page.html"],
            env=env, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        page = (Path(tmp) / "page.html").stat().st_size
    print(
        f"guard show --html: {megabytes} MB of steps ({count} steps): {seconds:.2f} s, "
        f"peak {usage.ru_maxrss / 1024:.1f} MiB resident, page {page / 1024:.0f} KiB "
        f"(exit {child.returncode})"
    )
