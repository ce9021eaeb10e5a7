"""``--repeat N``: does a node reproduce itself? Strict reruns on one node must agree bitwise. Pure."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from envkit.comparison.nway import workload_key
from envkit.probe.additions import RepeatSummary
from envkit.probe.model import ProbeReport, WorkloadRun

__all__ = ["repeat_summary"]


def _workloads(report: ProbeReport) -> Iterator[tuple[str, WorkloadRun]]:
    for fw, entry in sorted(report.frameworks.items()):
        for wl, res in sorted(entry.workloads.items()):
            yield f"{fw}/{wl}", res


def repeat_summary(reports: Sequence[ProbeReport]) -> RepeatSummary:
    """How many runs, and which workloads differed between them (none: the node reproduces itself)."""
    first = dict(_workloads(reports[0]))
    differing = sorted(
        {
            name
            for other in reports[1:]
            for name, res in _workloads(other)
            if name not in first or workload_key(res) != workload_key(first[name])
        }
    )
    return RepeatSummary(len(reports), not differing, tuple(differing))
