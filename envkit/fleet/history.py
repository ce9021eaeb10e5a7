"""A fleet's numerical history: every run in the store, per device, and a verdict per device.

Each run is read in brief (:mod:`envkit.fleet.numbers`: device, setup, numbers per task); a device's
entries, oldest first, give its verdict, worst first:

- **mercurial**: under one setup (same image, driver, envkit, switches…) its bits changed from run
  to run: it disagrees with its own past, or its numbers flip. The signature of a faulty device.
- **suspect**: its bits always differ from the majority's under the same setup, and never change
  (a steady fault, or a difference nothing recorded).
- **failed**: its latest task in the store failed (the reason is the task's).
- **explained drift**: its bits differ from the majority's and the fingerprint says why (another
  thread count, TF32, a library version): not the hardware.
- **stable**: always with the majority (or alone, with the same bits every time).

Core code: values in, values out. :func:`node_verdicts` is what ``envkit health`` reads, written
by :func:`write_health` into ``STORE/.health/verdicts.json`` (one file: one atomic write per query).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from envkit.errors import EnvkitError
from envkit.fleet.numbers import Entry, RunNumbers, is_probe_run, summarize_run
from envkit.store import runs
from envkit.store.layout import HEALTH, HEALTH_FILE, MANIFEST
from envkit.store.manifest import read_manifest

__all__ = [
    "VERDICTS",
    "DeviceHistory",
    "FleetHistory",
    "judge",
    "node_verdicts",
    "read_history",
    "refresh_health",
    "write_health",
]

VERDICTS = ("mercurial", "suspect", "failed", "explained drift", "stable")  # worst first
BAD = frozenset({"mercurial", "suspect", "failed"})


@dataclass(frozen=True)
class DeviceHistory:
    """One device across the store's runs: its state in each, and its verdict."""

    device: str
    node: str
    states: tuple[tuple[str, str], ...]  # (run, state in that run), oldest first
    verdict: str
    reason: str
    first_suspect: str | None
    last_suspect: str | None
    setups: int  # how many setups it ran under

    @property
    def bad(self) -> bool:
        return self.verdict in BAD

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        data["states"] = [{"run": r, "state": s} for r, s in self.states]
        data["runs_seen"] = len(self.states)
        return data


@dataclass(frozen=True)
class FleetHistory:
    """The store's runs (oldest first), every device's history, and the runs that could not be read."""

    store: Path
    runs: tuple[str, ...]
    created: tuple[float, ...]  # each run's creation time (seconds since the epoch)
    devices: tuple[DeviceHistory, ...]
    skipped: tuple[tuple[str, str], ...]

    @property
    def ok(self) -> bool:
        return not any(d.bad for d in self.devices)

    def counts(self) -> dict[str, int]:
        return {v: sum(d.verdict == v for d in self.devices) for v in VERDICTS}

    def to_json(self) -> dict[str, object]:
        return {
            "store": str(self.store),
            "runs": list(self.runs),
            "counts": self.counts(),
            "ok": self.ok,
            "devices": [d.to_json() for d in self.devices],
            "skipped": [{"run": r, "error": e} for r, e in self.skipped],
        }


def _mercurial(entries: Sequence[tuple[str, Entry]]) -> str | None:
    """Why these entries (one device) are mercurial: one setup, several sets of bits; else None."""
    by_setup: dict[str, dict[str, str]] = {}
    for run, e in entries:
        if e.setup is not None and e.numbers is not None:
            by_setup.setdefault(e.setup, {}).setdefault(e.numbers, run)
    for numbers in by_setup.values():
        if len(numbers) > 1:
            firsts = sorted(numbers.values(), key=[r for r, _ in entries].index)
            return (f"{len(numbers)} different sets of bits under one setup "
                    f"(first seen in runs {', '.join(firsts[:3])})")  # fmt: skip
    return None


def judge(entries: Sequence[tuple[str, Entry]]) -> tuple[str, str]:
    """A device's verdict and its reason, from its entries (run, entry), oldest first."""
    why = _mercurial(entries)
    if why:
        return "mercurial", why
    states = [e.state for _, e in entries]
    suspects = [e for _, e in entries if e.state == "suspect"]
    if states[-1] == "failed":
        return "failed", entries[-1][1].reason or "failed"
    if suspects:
        return "suspect", f"{len(suspects)} of {len(states)} runs: {suspects[-1].reason or 'suspect'}"
    explained = [e for _, e in entries if e.state == "explained"]
    if explained:
        return "explained drift", explained[-1].reason or "explained by the fingerprint"
    return "stable", f"{states.count('majority')} of {len(states)} runs with the majority"


