"""What the host adds to a payload's report, as typed values: the driver check and the fleet task.

The payload writes the numbers and the fingerprint; the host adds the label, its own facts (envkit
version, host name, the container), the driver check (:mod:`envkit.probe.driver`) and, on a fleet
node, the task and its ``--repeat`` summary (:mod:`envkit.fleet.task`). Each addition makes a new
:class:`~envkit.probe.model.ProbeReport` (a typed copy); :meth:`ProbeReport.to_json` writes them back
into the document. Standard library only, like the model.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DriverCheck", "FleetInfo", "RepeatSummary"]


@dataclass(frozen=True)
class DriverCheck:
    """The driver the image's CUDA needs beside the host's: ``status`` is ``ok``, ``compat-only``,
    ``too-old``, ``no-driver`` or ``unknown-cuda``."""

    cuda: str
    min_driver: str | None
    compat_driver: str | None
    host_driver: str | None
    status: str

    def to_json(self) -> dict[str, str | None]:
        return {
            "cuda": self.cuda,
            "min_driver": self.min_driver,
            "compat_driver": self.compat_driver,
            "host_driver": self.host_driver,
            "status": self.status,
        }


@dataclass(frozen=True)
class RepeatSummary:
    """``--repeat N``: how many strict reruns ran on the node and which workloads differed bitwise."""

    n: int = 1
    identical: bool | None = None  # None: the report does not say
    differing: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"n": self.n, "identical": self.identical, "differing": list(self.differing)}


@dataclass(frozen=True)
class FleetInfo:
    """The fleet task a report came from: its run, task and node, the scheduler's job id."""

    run: str | None = None
    task: str | None = None
    node: str | None = None
    job: str | None = None
    repeat: RepeatSummary | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "run": self.run,
            "task": self.task,
            "node": self.node,
            "job": self.job,
            "repeat": self.repeat.to_json() if self.repeat is not None else None,
        }
