"""``envkit guard replay DUMP --entry E --slurm``: an incident's step replayed on other nodes (fleet tasks).

A fleet use case (the store, the scheduler, following a job) over :mod:`envkit.incident` (the
replay), which sits below fleet; the command layer only parses and renders. The dump is
checked here first (a changed batch is refused before anything is submitted) and copied into the
run; then one task per node runs ``python -m envkit.fleet.guard_replay STORE/RUN``, which replays the
step twice there (:func:`envkit.incident.image_side.replay_document`) and writes that JSON as its
result. The verdict per node comes from the node's replays and fingerprint, as for ``--image``.

::

    STORE/RUN/run.json        kind envkit-guard-fleet-replay, the entry, its code directory, the layout
    STORE/RUN/dump/           the checked dump, copied (the nodes read it from the shared store)
    STORE/RUN/<task>.json     each task's replay (kind envkit-guard-image-replay, schema 1)
    STORE/RUN/.tasks/, .sched/  as for every fleet run (:mod:`envkit.store.layout`)

The node trusts ``run.json`` only as the probe's fleet task does (this user's, writable by nobody
else), and takes the entry only in its ``module:function`` shape.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from envkit import __version__
from envkit.errors import EnvkitError, FleetError, UsageError
from envkit.fleet.fanout import FleetRun, Progress, follow
from envkit.fleet.run_plan import parse_layout
from envkit.fleet.scheduler import JobRequest, Scheduler
from envkit.fleet.task import run_recorded, task_main
from envkit.guard.dump import read_dump
from envkit.incident.image_replay import judge_side, stage_dump
from envkit.incident.image_side import replay_document
from envkit.incident.replay import ReplayVerdict
from envkit.store import layout, runs
from envkit.store.manifest import RunManifest
from envkit.store.reads import MAX_MANIFEST_BYTES, read_store_json

__all__ = [
    "FleetReplay",
    "ReplayFleetOptions",
    "main",
    "render_fleet_replay",
    "replay_on_fleet",
    "run_replay_task",
]

KIND = "envkit-guard-fleet-replay"
DUMP = "dump"
_ENTRY = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,199}:[A-Za-z_][A-Za-z0-9_]{0,99}")
_HINT = "the run directory is damaged or was written by someone else: rerun `envkit guard replay --slurm`"


@dataclass(frozen=True)
class ReplayFleetOptions:
    """Where the replay fans out: the store, the nodes, the scheduler's options."""

    store: Path
    nodes: int = 1
    nodelist: tuple[str, ...] = ()
    run_id: str | None = None
    partition: str | None = None
    time_limit: str | None = None
    python: str = sys.executable
    poll_s: float = 2.0
    timeout_s: float | None = None


@dataclass(frozen=True)
class FleetReplay:
    """The fleet job and, per task that replayed, its verdict (``on NODE``)."""

    run: FleetRun
    verdicts: dict[str, ReplayVerdict]
    unreadable: dict[str, str] = field(default_factory=dict)  # task -> why its result was refused

    @property
    def verdict(self) -> str:
        """``reproducible`` when every node reproduced the step, else the first other verdict; ``none``
        when no task replayed."""
        found = [v.verdict for v in self.verdicts.values()]
        return next((v for v in found if v != "reproducible"), "reproducible" if found else "none")

    def to_json(self) -> dict[str, object]:
        return {
            "verdict": self.verdict,
            "fleet": self.run.to_json(),
            "verdicts": {task: v.to_json() for task, v in self.verdicts.items()},
            "unreadable": dict(self.unreadable),
        }