def _histories(summaries: Sequence[RunNumbers]) -> list[DeviceHistory]:
    by_device: dict[str, list[tuple[str, Entry]]] = {}
    last_device: dict[str, str] = {}  # task name -> the device it last reported (a failed task has none)
    for summary in summaries:
        for e in summary.entries:
            device = e.device or last_device.get(e.task) or f"{e.node}:?"
            if e.device:
                last_device[e.task] = e.device
            by_device.setdefault(device, []).append((summary.run, e))
    out = []
    for device, entries in by_device.items():
        verdict, reason = judge(entries)
        suspects: list[str | None] = [r for r, e in entries if e.state == "suspect"] or [None]
        setups = len({e.setup for _, e in entries if e.setup})
        states = tuple((r, e.state) for r, e in entries)
        out.append(
            DeviceHistory(
                device, entries[-1][1].node, states, verdict, reason, suspects[0], suspects[-1], setups
            )
        )
    out.sort(key=lambda d: (VERDICTS.index(d.verdict), d.node, d.device))
    return out


def _run_dirs(store: Path) -> Iterable[Path]:
    try:
        children = sorted(store.iterdir(), key=lambda p: p.name)
    except OSError as e:
        raise EnvkitError(
            f"{store}: cannot read the store: {e.strerror or e}", hint="give --store DIR"
        ) from e
    return (p for p in children if not p.name.startswith(".") and (p / MANIFEST).is_file())


def _summary(run_dir: Path) -> RunNumbers | str | None:
    """The run in brief; the error, when it cannot be read; None when it is not a probe run."""
    try:
        if not is_probe_run(read_manifest(run_dir).document):
            return None
        return summarize_run(run_dir)
    except EnvkitError as e:
        return e.message


def read_history(store: Path, *, last: int | None = None) -> FleetHistory:
    """Every fleet probe run in ``store`` (the ``last`` N by time), summarized, and each device judged."""
    summaries: list[RunNumbers] = []
    skipped: list[tuple[str, str]] = []
    for run_dir in _run_dirs(store):
        read = _summary(run_dir)
        if isinstance(read, RunNumbers):
            summaries.append(read)
        elif read is not None:
            skipped.append((run_dir.name, read))
    summaries.sort(key=lambda s: (s.created, s.run))
    if last is not None:
        summaries = summaries[-last:]
    return FleetHistory(store, tuple(s.run for s in summaries), tuple(s.created for s in summaries),
                        tuple(_histories(summaries)), tuple(skipped))  # fmt: skip


def node_verdicts(history: FleetHistory) -> dict[str, dict[str, object]]:
    """Per node: its worst device's verdict and reason, every device's, and its latest probe (run, time)."""
    by_node: dict[str, list[DeviceHistory]] = {}
    for d in history.devices:  # worst first already
        by_node.setdefault(d.node, []).append(d)
    created = dict(zip(history.runs, history.created, strict=True))
    out: dict[str, dict[str, object]] = {}
    for node, devices in sorted(by_node.items()):
        worst = devices[0]
        last_run = max((d.states[-1][0] for d in devices), key=lambda r: created[r])
        out[node] = {
            "node": node,
            "verdict": worst.verdict,
            "reason": f"{worst.device}: {worst.reason}" if worst.bad else worst.reason,
            "devices": [{"device": d.device, "verdict": d.verdict, "reason": d.reason} for d in devices],
            "last_run": last_run,
            "probed": created[last_run],
        }
    return out


def write_health(history: FleetHistory) -> Path:
    """``STORE/.health/verdicts.json``: every node's verdict, one file written atomically (mode 0644)."""
    path = history.store / HEALTH / HEALTH_FILE
    data = {"updated": time.time(), "runs": len(history.runs), "nodes": node_verdicts(history)}
    runs.write_json(path, data, within=history.store)
    return path


def refresh_health(store: Path) -> dict[str, str]:
    """After a fleet run: the whole store judged again and ``STORE/.health/verdicts.json`` rewritten,
    so that ``envkit health`` sees the new run without a ``fleet history`` of its own. Node -> verdict."""
    history = read_history(store)
    write_health(history)
    return {node: str(v["verdict"]) for node, v in node_verdicts(history).items()}
