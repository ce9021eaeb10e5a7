"""Where the store keeps what: probe reports by host and label, and fleet runs.

::

    STORE/<host>/<label>.json     a report filed by ``envkit probe`` (label ``latest`` by default)
    STORE/RUN/run.json            a fleet run's manifest: run id, scheduler, job id, options, image, tasks
    STORE/RUN/<task>.json         one probe report per task (<task> = node, or node-<k> with k tasks/node)
    STORE/RUN/.tasks/<task>.json  the task's own state: running (pid, start) then ok / failed (error)
    STORE/RUN/.sched/             the scheduler's files (batch script, its output)
    STORE/RUN/.history/           the run's numbers in brief, per task (cached once the run has ended)
    STORE/.health/verdicts.json   each node's latest verdict from the fleet's history (``envkit health``)
    STORE/images/<id>.tar         an image, saved once, when it reaches the nodes without a registry

``--store DIR`` or ``$ENVKIT_STORE`` choose the store; by default it is the project's
``.envkit/reports``. Every node writes only its own files (atomic renames), so a shared filesystem
needs no locking.
"""

from __future__ import annotations

import os
import re
import secrets
import time
from collections.abc import Mapping
from pathlib import Path

from envkit._atomic import state_dir, write_text_atomic
from envkit.errors import ReportError, UsageError

__all__ = [
    "DEFAULT_LABEL",
    "HEALTH",
    "HEALTH_FILE",
    "HISTORY",
    "MANIFEST",
    "SCHED",
    "TASKS",
    "check_run_id",
    "default_store",
    "new_run_id",
    "resolve_report",
    "safe_name",
    "save_to_store",
    "store_path",
    "task_name",
]

DEFAULT_LABEL = "latest"
MANIFEST = "run.json"
TASKS = ".tasks"
SCHED = ".sched"
HISTORY = ".history"
HEALTH = ".health"
HEALTH_FILE = "verdicts.json"
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")


def default_store(root: Path, environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    return Path(env["ENVKIT_STORE"]) if env.get("ENVKIT_STORE") else state_dir(root, "reports")


def safe_name(text: str) -> str:
    return _SAFE.sub("_", text).strip("._") or "unnamed"


def store_path(store: Path, host: str, label: str) -> Path:
    return store / safe_name(host) / f"{safe_name(label)}.json"


def save_to_store(text: str, store: Path, host: str | None, label: str) -> Path:
    """File a report's ``text`` as ``STORE/<host>/<label>.json`` (atomically, never outside ``store``)."""
    path = store_path(store, host or "unknown", label)
    write_text_atomic(path, text, within=store)
    return path


def resolve_report(ref: str, store: Path, label: str | None = None) -> Path:
    """A report file, ``HOST`` or ``HOST/LABEL`` in the store."""
    path = Path(ref)
    if path.is_file() or ref.endswith(".json"):
        return path
    host, _, given = ref.partition("/")
    directory = store / safe_name(host)
    if not directory.is_dir():
        raise ReportError(
            f"{ref}: neither a report file nor a host in the store {store}",
            hint="run `envkit probe` on that host with a shared --store / ENVKIT_STORE, or give a file",
        )
    wanted = given or label
    if wanted:
        return store_path(store, host, wanted)
    candidates = sorted(directory.glob("*.json"))
    default = directory / f"{DEFAULT_LABEL}.json"
    if default.is_file():
        return default
    if len(candidates) == 1:
        return candidates[0]
    labels = ", ".join(p.stem for p in candidates) or "none"
    raise ReportError(f"{ref}: several reports in the store ({labels})", hint=f"name one: {host}/LABEL")


def new_run_id(now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now))
    return f"run-{stamp}-{secrets.token_hex(2)}"


def check_run_id(run_id: str) -> str:
    if not _RUN_ID.fullmatch(run_id):
        raise UsageError(f"invalid run id {run_id!r}", hint="letters, digits, '.', '_' and '-' (at most 80)")
    return run_id


def task_name(node: str, local_id: int, tasks_per_node: int) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", node).strip("._") or "node"
    return safe if tasks_per_node <= 1 else f"{safe}-{local_id}"
