"""A scheduler on this machine: every task of a job is a subprocess, each playing one "node".

For tests of the layers above :class:`~envkit.fleet.scheduler.Scheduler` and for trying a fleet run
without a cluster. Tasks get the environment a Slurm task gets from envkit's batch script
(``ENVKIT_NODE``, ``ENVKIT_LOCALID``); jobs live as long as this object (no daemon).
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import time
from dataclasses import dataclass

from envkit import _proc
from envkit.errors import FleetError
from envkit.fleet.scheduler import JobRequest, JobState, JobStatus

__all__ = ["LocalScheduler"]


@dataclass
class _Job:
    nodes: tuple[str, ...]
    procs: list[subprocess.Popen[bytes]]
    cancelled: bool = False


class LocalScheduler:
    """:class:`~envkit.fleet.scheduler.Scheduler` with subprocesses; node names ``local1``… by default."""

    name = "local"

    def __init__(self) -> None:
        self._jobs: dict[str, _Job] = {}
        self._ids = itertools.count(1)

    def submit(self, request: JobRequest) -> str:
        if request.container_image:
            raise FleetError(
                "the local scheduler cannot run container images through pyxis",
                hint="use --container docker, or run on Slurm with pyxis",
            )
        nodes = request.nodelist or tuple(f"local{i}" for i in range(1, request.nodes + 1))
        job_id = f"local-{os.getpid()}-{next(self._ids)}"
        procs = []
        for node in nodes:
            for local_id in range(request.tasks_per_node):
                env = {**os.environ, **request.env, "ENVKIT_NODE": node, "ENVKIT_LOCALID": str(local_id)}
                log = request.workdir / f"{job_id}-{node}-{local_id}.out"
                procs.append(_proc.spawn(request.argv, env=env, log=log))
        self._jobs[job_id] = _Job(nodes, procs)
        return job_id

    def status(self, job_id: str) -> JobStatus:
        job = self._jobs.get(job_id)
        if job is None:
            return JobStatus(job_id, JobState.UNKNOWN, (), "not a job of this scheduler")
        codes = [p.poll() for p in job.procs]
        if any(c is None for c in codes):
            return JobStatus(job_id, JobState.RUNNING, job.nodes)
        if job.cancelled:
            return JobStatus(job_id, JobState.CANCELLED, job.nodes, "cancelled")
        worst = next((c for c in codes if c), 0)
        state = JobState.COMPLETED if worst == 0 else JobState.FAILED
        return JobStatus(job_id, state, job.nodes, None, worst)

    def cancel(self, job_id: str) -> None:
        job = self._jobs.get(job_id)
        if job is None:
            return
        job.cancelled = True
        for p in job.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while any(p.poll() is None for p in job.procs) and time.monotonic() < deadline:
            time.sleep(0.1)
        for p in job.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
