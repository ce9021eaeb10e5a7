"""Start-up of the CLI: `envkit --help` and `envkit probe --compare A B` (target: under 0.25 s wall).

The goal figure of `envkit --help` is recorded by bench_cli (medians, beside the start-up floor).

Each command runs ``ROUNDS`` times; the minimum wall time and the minimum CPU time (user + system
of the child) are printed. On a loaded machine the wall time includes waiting for a core; the CPU
time is what the start-up itself costs. ``python -X importtime`` shows where it goes.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._goals import scaled

ROUNDS = scaled(10, 1)
TARGET_S = 0.25
ROOT = Path(__file__).resolve().parents[1]


def _measure(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(ROUNDS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, env=env, cwd=cwd)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return min(walls), min(cpus)


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from tests.unit.probe.conftest import make_report

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp) / "a.json", Path(tmp) / "b.json"
        a.write_text(json.dumps(make_report()), "utf-8")
        b.write_text(json.dumps(make_report(host="host-b")), "utf-8")
        cases = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "envkit --help": [sys.executable, "-m", "envkit", "--help"],
            "envkit probe --compare A B": [
                sys.executable,
                "-m",
                "envkit",
                "probe",
                "--compare",
                str(a),
                str(b),
            ],
        }
        for label, argv in cases.items():
            wall, cpu = _measure(argv, env, tmp)
            mark = (
                ""
                if label.startswith("python")
                else f"  ({'ok' if wall <= TARGET_S else 'over'} {TARGET_S} s)"
            )
            print(f"   {label:<28} wall {wall:.3f} s, cpu {cpu:.3f} s{mark}")
    print(f"   load average: {', '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
