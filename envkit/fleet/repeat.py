"""``--repeat N``: does a node reproduce itself? Strict reruns on one node must agree bitwise. Pure."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from envkit.probe.report import Report

__all__ = ["bitwise_key", "repeat_summary"]


def _workloads(report: Report) -> Iterator[tuple[str, dict[str, Any]]]:
    for fw, entry in sorted(report["frameworks"].items()):
        for wl, res in sorted(entry.get("workloads", {}).items()):
            yield f"{fw}/{wl}", res


def bitwise_key(res: dict[str, Any]) -> tuple[Any, ...]:
    """Everything a workload's numbers are: equal keys mean bitwise-identical results."""
    steps = tuple((str(s.get("loss")), str(s.get("grad_norm"))) for s in res.get("steps") or ())
    return (res.get("status"), steps, res.get("final_params_sha256"))


def repeat_summary(reports: Sequence[Report]) -> dict[str, Any]:
    """How many runs, and which workloads differed between them (none: the node reproduces itself)."""
    first = dict(_workloads(reports[0]))
    differing = sorted(
        {
            name
            for other in reports[1:]
            for name, res in _workloads(other)
            if name not in first or bitwise_key(res) != bitwise_key(first[name])
        }
    )
    return {"n": len(reports), "identical": not differing, "differing": differing}
