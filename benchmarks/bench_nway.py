"""N-way comparison of a 10,000-node fleet run (goal: under 5 s, peak RSS under 1 GiB).

The template is a real report: ``data/probe-report-torch-paddle-cpu.json``, written on this
machine by ``envkit probe --frameworks torch,paddle --steps 10`` (torch 2.15.0 and paddle 3.3.1 on
CPU, 153 distributions, 33 KB). Each node's copy carries its own host name; planted outliers:
8 nodes with 2 threads whose every loss and grad norm moved by a relative 1e-7 (``equivalent``),
2 with one flipped low bit in one loss (same fingerprint: ``suspect``).
The case runs ``compare_n`` on STORE/RUN in a fresh process (time, CPU time, peak RSS).
``ENVKIT_BENCH_REPORTS=N`` changes the count.
"""

from __future__ import annotations

import json
import struct
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._goals import knob, record, run_case

TEMPLATE = Path(__file__).parent / "data" / "probe-report-torch-paddle-cpu.json"
HOST = '"host": "vm"'
NOISY_EVERY = 1250  # nodes i % 1250 == 7: 2 threads
FLIPPED_AT = (0.5, 0.9)  # silently faulty: the nodes at these fractions of the run


def _flip(value: float) -> float:
    (bits,) = struct.unpack("<q", struct.pack("<d", value))
    (out,) = struct.unpack("<d", struct.pack("<q", bits ^ 1))
    return float(out)


def _variants() -> dict[str, str]:
    """The template's text as it is, with 2 threads (noise) and with one flipped bit."""
    text = TEMPLATE.read_text("utf-8")
    noisy: dict[str, Any] = json.loads(text)
    noisy["config"]["threads"] = 2
    noisy["fingerprint"]["env"] = {"OMP_NUM_THREADS": "2"}
    for fw in noisy["frameworks"].values():
        for wl in fw["workloads"].values():
            for step in wl["steps"]:
                step["loss"] *= 1 + 1e-7
                step["grad_norm"] *= 1 + 1e-7
    flipped: dict[str, Any] = json.loads(text)
    step = flipped["frameworks"]["torch"]["workloads"]["bert"]["steps"][3]
    step["loss"] = _flip(step["loss"])

    def dump(data: dict[str, Any]) -> str:
        return json.dumps(data, indent=1, sort_keys=True) + "\n"

    return {"base": text, "noisy": dump(noisy), "flipped": dump(flipped)}


def write_run(run: Path, n: int) -> float:
    """``n`` reports and a manifest in ``run``; the mean report size in bytes."""
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"run": run.name, "scheduler": "slurm"}))
    variants = _variants()
    flipped = {int(n * f) for f in FLIPPED_AT}
    total = 0
    for i in range(n):
        host = f"node{i:05d}"
        kind = "noisy" if i % NOISY_EVERY == 7 else "flipped" if i in flipped else "base"
        text = variants[kind].replace(HOST, f'"host": "{host}"', 1)
        (run / f"{host}.json").write_text(text, "utf-8")
        total += len(text)
    return total / n


def case(run: str) -> tuple[float, float, dict[str, Any]]:
    from envkit.comparison.many import compare_n

    start, cpu = time.perf_counter(), time.process_time()
    done = compare_n([run], Path(run).parent)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    r = done.result
    info = {
        "groups": len(r.groups),
        "majority": len(r.groups[0].members),
        "outliers": len(r.outliers),
        "suspects": [o.name for o in r.outliers if o.suspect],
    }
    return wall, cpu, info


def main() -> None:
    n = int(knob("ENVKIT_BENCH_REPORTS", "10000", "20"))
    with tempfile.TemporaryDirectory(prefix="envkit-bench-") as tmp:
        run = Path(tmp) / "run-bench"
        start = time.perf_counter()
        size = write_run(run, n)
        print(f"   wrote {n} reports ({size / 1e3:.0f} KB each) in {time.perf_counter() - start:.1f} s")
        m = run_case("benchmarks.bench_nway:case", str(run))
    i = m.info
    print(f"   compare_n on the run: {m.line()}")
    print(
        f"   {i['groups']} groups, majority {i['majority']}, {i['outliers']} outliers, "
        f"suspects: {', '.join(i['suspects'])}"
    )
    if n == 10_000:
        record("nway", m.wall, f"{m.cpu:.2f} s CPU, load {m.load:.1f}")
        record("nway_rss", m.rss_mib)
