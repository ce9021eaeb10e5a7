"""A :class:`~envkit.fleet.scheduler.Scheduler` on a Ray cluster: one task per node, or per GPU.

``pip install 'envkit-dl[ray]'``. The driver (this process) connects to the cluster
(``ray.init(address=…)``), lists its alive nodes and submits one Ray task per node (``tasks_per_node``
per node with ``gpus_per_task`` GPUs each: Ray gives each its own ``CUDA_VISIBLE_DEVICES``), pinned
by node id (``NodeAffinitySchedulingStrategy(soft=False)``: never moved to another node). Each Ray
task runs the job's ``argv`` (``python -m envkit.fleet.task STORE/RUN``) as a subprocess with the
environment a Slurm task gets (the submitter's, as ``sbatch`` exports it, plus ``ENVKIT_NODE`` and
``ENVKIT_LOCALID``), so the store receives exactly what the Slurm path writes. The subprocess dies
with its Ray worker (``PR_SET_PDEATHSIG``): a node that dies mid-run leaves its tasks ``running`` in
the store, and the fan-out marks them ``failed`` with Ray's reason (:attr:`JobStatus.task_errors`).

Node names: Ray's ``NodeName`` when the alive nodes' names are distinct, else ``ray-<node id>``.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from envkit._safe import one_line
from envkit.errors import FleetError
from envkit.fleet.scheduler import JobRequest, JobState, JobStatus
from envkit.store.layout import task_name

__all__ = ["RayScheduler", "node_names"]

_HINT = "pip install 'envkit-dl[ray]'; start a cluster (`ray start --head`) or give --ray ADDRESS"
_OWN_ENV = ("CUDA_VISIBLE_DEVICES", "RAY_ADDRESS")  # Ray's to set per task, never the submitter's


def node_names(nodes: Sequence[Mapping[str, object]]) -> dict[str, str]:
    """Node id -> name for the alive nodes: ``NodeName`` when distinct, else ``ray-<id[:12]>``."""
    alive = [n for n in nodes if n.get("Alive")]
    names = [str(n.get("NodeName") or "") for n in alive]
    distinct = len(set(names)) == len(names) and all(names)
    return {
        str(n["NodeID"]): (name if distinct else f"ray-{str(n['NodeID'])[:12]}")
        for n, name in zip(alive, names, strict=True)
    }


def _run_task(argv: Sequence[str], env: Mapping[str, str]) -> int:
    """In the Ray worker: the task as a subprocess that dies with this worker."""
    import ctypes
    import signal
    import subprocess

    libc = ctypes.CDLL(None, use_errno=True)

    def die_with_parent() -> None:
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG

    full = {**env, **{k: v for k, v in os.environ.items() if k in _OWN_ENV[:1]}}
    done = subprocess.run(list(argv), env=full, preexec_fn=die_with_parent, check=False)
    return done.returncode


@dataclass
class _Job:
    nodes: tuple[str, ...]
    refs: dict[str, object]  # task name -> Ray object ref
    errors: dict[str, str] = field(default_factory=dict)
    codes: dict[str, int] = field(default_factory=dict)
    cancelled: bool = False


class RayScheduler:
    """A Scheduler on a Ray cluster (``address``: ``auto``, ``ray://…`` or ``HOST:PORT``)."""

    name = "ray"

    def __init__(self, address: str | None = None) -> None:
        try:
            import ray
        except ImportError as e:
            raise FleetError("Ray is not installed", hint=_HINT) from e
        self._ray: Any = ray  # typed loosely: Ray is an optional extra
        self._address = address
        self._jobs: dict[str, _Job] = {}
        self._ids = itertools.count(1)

    def _connect(self) -> None:
        if not self._ray.is_initialized():
            try:
                self._ray.init(address=self._address or "auto", logging_level="ERROR", log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as e:
                raise FleetError(
                    f"cannot reach the Ray cluster at {self._address or 'auto'}: {e}", hint=_HINT
                ) from e

    def _placement(self, request: JobRequest) -> list[tuple[str, str]]:
        """(node id, node name) of the nodes the job runs on."""
        ids = node_names(self._ray.nodes())
        by_name = {name: node_id for node_id, name in ids.items()}
        if request.nodelist:
            missing = [n for n in request.nodelist if n not in by_name]
            if missing:
                raise FleetError(
                    f"no alive Ray node named {', '.join(missing)}",
                    hint=f"nodes: {', '.join(sorted(by_name))}",
                )
            return [(by_name[n], n) for n in request.nodelist]
        chosen = sorted(ids.items(), key=lambda item: item[1])
        if request.nodes and request.nodes > len(chosen):
            raise FleetError(
                f"{request.nodes} nodes asked, the Ray cluster has {len(chosen)} alive", hint="--nodes N"
            )
        return chosen[: request.nodes] if request.nodes else chosen

    def submit(self, request: JobRequest) -> str:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self._connect()
        placement = self._placement(request)
        remote = self._ray.remote(_run_task)
        base = {k: v for k, v in os.environ.items() if k not in _OWN_ENV}
        refs: dict[str, object] = {}
        for node_id, node in placement:
            for local in range(request.tasks_per_node):
                env = {**base, **request.env, "ENVKIT_NODE": node, "ENVKIT_LOCALID": str(local)}
                strategy = NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)
                options = {
                    "scheduling_strategy": strategy,
                    "num_gpus": request.gpus_per_task,
                    "max_retries": 0,
                    "num_cpus": 1,
                    "name": f"{request.name}:{node}:{local}",
                }
                refs[task_name(node, local, request.tasks_per_node)] = remote.options(**options).remote(
                    request.argv, env
                )
        job_id = f"ray-{os.getpid()}-{next(self._ids)}"
        self._jobs[job_id] = _Job(tuple(n for _, n in placement), refs)
        return job_id

    def _collect(self, job: _Job) -> None:
        pending = [ref for name, ref in job.refs.items() if name not in job.codes and name not in job.errors]
        if not pending:
            return
        ready, _ = self._ray.wait(pending, num_returns=len(pending), timeout=0)
        names = {ref: name for name, ref in job.refs.items()}  # object refs compare by their id
        for ref in ready:
            name = names[ref]
            try:
                job.codes[name] = int(self._ray.get(ref))
            except Exception as e:  # noqa: BLE001 - Ray's error for this task is its failure reason
                job.errors[name] = one_line(
                    f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
                )[:500]

    def status(self, job_id: str) -> JobStatus:
        job = self._jobs.get(job_id)
        if job is None:
            return JobStatus(job_id, JobState.UNKNOWN, (), "not a job of this scheduler")
        self._collect(job)
        if len(job.codes) + len(job.errors) < len(job.refs):
            return JobStatus(job_id, JobState.RUNNING, job.nodes, task_errors=dict(job.errors))
        if job.cancelled:
            return JobStatus(job_id, JobState.CANCELLED, job.nodes, "cancelled", task_errors=dict(job.errors))
        worst = next((c for c in job.codes.values() if c), 0)
        state = JobState.COMPLETED if not job.errors and worst == 0 else JobState.FAILED
        reason = f"{len(job.errors)} Ray task(s) lost" if job.errors else None
        return JobStatus(job_id, state, job.nodes, reason, worst, task_errors=dict(job.errors))

    def close(self) -> None:
        """Disconnect this driver from the cluster (its background threads stop)."""
        if self._ray.is_initialized():
            self._ray.shutdown()

    def cancel(self, job_id: str) -> None:
        job = self._jobs.get(job_id)
        if job is None:
            return
        job.cancelled = True
        for name, ref in job.refs.items():
            if name not in job.codes and name not in job.errors:
                self._ray.cancel(ref, force=True)
