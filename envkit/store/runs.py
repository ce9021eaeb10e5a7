"""A fleet run's directory in the store: created once, its task records, its reports, its failures.

The layout is :mod:`envkit.store.layout`'s; every file is read bounded (:mod:`envkit.store.reads`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from envkit._atomic import make_dir_exclusive, write_text_atomic
from envkit._safe import one_line
from envkit.errors import EnvkitError, UsageError
from envkit.store.layout import MANIFEST, SCHED, TASKS, check_run_id
from envkit.store.manifest import result_tasks
from envkit.store.reads import MAX_MANIFEST_BYTES, MAX_RECORD_BYTES, read_store_json

__all__ = [
    "TaskRecord",
    "create_run_dir",
    "find_run",
    "load_run",
    "read_tasks",
    "write_json",
]

_TASK = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}")  # never . or .. or a .hidden temp
_STATES = ("running", "ok", "failed")
R = TypeVar("R")


def write_json(path: Path, data: Any, *, within: Path | None = None) -> None:
    write_text_atomic(path, json.dumps(data, indent=1, sort_keys=True) + "\n", within=within)


def create_run_dir(store: Path, run_id: str) -> Path:
    """``STORE/RUN`` with ``.tasks`` and ``.sched``, created by this user now; an existing run id is refused.

    Never reuses a directory (or follows a link) someone else made: whoever made it could rewrite
    ``run.json`` while the run goes on, or point ``.sched`` elsewhere.
    """
    root = store.resolve()
    run_dir = root / check_run_id(run_id)
    try:
        make_dir_exclusive(run_dir, what="run directory")
    except EnvkitError as e:
        raise UsageError(
            f"run {run_id} exists in {store}: {e.message}", hint="pick another --run-id, or omit it"
        ) from e
    for sub in (TASKS, SCHED):
        make_dir_exclusive(run_dir / sub)
    return run_dir


@dataclass(frozen=True)
class TaskRecord:
    """What a task wrote about itself: ``running`` (with pid), ``ok`` or ``failed`` (with the error).

    Its texts are one line (newlines and controls escaped): a task cannot forge lines of output.
    """

    task: str
    node: str
    state: str
    pid: int | None = None
    error: str | None = None
    report: str | None = None

    @staticmethod
    def from_json(data: dict[str, object]) -> TaskRecord:
        task, state = data["task"], data["state"]
        if not (isinstance(task, str) and _TASK.fullmatch(task)) or state not in _STATES:
            raise ValueError("not a task record")
        node = data.get("node") or task
        pid, error, report = data.get("pid"), data.get("error"), data.get("report")
        if report is not None and not (isinstance(report, str) and report == f"{task}.json"):
            raise ValueError("a report other than <task>.json")
        return TaskRecord(
            task=task,
            node=one_line(str(node))[:200],
            state=state,
            pid=pid if type(pid) is int else None,
            error=None if error is None else one_line(str(error))[:2000],
            report=report,
        )


def read_tasks(run_dir: Path) -> dict[str, TaskRecord]:
    """Every task record of a run (a record being rewritten is read at its last complete version).

    A record that is not one (a link, a FIFO, a huge or deep file, another shape) is skipped.
    """
    out: dict[str, TaskRecord] = {}
    for path in sorted((run_dir / TASKS).glob("*.json")):
        try:
            record = TaskRecord.from_json(read_store_json(path, limit=MAX_RECORD_BYTES, what="task record"))
        except (OSError, ValueError, KeyError, TypeError, EnvkitError):
            continue
        if path.stem == record.task:
            out[record.task] = record
    return out


def find_run(ref: str, store: Path) -> Path | None:
    """``ref`` as a run directory (a path, or a run id in the store), or None."""
    for candidate in (Path(ref), store / ref):
        if (candidate / MANIFEST).is_file():
            return candidate
    return None


def _failed_tasks(run_dir: Path, have: set[str]) -> list[tuple[str, str]]:
    """The tasks without a report, from the run's result and the tasks' records (bounded, shape-checked)."""
    failed: dict[str, str] = {}
    try:  # a manifest damaged beyond reading lists no result (the tasks' own records still count)
        recorded = result_tasks(
            read_store_json(run_dir / MANIFEST, limit=MAX_MANIFEST_BYTES, what="run manifest")
        )
    except (OSError, EnvkitError):
        recorded = ()
    for task in recorded:
        if not task.ok:
            failed[task.task] = f"{task.state}: {task.error or 'no report'}"[:2000]
    for record in read_tasks(run_dir).values():
        if record.state == "failed":
            failed[record.task] = f"failed: {record.error}"
    return sorted((name, why) for name, why in failed.items() if name not in have)


def load_run(run_dir: Path, load: Callable[[Path], R]) -> tuple[list[tuple[str, R]], list[tuple[str, str]]]:
    """A run's reports (named after their task, each read by ``load``) and its failed tasks."""
    # one directory: ordering by name is ordering by path (without comparing Path objects)
    paths = sorted((p for p in run_dir.glob("*.json") if p.name != MANIFEST), key=lambda p: p.name)
    named = [(p.stem, load(p)) for p in paths]
    return named, _failed_tasks(run_dir, {n for n, _ in named})
