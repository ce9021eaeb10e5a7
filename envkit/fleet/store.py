"""The layout of a fleet run in the shared store, and reading it back.

::

    STORE/RUN/run.json            the manifest: run id, scheduler, job id, probe options, image, tasks
    STORE/RUN/<task>.json         one probe report per task (<task> = node, or node-<k> with k tasks/node)
    STORE/RUN/.tasks/<task>.json  the task's own state: running (pid, start) then ok / failed (error)
    STORE/RUN/.sched/             the scheduler's files (batch script, its output)
    STORE/RUN/image.tar           the image, saved once, when it reaches the nodes without a registry

Every node writes only its own files (atomic renames), so a shared filesystem needs no locking.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envkit._atomic import write_text_atomic
from envkit.errors import UsageError

__all__ = ["MANIFEST", "TaskRecord", "new_run_id", "read_manifest", "read_tasks", "task_name", "write_json"]

MANIFEST = "run.json"
TASKS = ".tasks"
SCHED = ".sched"
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")


def new_run_id(now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now))
    return f"run-{stamp}-{secrets.token_hex(2)}"


def check_run_id(run_id: str) -> str:
    if not _RUN_ID.match(run_id):
        raise UsageError(f"invalid run id {run_id!r}", hint="letters, digits, '.', '_' and '-' (at most 80)")
    return run_id


def task_name(node: str, local_id: int, tasks_per_node: int) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", node).strip("._") or "node"
    return safe if tasks_per_node <= 1 else f"{safe}-{local_id}"


def write_json(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def read_manifest(run_dir: Path) -> dict[str, Any]:
    path = run_dir / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise UsageError(
            f"{run_dir}: not a fleet run (no {MANIFEST})",
            hint="give STORE/RUN as printed by `envkit probe --slurm`",
        ) from e
    except (OSError, ValueError) as e:
        raise UsageError(f"{path}: unreadable run manifest ({e})", hint="the run directory is damaged") from e
    if not isinstance(data, dict) or "run" not in data:
        raise UsageError(f"{path}: not an envkit run manifest", hint="the run directory is damaged")
    return data


@dataclass(frozen=True)
class TaskRecord:
    """What a task wrote about itself: ``running`` (with pid), ``ok`` or ``failed`` (with the error)."""

    task: str
    node: str
    state: str
    pid: int | None = None
    error: str | None = None
    report: str | None = None

    @staticmethod
    def from_json(data: dict[str, Any]) -> TaskRecord:
        return TaskRecord(
            task=str(data["task"]),
            node=str(data.get("node") or data["task"]),
            state=str(data["state"]),
            pid=data.get("pid"),
            error=data.get("error"),
            report=data.get("report"),
        )


def read_tasks(run_dir: Path) -> dict[str, TaskRecord]:
    """Every task record of a run (a record being rewritten is read at its last complete version)."""
    out: dict[str, TaskRecord] = {}
    for path in sorted((run_dir / TASKS).glob("*.json")):
        try:
            record = TaskRecord.from_json(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        out[record.task] = record
    return out
