"""A fleet probe: submit one probe task per node through a :class:`Scheduler`, follow it, say per node.

``fan_out`` writes the run's manifest into the shared store, submits one job (``nodes`` ×
``tasks_per_node`` tasks running ``python -m envkit.fleet.task STORE/RUN``), then polls the
scheduler and the tasks' own records until the job ends. Every expected task ends as ``ok``
(its report is in the store), ``failed`` (the task's error, or "ended without a result" when it
was killed) or ``never-ran`` (the job ended before the task started, with the scheduler's reason).
Core code: values in, values out; progress goes to a callback.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from envkit import __version__
from envkit.fleet.pyxis import enroot_uri, pyxis_argv, pyxis_mounts
from envkit.fleet.run_plan import parse_layout, write_manifest
from envkit.fleet.scheduler import JobRequest, JobState, JobStatus, Scheduler
from envkit.probe.runner import ProbeOptions, payload_argv, thread_env
from envkit.store import layout, runs
from envkit.store.manifest import read_manifest

__all__ = ["FleetOptions", "FleetRun", "Progress", "TaskOutcome", "fan_out", "follow", "submit"]

UNKNOWN_POLLS = 5  # the scheduler forgot the job this many polls in a row: it is over


@dataclass(frozen=True)
class FleetOptions:
    """How a fleet probe fans out: the store, nodes, tasks per node, scheduler options, the image."""

    store: Path
    run_id: str | None = None
    nodes: int = 1
    nodelist: tuple[str, ...] = ()
    tasks_per_node: int = 1
    partition: str | None = None
    account: str | None = None
    time_limit: str | None = None
    extra_args: tuple[str, ...] = ()
    image: dict[str, str] | None = None  # {"ref": REPO@sha256:…} or {"id": sha256:…, "tar": PATH}
    container: str = "docker"  # docker (the node's engine) or pyxis (srun --container-image)
    repeat: int = 1
    gpus_per_task: int = 0
    python: str = field(default_factory=lambda: sys.executable)
    poll_s: float = 2.0
    timeout_s: float | None = None


@dataclass(frozen=True)
class TaskOutcome:
    """How one task of a fleet run ended: ok (its report), failed, never-ran, running, pending."""

    task: str
    node: str
    state: str  # ok | failed | never-ran | running | pending
    report: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class Progress:
    """A fleet run while it goes: the job's state and how many tasks are in each state."""

    job_id: str
    job_state: JobState
    counts: dict[str, int]
    elapsed: float

    def line(self) -> str:
        parts = [f"{k} {self.counts.get(k, 0)}" for k in ("pending", "running", "ok", "failed", "never-ran")]
        return f"job {self.job_id} {self.job_state.value}: " + ", ".join(parts) + f" ({self.elapsed:.0f} s)"


@dataclass(frozen=True)
class FleetRun:
    """A finished fleet run: its job, its state and every task's outcome."""

    run_id: str
    run_dir: Path
    scheduler: str
    job_id: str
    job_state: JobState
    tasks: tuple[TaskOutcome, ...]
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return bool(self.tasks) and all(t.state == "ok" for t in self.tasks)

    @property
    def reports(self) -> tuple[Path, ...]:
        return tuple(self.run_dir / t.report for t in self.tasks if t.report)

    def to_json(self) -> dict[str, object]:
        return {
            "run": self.run_id,
            "run_dir": str(self.run_dir),
            "scheduler": self.scheduler,
            "job": self.job_id,
            "job_state": self.job_state.value,
            "reason": self.reason,
            "tasks": [asdict(t) for t in self.tasks],
        }


def _request(opts: FleetOptions, run_id: str, run_dir: Path, probe: ProbeOptions) -> JobRequest:
    argv: tuple[str, ...] = (opts.python, "-m", "envkit.fleet.task", str(run_dir))
    image: str | None = None
    mounts: tuple[str, ...] = ()
    env = {"PYTHONDONTWRITEBYTECODE": "1", "ENVKIT_TASKS_PER_NODE": str(opts.tasks_per_node)}
    if opts.image and opts.container == "pyxis":
        image = enroot_uri(str(opts.image.get("ref") or opts.image.get("name") or opts.image.get("id")))
        argv, mounts = (
            pyxis_argv(run_dir, tuple(payload_argv(probe, probe.frameworks))),
            pyxis_mounts(run_dir),
        )
        env.update(thread_env(probe))
    return JobRequest(
        name=f"envkit-{run_id}"[:64],
        argv=argv,
        workdir=run_dir / layout.SCHED,
        nodes=opts.nodes,
        nodelist=opts.nodelist,
        tasks_per_node=opts.tasks_per_node,
        partition=opts.partition,
        account=opts.account,
        time_limit=opts.time_limit,
        extra_args=opts.extra_args,
        container_image=image,
        container_mounts=mounts,
        env=env,
        gpus_per_task=opts.gpus_per_task,
    )


