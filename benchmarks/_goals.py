"""The figures of issue 22's table, each with its goal: benches record them, ``__main__`` prints them.

A figure is *measured* by a bench (``record``); ``table`` prints every row of the table, the
measured value, the goal and ``ok`` or by how much it misses ("not run" when that bench was not
selected). Time goals compare wall time; the CPU time and peak RSS are printed beside it, with the
load average (2 cores shared by several engineers here: wall time includes waiting for a core).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SMOKE_ENV = "ENVKIT_BENCH_SMOKE"  # set by ``python -m benchmarks --smoke`` (``make bench-smoke``, CI)


def smoke() -> bool:
    """Whether this is the smoke run: tiny sizes, every code path, goals not judged."""
    return os.environ.get(SMOKE_ENV) == "1"


def scaled(full: int, tiny: int) -> int:
    """A size: ``full`` in the real run, ``tiny`` in the smoke run."""
    return tiny if smoke() else full


def knob(name: str, full: str, tiny: str) -> str:
    """An ``ENVKIT_BENCH_*`` setting: the environment's value, else the run's default."""
    return os.environ.get(name) or (tiny if smoke() else full)


@dataclass(frozen=True)
class Goal:
    key: str
    figure: str
    limit: float  # the largest value that meets the goal
    unit: str  # "s" or "x" (a ratio)


GOALS = (
    Goal("nway", "N-way compare, 10,000 probe reports", 5.0, "s"),
    Goal("nway_rss", "N-way compare, 10,000 reports: peak RSS", 1024.0, "MiB"),
    Goal("diff", "fleet diff, 10,000 pip freezes x 400 packages, read + diff", 10.0, "s"),
    Goal("audit_warm", "envkit audit, 400 packages vs the full PyPA database + SARIF, warm", 0.5, "s"),
    Goal("audit_images", "audit 100 image snapshots x 400 packages", 5.0, "s"),
    Goal("lock_ratio", "lock, 50k-record channel x 2 platforms / bare py-rattler solve", 1.2, "x"),
    Goal("help", "envkit --help (the process)", 0.05, "s"),
    Goal("cli_compare_files", "envkit probe --compare of 10,000 report files (the process)", 5.0, "s"),
    Goal("cli_compare_run", "envkit probe --compare of a store run of 100,000 (the process)", 30.0, "s"),
    Goal("cli_compare_run_rss", "envkit probe --compare of a store run of 100,000: peak RSS", 2048.0, "MiB"),
    Goal("cli_diff", "envkit diff of 10,000 pip freezes x 400 packages (the process)", 10.0, "s"),
    Goal("cli_audit", "envkit audit of 400 packages + SARIF, warm (the process)", 0.3, "s"),
    Goal("probe_ratio", "probe vs a hand-written script (CPU time)", 1.05, "x"),
    Goal("history", "envkit fleet history, 1,000 devices x 100 runs + timeline (the process)", 5.0, "s"),
    Goal("health", "envkit health, one node's verdict (the process; a node-check hook)", 1.0, "s"),
    Goal("readiness", "envkit check of the torch CUDA image (3 targets), median", 30.0, "s"),
    Goal(
        "layers_one_pin_s", "one pure-Python pin, CUDA 11.8 spec of the flagship's shape: rebuild", 60.0, "s"
    ),
    Goal("layers_one_pin_new_mb", "one pure-Python pin: new layer bytes", 100.0, "MB"),
    Goal(
        "layers_flagship_one_pin_s",
        "one pure-Python pin, the flagship cuda11.8-paddle2.6: rebuild",
        60.0,
        "s",
    ),
    Goal("layers_flagship_one_pin_new_mb", "one pure-Python pin, the flagship: new layer bytes", 100.0, "MB"),
    Goal("layers_noop_fresh_clone_s", "no-op envkit build in a fresh clone (the process)", 3.0, "s"),
)
_BY_KEY = {g.key: g for g in GOALS}
_MEASURED: dict[str, tuple[float, str]] = {}


def record(key: str, value: float, detail: str = "") -> None:
    """Keep the measured ``value`` of figure ``key`` for the closing table."""
    goal = _BY_KEY[key]
    _MEASURED[key] = (value, detail)
    shown, limit = _fmt(value, goal.unit), _fmt(goal.limit, goal.unit)
    print(f"   -> {goal.figure}: {shown} (goal <= {limit}) {verdict(key)}")


def verdict(key: str) -> str:
    goal = _BY_KEY[key]
    value, _ = _MEASURED[key]
    if smoke():
        return "(smoke run: not judged)"
    return "ok" if value <= goal.limit else f"MISSES by {value / goal.limit:.2f}x"


def _fmt(value: float, unit: str) -> str:
    if unit == "x":
        return f"{value:.3f}x"
    if unit == "MiB":
        return f"{value:.0f} MiB"
    if unit == "MB":
        return f"{value:.1f} MB"
    return f"{value:.3f} s" if value < 1 else f"{value:.2f} s"


def table() -> None:
    print("== goals (issue 22)" + (": smoke run, tiny sizes, nothing judged" if smoke() else ""))
    width = max(len(g.figure) for g in GOALS)
    for goal in GOALS:
        if goal.key not in _MEASURED:
            print(f"   {goal.figure:<{width}}  {'not run':>10}  goal <= {_fmt(goal.limit, goal.unit)}")
            continue
        value, detail = _MEASURED[goal.key]
        shown = f"{_fmt(value, goal.unit):>10}  goal <= {_fmt(goal.limit, goal.unit):<9} {verdict(goal.key)}"
        print(f"   {goal.figure:<{width}}  {shown}" + (f"  ({detail})" if detail else ""))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"   load average {load} on {os.cpu_count()} CPUs")


@dataclass(frozen=True)
class Measured:
    """One case run in its own process: wall and CPU seconds of the timed part, the process's peak RSS."""

    wall: float
    cpu: float
    rss_mib: float
    load: float  # 1-minute load average when it ended
    info: dict[str, Any]

    def line(self) -> str:
        return (
            f"{self.wall:.2f} s wall, {self.cpu:.2f} s CPU, peak RSS {self.rss_mib:.0f} MiB "
            f"(load {self.load:.1f})"
        )


def run_case(function: str, *args: str, env: dict[str, str] | None = None) -> Measured:
    """Run ``module:function(*args)`` in a fresh interpreter (so the RSS is this case's alone).

    The function returns ``(wall, cpu, info)`` for the part it times; the child adds its peak RSS.
    """
    code = f"import sys; from benchmarks._goals import _child; _child({function!r}, sys.argv[1:])"
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=ROOT,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"benchmark case {function} failed:\n{done.stderr[-3000:]}")
    data = json.loads(done.stdout.strip().splitlines()[-1])
    return Measured(data["wall"], data["cpu"], data["rss_mib"], data["load"], data["info"])


def run_cli(argv: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,)) -> Measured:
    """Run a command line; wall time, its CPU time (user + system) and peak RSS (``wait4``)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if code not in ok:
        raise RuntimeError(f"{' '.join(argv)} exited with {code}:\n{stderr[-3000:]}")
    info = {"stdout": stdout[-2000:], "exit": code}
    return Measured(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, os.getloadavg()[0], info)


def _child(function: str, args: list[str]) -> None:
    import importlib

    module, _, name = function.partition(":")
    wall, cpu, info = getattr(importlib.import_module(module), name)(*args)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out = {"wall": wall, "cpu": cpu, "rss_mib": rss, "load": os.getloadavg()[0], "info": info}
    print(json.dumps(out))
