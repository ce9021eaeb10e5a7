"""Read a guarded run after the fact: a closed run's ``report.json``, or what a run that never closed wrote.

A run that ended with ``guard.close()`` has ``RUN/report.json`` (``guard.closed`` true). A run that
was killed (SIGKILL, the OOM killer), crashed outside the guard, or simply never called ``close()``
has only what the guard appends while it runs: ``steps.jsonl`` (every ``flush_every`` steps and at
each incident), ``incidents.jsonl`` (each incident as it happens), ``incidents/step-N/`` (the dumps)
and ``ledger.jsonl`` (the batches skipped). :func:`read_run` rebuilds the run's summary from those and
says that the run did not close; a ``report.json`` written mid-run (at a stop or a raised step) is
used unless the appended files hold more steps. Every field is checked (:mod:`envkit.incident.rows`).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envkit._io import open_regular
from envkit.errors import ReportError
from envkit.incident.rows import (
    ReadStats,
    StepRow,
    check_bool,
    check_count,
    check_int,
    check_text,
    jsonl_rows,
    step_row,
)
from envkit.probe.report import load_report

__all__ = ["MAX_LIVE_BYTES", "RunView", "check_incident", "read_run"]

MAX_LIVE_BYTES = 1 << 30  # steps.jsonl of ~3 million steps; read streaming, counted, never held
MAX_INCIDENT_BYTES = 64 << 20
MAX_INCIDENTS = 10_000
DUMP_DIR = re.compile(r"step-(\d{1,18})(?:-rank-\d{1,6})?")
NOT_CLOSED = (
    "the run did not close (killed, out of memory, or guard.close() never called): read from the files "
    "it appends while it runs; steps after its last flush (every flush_every steps, and at each "
    "incident) were never written"
)


@dataclass(frozen=True)
class Skip:
    """A step the guard itself skipped (never a GradScaler's routine back-off) and why."""

    step: int
    reason: str


@dataclass(frozen=True)
class RunView:
    """What ``envkit guard show`` says of a run: counts, skips, incidents, and how it was read."""

    run: str
    closed: bool
    steps: int
    skips: tuple[Skip, ...]
    overflows: int
    clipped_steps: int
    incidents: tuple[dict[str, object], ...]
    config: dict[str, object]
    rank: int
    world_size: int
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        spikes = sum(1 for i in self.incidents if str(i["kind"]).endswith("-spike"))
        return {
            "run": self.run,
            "closed": self.closed,
            "steps": self.steps,
            "skipped": len(self.skips),
            "skips": [{"step": s.step, "reason": s.reason} for s in self.skips],
            "overflows": self.overflows,
            "clipped_steps": self.clipped_steps,
            "clipped_share": self.clipped_steps / self.steps if self.steps else 0.0,
            "incidents": list(self.incidents),
            "spikes": spikes,
            "config": self.config,
            "rank": self.rank,
            "world_size": self.world_size,
            "notes": list(self.notes),
        }


def check_incident(value: Any, where: str) -> dict[str, object]:
    """An incident record with every field ``guard show`` reads checked for its type."""
    if not isinstance(value, dict):
        raise ReportError(f"{where}: expected an incident (an object)", hint="the run folder was edited")
    check_int(value.get("step"), f"{where}: step")
    for key in ("kind", "message", "action"):
        check_text(value.get(key), f"{where}: {key}")
    for key in ("dump", "recording_error"):
        check_text(value.get(key), f"{where}: {key}", optional=True)
    ranks = value.get("ranks", [])
    if not isinstance(ranks, list) or len(ranks) > 100_000:
        raise ReportError(f"{where}: ranks: expected a list of integers", hint="the run folder was edited")
    for n, rank in enumerate(ranks):
        check_count(rank, f"{where}: ranks[{n}]")
    for key in ("localization", "context", "param_grad_norms"):
        if value.get(key) is not None and not isinstance(value[key], dict):
            raise ReportError(f"{where}: {key}: expected an object", hint="the run folder was edited")
    return value


def read_run(run: Path) -> RunView:
    """The run's summary: from a closed ``report.json``, else from what the live run appended."""
    path = run / "report.json" if run.is_dir() or not run.name.endswith(".json") else run
    folder = path.parent
    if not folder.is_dir():
        raise ReportError(
            f"{path}: no such report (no such folder)", hint="give the RUN folder of a Guard(run=...)"
        )
    report = _from_report(path) if os.path.lexists(path) else None
    if report is not None and report.closed:
        if _lines_in(folder / "steps.jsonl") <= report.steps:
            return report
        # close() rewrites steps.jsonl with the report's steps: more lines were appended after it
        live = _from_live(folder)
        assert live is not None
        return _with_notes(
            live,
            "steps.jsonl holds more steps than the closed report.json: a later run "
            "in this folder (resumed) appended them and did not close; read from the files",
        )
    live = _from_live(folder)
    if live is None and report is None:
        raise ReportError(
            f"{folder}: not a guarded run: no report.json, steps.jsonl, incidents.jsonl or incidents/",
            hint="give the RUN folder a Guard(run=...) wrote (a run that wrote nothing yet has no record)",
        )
    if live is None or (report is not None and report.steps >= live.steps):
        assert report is not None
        return _with_notes(
            report, "report.json was written mid-run (at a stop or a raised step); " + NOT_CLOSED
        )
    return live


def _with_notes(view: RunView, *notes: str) -> RunView:
    fields = {**view.__dict__, "notes": (*notes, *view.notes)}
    return RunView(**fields)


def _from_report(path: Path) -> RunView:
    report = load_report(path)
    guard = report.document.get("guard")
    where = f"{path}: guard"
    if not isinstance(guard, dict) or not isinstance(guard.get("steps"), list):
        raise ReportError(
            f"{path}: a probe report without a 'guard' part: not written by envkit.guard",
            hint="give the RUN directory a Guard(run=...) wrote (probe reports: `envkit probe --compare`)",
        )
    rows = [step_row(s, f"{where}.steps[{n}]") for n, s in enumerate(guard["steps"])]
    overflowed = {r.step for r in rows if r.overflow}
    skips = []
    for n, s in enumerate(_objects(guard.get("skips"), f"{where}.skips")):
        skip = Skip(
            check_int(s.get("step"), f"{where}.skips[{n}]: step"),
            check_text(s.get("reason"), f"{where}.skips[{n}]: reason") or "",
        )
        if skip.step not in overflowed:
            skips.append(skip)
    incidents = [
        check_incident(i, f"{where}.incidents[{n}]")
        for n, i in enumerate(_objects(guard.get("incidents"), f"{where}.incidents"))
    ]
    clipped = check_count(guard.get("clipped_steps", 0) or 0, f"{where}.clipped_steps")
    return RunView(
        run=str(path.parent),
        closed=check_bool(guard.get("closed", True), f"{where}.closed"),
        steps=len(rows),
        skips=tuple(skips),
        overflows=len(overflowed),
        clipped_steps=clipped,
        incidents=tuple(incidents),
        config=_config(guard.get("config"), f"{where}.config"),
        rank=check_count(guard.get("rank", 0), f"{where}.rank"),
        world_size=check_int(guard.get("world_size", 1), f"{where}.world_size", low=1, high=1 << 20),
    )


def _objects(value: Any, where: str) -> list[dict[str, object]]:
    if not isinstance(value, list) or not all(isinstance(i, dict) for i in value):
        raise ReportError(f"{where}: expected a list of objects", hint="the report was edited")
    return value


def _config(value: Any, where: str) -> dict[str, object]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ReportError(f"{where}: expected an object", hint="the report was edited")
    ledger = value.get("ledger")
    if ledger is not None:
        if not isinstance(ledger, dict):
            raise ReportError(f"{where}.ledger: expected an object", hint="the report was edited")
        _objects(ledger.get("batches", []), f"{where}.ledger.batches")
    return value


def _from_live(folder: Path) -> RunView | None:
    """The summary from ``steps.jsonl``, ``incidents.jsonl``, the dumps and the ledger; None: none there."""
    seen = ReadStats()
    rows = _live_steps(folder / "steps.jsonl", seen)
    incidents = _live_incidents(folder / "incidents.jsonl")
    dumps = _dumps(folder / "incidents")
    ledger = _ledger_count(folder / "ledger.jsonl")
    if rows is None and incidents is None and dumps is None:
        return None
    count, skips, overflows, clipped = rows or (0, [], 0, 0)
    notes = [NOT_CLOSED]
    if seen.torn:
        notes.append(
            f"steps.jsonl: {len(seen.torn)} line(s) cut short (a write the kill interrupted) skipped: "
            f"line {', '.join(map(str, seen.torn[:10]))}"
        )
    listed = {str(i.get("dump")) for i in incidents or []}
    unlisted = sorted(d for d in dumps or [] if f"incidents/{d}" not in listed)
    if unlisted:
        notes.append(
            f"dumps without an incident record (the run was killed while recording it): "
            f"{', '.join(unlisted[:20])}; `envkit guard replay RUN/incidents/NAME` reads them"
        )
    if ledger:
        notes.append(f"ledger.jsonl lists {ledger} skipped batch(es) (a resumed run skips them again)")
    ranks = _rank_folders(folder)
    return RunView(
        run=str(folder),
        closed=False,
        steps=count,
        skips=tuple(skips),
        overflows=overflows,
        clipped_steps=clipped,
        incidents=tuple(incidents or ()),
        config={},
        rank=0,
        world_size=max(ranks, default=0) + 1,
        notes=tuple(notes),
    )


def _lines_in(path: Path) -> int:
    """How many lines ``path`` holds (0 when missing or not a regular file: the reading says why)."""
    try:
        with open_regular(path) as fh:
            count = done = 0
            while (chunk := fh.read(1 << 20)) and done < MAX_LIVE_BYTES:
                count, done = count + chunk.count(b"\n"), done + len(chunk)
            return count
    except OSError:
        return 0


def _live_steps(path: Path, seen: ReadStats) -> tuple[int, list[Skip], int, int] | None:
    """Steps counted (streamed: never held), the guard's skips, the scaler's overflows, clipped steps."""
    count = overflows = clipped = 0
    skips: list[Skip] = []
    try:
        for where, value in jsonl_rows(path, MAX_LIVE_BYTES, seen):
            row: StepRow = step_row(value, where)
            count += 1
            overflows += row.overflow
            clipped += row.clipped
            if row.skipped is not None and not row.overflow and len(skips) < MAX_INCIDENTS:
                skips.append(Skip(row.step, row.skipped))
    except FileNotFoundError:
        return None
    return count, skips, overflows, clipped


def _live_incidents(path: Path) -> list[dict[str, object]] | None:
    try:
        rows = jsonl_rows(path, MAX_INCIDENT_BYTES)
        return [check_incident(value, where) for where, value in rows][:MAX_INCIDENTS]
    except FileNotFoundError:
        return None


def _dumps(folder: Path) -> list[str] | None:
    """The dump folders' names under ``incidents/`` (a real folder only, never through a link)."""
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        raise ReportError(f"{folder}: not a folder (a link or a file)", hint="the run folder was edited")
    return sorted(e.name for e in os.scandir(folder) if DUMP_DIR.fullmatch(e.name))[:MAX_INCIDENTS]


def _ledger_count(path: Path) -> int:
    count = 0
    try:
        for where, value in jsonl_rows(path, MAX_INCIDENT_BYTES):
            if not isinstance(value, dict):
                raise ReportError(f"{where}: not a ledger entry", hint="the run folder was edited")
            check_int(value.get("step"), f"{where}: step")
            check_text(value.get("kind"), f"{where}: kind")
            count += 1
    except FileNotFoundError:
        return 0
    return count


def _rank_folders(folder: Path) -> list[int]:
    try:
        names = [e.name for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []
    return [int(n[5:]) for n in names if re.fullmatch(r"rank-\d{1,6}", n)]
