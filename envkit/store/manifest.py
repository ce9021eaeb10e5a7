"""A run's ``run.json`` as a typed, frozen value: what the store knows of a run.

The store knows a run's id, its tasks per node and the tasks its result recorded; what a fleet
probe or a guard replay keeps there besides (probe options, the image, an entry point) is theirs to
parse (:mod:`envkit.fleet.run_plan`): :attr:`RunManifest.document` holds the object read-only.
Every read is bounded and shape-checked (:func:`~envkit.store.reads.read_store_json`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from envkit._safe import one_line
from envkit.errors import FleetError, UsageError
from envkit.store.layout import MANIFEST
from envkit.store.reads import MAX_MANIFEST_BYTES, check_owned, read_store_json

__all__ = ["RunManifest", "TaskResult", "read_manifest", "result_tasks"]


@dataclass(frozen=True)
class TaskResult:
    """One task as the run's recorded result lists it (texts one line: a file cannot forge output)."""

    task: str
    state: str
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.state == "ok"


def result_tasks(data: Mapping[str, object]) -> tuple[TaskResult, ...]:
    """The tasks of ``run.json``'s ``result`` (what is not a task's shape is skipped)."""
    result = data.get("result")
    tasks = result.get("tasks") if isinstance(result, dict) else None
    out = []
    for task in tasks if isinstance(tasks, list) else []:
        if isinstance(task, dict) and isinstance(task.get("task"), str):
            error = task.get("error")
            out.append(
                TaskResult(
                    task=one_line(task["task"])[:200],
                    state=one_line(f"{task.get('state')}")[:2000],
                    error=one_line(f"{error}")[:2000] if error else None,
                )
            )
    return tuple(out)


@dataclass(frozen=True)
class RunManifest:
    """``run.json``: the run id, its tasks per node, its recorded result, and the whole object (read-only).

    ``tasks_per_node`` is 1 unless the file says an integer: the strict checks of a fleet probe's
    layout are :func:`envkit.fleet.run_plan.parse_layout`'s.
    """

    run: str
    path: Path
    tasks_per_node: int
    result: tuple[TaskResult, ...]
    document: Mapping[str, object]

    @staticmethod
    def from_json(data: Mapping[str, object], path: Path) -> RunManifest:
        if "run" not in data:
            raise FleetError(
                f"{path}: not an envkit run manifest (no run id)", hint="the run directory is damaged"
            )
        per_node = data.get("tasks_per_node", 1)
        return RunManifest(
            run=str(data["run"]),
            path=path,
            tasks_per_node=per_node if type(per_node) is int else 1,
            result=result_tasks(data),
            document=MappingProxyType(dict(data)),
        )


def read_manifest(run_dir: Path, *, owned: bool = False) -> RunManifest:
    """``run.json`` (bounded, shape-checked); ``owned``: refuse it unless this user's own."""
    path = run_dir / MANIFEST
    if owned:
        check_owned(run_dir, "run directory")
    try:
        data = read_store_json(path, limit=MAX_MANIFEST_BYTES, what="run manifest")
    except FileNotFoundError as e:
        raise UsageError(
            f"{run_dir}: not a fleet run (no {MANIFEST})",
            hint="give STORE/RUN as printed by `envkit probe --slurm`",
        ) from e
    manifest = RunManifest.from_json(data, path)
    if owned:
        check_owned(path, "run manifest")
    return manifest
