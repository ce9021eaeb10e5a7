"""The scheduler interface: submit one job of per-node tasks, follow it, cancel it. Plain values only.

Adapters: :class:`envkit.fleet.slurm.SlurmScheduler` (``sbatch``/``squeue``/``sacct``/``scancel``
through :mod:`envkit._proc`), :class:`envkit.fleet.ray_scheduler.RayScheduler` (one Ray task per node
or GPU, pinned by node id) and :class:`envkit.fleet.local.LocalScheduler` (one subprocess per
"node", for tests of the layers above and for trying a fleet run on one machine). Kubernetes Jobs
are written by :mod:`envkit.fleet.k8s` into the same run layout (run by ``kubectl``, not followed).

A job runs ``argv`` once per task (``tasks_per_node`` tasks on each of the job's nodes). Each task
learns where it runs from its environment (``SLURMD_NODENAME`` / ``SLURM_LOCALID`` under Slurm,
the same names under the local scheduler), so the task code does not depend on the scheduler.
Per-task results are the task's business (it writes them into the shared store); the scheduler
reports the job's state and its nodes.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

__all__ = ["JobRequest", "JobState", "JobStatus", "Scheduler"]


class JobState(str, enum.Enum):
    """A scheduler job's state, the same words for Slurm and local processes."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    TIMEOUT = "timeout"
    NODE_FAIL = "node-fail"
    UNKNOWN = "unknown"

    @property
    def finished(self) -> bool:
        return self not in (JobState.PENDING, JobState.RUNNING, JobState.UNKNOWN)


@dataclass(frozen=True)
class JobRequest:
    """One job: ``argv`` on every task. ``nodelist`` pins the nodes; else ``nodes`` of them are picked."""

    name: str
    argv: tuple[str, ...]
    workdir: Path  # the scheduler's own files (batch script, logs); on the shared store
    nodes: int = 1
    nodelist: tuple[str, ...] = ()
    tasks_per_node: int = 1
    partition: str | None = None
    account: str | None = None
    time_limit: str | None = None  # Slurm syntax: MM, HH:MM:SS, D-HH
    extra_args: tuple[str, ...] = ()  # passed to sbatch as given
    container_image: str | None = None  # run each task in this image (pyxis `srun --container-image`)
    container_mounts: tuple[str, ...] = ()  # SRC:DST[:ro] for the container
    env: Mapping[str, str] = field(default_factory=dict)
    gpus_per_task: int = 0  # GPUs each task gets (Ray: num_gpus, its own CUDA_VISIBLE_DEVICES)

    @property
    def node_count(self) -> int:
        return len(self.nodelist) if self.nodelist else self.nodes


@dataclass(frozen=True)
class JobStatus:
    """What the scheduler says about a job: state, nodes, reason, exit code."""

    job_id: str
    state: JobState
    nodes: tuple[str, ...] = ()  # the nodes allocated (empty while pending)
    reason: str | None = None  # why pending or why it ended (the scheduler's words)
    exit_code: int | None = None
    task_errors: Mapping[str, str] = field(default_factory=dict)  # task -> why the engine lost it (Ray)


class Scheduler(Protocol):
    """What a fleet run needs from a batch scheduler: three operations."""

    name: str

    def submit(self, request: JobRequest) -> str:
        """Submit the job; return its id. Raise FleetError when the scheduler refuses it."""
        ...

    def status(self, job_id: str) -> JobStatus:
        """The job's state now (UNKNOWN when the scheduler no longer knows it)."""
        ...

    def cancel(self, job_id: str) -> None:
        """Cancel the job (every task); cancelling a finished job is not an error."""
        ...