def replay_on_fleet(
    scheduler: Scheduler,
    opts: ReplayFleetOptions,
    path: Path,
    entry: str,
    *,
    code: Path | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> FleetReplay:
    """Submit one replay per node of the dump at ``path`` (``entry`` importable from ``code``), follow it."""
    if not _ENTRY.fullmatch(entry):
        raise UsageError(f"--entry {entry!r}: expected module:function", hint="e.g. --entry train:build")
    dump = read_dump(path)  # a changed or foreign dump is refused before anything is submitted
    run_id = layout.check_run_id(opts.run_id or layout.new_run_id())
    run_dir = runs.create_run_dir(opts.store, run_id)
    stage_dump(dump, run_dir / DUMP)  # its own files only, never through a link, its modes (0600)
    manifest: dict[str, object] = {
        "run": run_id,
        "kind": KIND,
        "scheduler": scheduler.name,
        "entry": entry,
        "code": str((code or Path.cwd()).resolve()),
        "dump": str(dump.path.resolve()),
        "tasks_per_node": 1,
        "image": None,
        "requested": {"nodes": opts.nodes, "nodelist": list(opts.nodelist)},
        "created": time.time(),
        "envkit_version": __version__,
    }
    runs.write_json(run_dir / layout.MANIFEST, manifest, within=run_dir)
    request = JobRequest(
        name=f"envkit-{run_id}"[:64],
        argv=(opts.python, "-m", "envkit.fleet.guard_replay", str(run_dir)),
        workdir=run_dir / layout.SCHED,
        nodes=opts.nodes,
        nodelist=opts.nodelist,
        partition=opts.partition,
        time_limit=opts.time_limit,
        env={"PYTHONDONTWRITEBYTECODE": "1"},
    )
    job_id = scheduler.submit(request)
    runs.write_json(run_dir / layout.MANIFEST, {**manifest, "job": job_id}, within=run_dir)
    try:
        run = follow(
            scheduler, run_dir, job_id, on_progress=on_progress, poll_s=opts.poll_s, timeout_s=opts.timeout_s
        )
    except KeyboardInterrupt:
        scheduler.cancel(job_id)
        raise
    verdicts: dict[str, ReplayVerdict] = {}
    unreadable: dict[str, str] = {}
    for task in run.tasks:
        if task.state == "ok" and task.report:
            where = f"on {task.node}"
            try:  # one damaged result loses that node's verdict, not the others'
                data = read_store_json(run_dir / task.report, limit=MAX_MANIFEST_BYTES, what="replay result")
                verdicts[task.task] = judge_side(dump, data, where, f"replayed {where} ({task.report})")
            except EnvkitError as e:
                unreadable[task.task] = str(e)
    return FleetReplay(run, verdicts, unreadable)


def render_fleet_replay(result: FleetReplay) -> str:
    """One line per task (its verdict, or why it has none), then each verdict as ``guard replay`` shows it."""
    from envkit.incident.show import render_replay

    run = result.run
    lines = [f"run {run.run_id} ({run.scheduler} job {run.job_id}, {run.job_state.value}): {run.run_dir}"]
    for task in run.tasks:
        found = result.verdicts.get(task.task)
        why = result.unreadable.get(task.task)
        shown = (
            found.verdict
            if found
            else f"result refused: {why}"
            if why
            else f"{task.state}: {task.error or ''}"
        )
        lines.append(f"  {task.task}: {shown}")
    for name, verdict in result.verdicts.items():
        lines += [f"{name}:", *("  " + line for line in render_replay(verdict.to_json()).splitlines())]
    lines.append(f"verdict: {result.verdict}")
    return "\n".join(lines)


def _task_fields(raw: Mapping[str, object], source: str) -> tuple[str, Path]:
    """The entry and code directory the submitter named, in their shapes only."""
    if raw.get("kind") != KIND:
        raise FleetError(f"{source}: not a guard replay run (kind {str(raw.get('kind'))[:40]!r})", hint=_HINT)
    entry, code = raw.get("entry"), raw.get("code")
    if not (isinstance(entry, str) and _ENTRY.fullmatch(entry)):
        raise FleetError(f"{source}: entry must be module:function, not {str(entry)[:80]!r}", hint=_HINT)
    if not (isinstance(code, str) and Path(code).is_absolute()):
        raise FleetError(f"{source}: code must be an absolute directory, not {str(code)[:80]!r}", hint=_HINT)
    return entry, Path(code)


def run_replay_task(run_dir: Path, environ: Mapping[str, str]) -> int:
    """One node's replay: its record (running, then ok or failed) and its result in the store."""

    def work(manifest: RunManifest, name: str, node: str) -> Path:
        parse_layout(manifest, run_dir)
        entry, code = _task_fields(manifest.document, str(manifest.path))
        os.chdir(code)  # the entry is imported from the training code's directory, as on the submitter
        document = replay_document(run_dir / DUMP, entry)
        path = run_dir / f"{name}.json"
        runs.write_json(path, document, within=run_dir)
        return path

    # the user's entry code can raise anything: the task records it
    return run_recorded(run_dir, environ, work, errors=(Exception,))


def main(argv: list[str] | None = None) -> int:
    return task_main(argv, run_replay_task, "python -m envkit.fleet.guard_replay STORE/RUN")


if __name__ == "__main__":
    sys.exit(main())
