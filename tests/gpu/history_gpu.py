"""The per-GPU history row of `make gpu-check`: strict repeats of the probe on each GPU, judged by the
fleet history (`envkit fleet history`): how long one cold probe takes, and 0 flips on a healthy GPU.

Each repeat is a cold probe (a new process: the framework's import included) of torch rnn and bert
in strict mode on one GPU (``CUDA_VISIBLE_DEVICES``); the GPUs run side by side, one thread each. The
repeats are filed as fleet runs in a temporary store (run ``i`` holds every GPU's repeat ``i``, the
layout ``envkit probe --slurm`` writes) and :func:`envkit.fleet.history.read_history` judges each
device as it judges a fleet: a healthy GPU is ``stable`` with one set of bits in every repeat (a
flip is a repeat whose numbers differ from the device's first). Goal: a cold probe ≤ 60 s.

Standard library + torch + this checkout (nothing envkit imports here needs more). Without a GPU the
row says "no GPU" (``device="cpu"`` runs the same row on the CPU: the unit test does, with 2 repeats).
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from envkit.fleet.history import read_history
from envkit.fleet.numbers import summarize_run
from envkit.probe.additions import FleetInfo
from envkit.probe.report import dump_report
from envkit.probe.runner import ProbeOptions, run_on_host
from envkit.store import layout

COLD_GOAL_S = 60.0
TITLE = "per-GPU history"


def gpu_count() -> int:
    """The NVIDIA GPUs ``nvidia-smi -L`` lists (0 without the tool or a driver)."""
    if shutil.which("nvidia-smi") is None:
        return 0
    try:
        done = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(line.startswith("GPU ") for line in done.stdout.splitlines()) if done.returncode == 0 else 0


def _repeats(store: Path, task: str, opts: ProbeOptions, repeats: int) -> list[float]:
    """``repeats`` cold probes filed as ``STORE/run-<i>/<task>.json``; their wall times."""
    seconds = []
    for i in range(repeats):
        run_id = f"run-{i:03d}"
        start = time.perf_counter()
        report = run_on_host(opts, label=run_id)
        seconds.append(time.perf_counter() - start)
        filed = report.with_fleet(FleetInfo(run_id, task, task))
        (store / run_id / f"{task}.json").write_text(dump_report(filed))
    return seconds


def history_row(
    repeats: int = 20, steps: int = 5, *, device: str = "cuda", gpus: int | None = None
) -> dict[str, Any]:
    """The row: per GPU (or the CPU, ``device="cpu"``) its verdict, flips and probe times."""
    count = (gpu_count() if gpus is None else gpus) if device == "cuda" else 1
    if count == 0:
        return {"check": TITLE, "status": "no GPU", "ok": True, "devices": []}
    tasks = [f"gpu{k}" for k in range(count)] if device == "cuda" else ["cpu"]
    with tempfile.TemporaryDirectory(prefix="envkit-gpu-history-") as tmp:
        store = Path(tmp)
        for i in range(repeats):
            run_dir = store / f"run-{i:03d}"
            run_dir.mkdir()
            manifest = {
                "run": run_dir.name,
                "scheduler": "local",
                "options": {},
                "created": float(i),
                "result": {},
            }
            (run_dir / layout.MANIFEST).write_text(json.dumps(manifest))

        def one(k: int) -> list[float]:
            env = {"CUDA_VISIBLE_DEVICES": str(k)} if device == "cuda" else {}
            opts = ProbeOptions(frameworks=("torch",), steps=steps, device=device, env=env, readiness=False)
            return _repeats(store, tasks[k], opts, repeats)

        with ThreadPoolExecutor(max_workers=count) as pool:
            times = list(pool.map(one, range(count)))
        numbers: dict[str, list[str | None]] = {t: [] for t in tasks}
        for i in range(repeats):
            for entry in summarize_run(store / f"run-{i:03d}").entries:
                numbers[entry.task].append(entry.numbers)
        verdicts = {d.node: d for d in read_history(store).devices}
    devices = []
    for task, seconds in zip(tasks, times, strict=True):
        seen = numbers[task]
        flips = sum(n != seen[0] for n in seen[1:])
        judged = verdicts.get(task)
        verdict = judged.verdict if judged else "none"
        devices.append({
            "task": task, "device": judged.device if judged else None, "repeats": len(seen),
            "verdict": verdict, "reason": judged.reason if judged else None, "flips": flips,
            "cold_s": round(seconds[0], 2), "median_s": round(statistics.median(seconds), 2),
            "cold_goal_met": seconds[0] <= COLD_GOAL_S,
            "ok": flips == 0 and verdict in ("stable", "explained drift") and len(seen) == repeats,
        })  # fmt: skip
    return {"check": TITLE, "status": "ran", "ok": all(d["ok"] for d in devices), "devices": devices,
            "repeats": repeats, "steps": steps, "cold_goal_s": COLD_GOAL_S}  # fmt: skip


def row_lines(row: dict[str, Any]) -> list[str]:
    """What `make gpu-check` prints for the row."""
    if row["status"] == "no GPU":
        return [f"--   {TITLE}: no GPU (nvidia-smi lists none): not run"]
    lines = []
    for d in row["devices"]:
        goal = "met" if d["cold_goal_met"] else "MISSED"
        lines.append(
            f"{'ok  ' if d['ok'] else 'FAIL'} {TITLE} {d['task']}: {d['verdict']}, {d['flips']} flip(s) in "
            f"{d['repeats']} strict repeats; cold probe {d['cold_s']} s (goal ≤ {row['cold_goal_s']:g} s: "
            f"{goal}), median {d['median_s']} s"
        )
    return lines