def submit(scheduler: Scheduler, opts: FleetOptions, probe: ProbeOptions) -> tuple[str, Path, str]:
    """Write the manifest and submit the job; return (run id, run directory, job id)."""
    run_id = layout.check_run_id(opts.run_id or layout.new_run_id())
    run_dir = runs.create_run_dir(opts.store, run_id)  # exclusively: an existing run id is refused
    manifest = write_manifest(
        run_dir, scheduler=scheduler.name, options=probe, image=opts.image,
        tasks_per_node=opts.tasks_per_node, nodes=opts.nodes, nodelist=opts.nodelist,
        extra={"created": time.time(), "envkit_version": __version__, "repeat": opts.repeat},
    )  # fmt: skip
    job_id = scheduler.submit(_request(opts, run_id, run_dir, probe))
    runs.write_json(run_dir / layout.MANIFEST, {**manifest, "job": job_id}, within=run_dir)
    return run_id, run_dir, job_id


def outcomes(
    run_dir: Path, status: JobStatus, expected: tuple[str, ...], tasks_per_node: int, finished: bool
) -> tuple[TaskOutcome, ...]:
    """Each task's state from its record and the job's state."""
    records = runs.read_tasks(run_dir)
    names = dict.fromkeys(
        layout.task_name(node, k, tasks_per_node) for node in expected for k in range(tasks_per_node)
    )
    out = []
    for name in [*names, *(n for n in records if n not in names)]:
        rec = records.get(name)
        node = rec.node if rec else name.rsplit("-", 1)[0] if tasks_per_node > 1 else name
        if rec is None and name in status.task_errors:
            out.append(
                TaskOutcome(name, node, "failed", error=f"lost before it started: {status.task_errors[name]}")
            )
        elif rec is None:
            why = f"job {status.state.value}" + (f": {status.reason}" if status.reason else "")
            out.append(TaskOutcome(name, node, "never-ran" if finished else "pending", error=why))
        elif rec.state == "ok" and rec.report and (run_dir / rec.report).is_file():
            out.append(TaskOutcome(name, node, "ok", report=rec.report))
        elif rec.state == "failed":
            out.append(TaskOutcome(name, node, "failed", error=rec.error))
        elif name in status.task_errors:  # the engine lost it (its node died): the engine's reason
            out.append(TaskOutcome(name, node, "failed", error=f"lost: {status.task_errors[name]}"))
        elif finished:
            error = f"the task ended without a result (killed? job {status.state.value})"
            out.append(TaskOutcome(name, node, "failed", error=error))
        else:
            out.append(TaskOutcome(name, node, "running"))
    return tuple(out)


def follow(
    scheduler: Scheduler,
    run_dir: Path,
    job_id: str,
    *,
    on_progress: Callable[[Progress], None] | None = None,
    poll_s: float = 2.0,
    timeout_s: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> FleetRun:
    """Poll until the job ends (or ``timeout_s`` passes: then cancel it); every task's outcome."""
    stored = read_manifest(run_dir, owned=True)
    manifest = parse_layout(stored, run_dir)
    per_node = manifest.tasks_per_node
    expected: tuple[str, ...] = manifest.nodelist
    start, unknown, reason = clock(), 0, None
    while True:
        status = scheduler.status(job_id)
        expected = status.nodes or expected
        unknown = unknown + 1 if status.state is JobState.UNKNOWN else 0
        timed_out = timeout_s is not None and clock() - start > timeout_s
        if timed_out:
            scheduler.cancel(job_id)
            status = scheduler.status(job_id)
            reason = f"cancelled after {timeout_s:.0f} s (--wait-timeout)"
        finished = status.state.finished or unknown >= UNKNOWN_POLLS or timed_out
        tasks = outcomes(run_dir, status, expected, per_node, finished)
        if not expected and not tasks:  # nodes not allocated yet (or never)
            count = manifest.nodes * per_node
            state = "never-ran" if finished else "pending"
            why = f"job {status.state.value}" + (f": {status.reason}" if status.reason else "")
            tasks = tuple(TaskOutcome(f"unallocated-{i}", "?", state, error=why) for i in range(1, count + 1))
        if on_progress is not None:
            counts: dict[str, int] = {}
            for t in tasks:
                counts[t.state] = counts.get(t.state, 0) + 1
            on_progress(Progress(job_id, status.state, counts, clock() - start))
        if finished:
            break
        sleep(poll_s)
    result = FleetRun(
        manifest.run, run_dir, scheduler.name, job_id, status.state, tasks, reason or status.reason
    )
    runs.write_json(
        run_dir / layout.MANIFEST, {**stored.document, "result": result.to_json()}, within=run_dir
    )
    return result


def fan_out(
    scheduler: Scheduler,
    opts: FleetOptions,
    probe: ProbeOptions,
    *,
    on_submit: Callable[[str, Path, str], None] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> FleetRun:
    run_id, run_dir, job_id = submit(scheduler, opts, probe)
    if on_submit is not None:
        on_submit(run_id, run_dir, job_id)
    try:
        return follow(
            scheduler, run_dir, job_id, on_progress=on_progress, poll_s=opts.poll_s, timeout_s=opts.timeout_s
        )
    except KeyboardInterrupt:
        scheduler.cancel(job_id)  # Ctrl-C: do not leave the job behind on the cluster
        raise
