"""Differences between inventories: pairwise for two inputs, a fleet view for three or more.

For every project, each input has a value (absent, or version/build/channel/installer).
Two inputs give ``A -> B`` findings; with three or more, each finding names the majority
value and the outlier inputs. Values are compared with ``packaging`` (never as strings).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Mapping, Sequence

from packaging.version import InvalidVersion, Version

from envkit.drift.models import DiffPolicy, Finding, Kind
from envkit.inventory.models import Inventory, Package

__all__ = ["INSTALLER_AWARE", "diff_packages", "spread"]

# Formats that see both conda and pip packages; only between two of these is an
# installer difference real (a pip freeze lists conda-installed packages as pip ones).
INSTALLER_AWARE = frozenset(
    {
        "conda-list",
        "mamba-list",
        "conda-export",
        "conda-json",
        "env-export",
        "snapshot",
        "conda-lock",
        "pixi-lock",
    }
)


@functools.lru_cache(maxsize=65536)
def _public(version: str) -> str:
    try:
        return Version(version).public
    except InvalidVersion:
        return version.lower()


def _local(package: Package) -> str | None:
    if package.installer == "conda":
        return package.build
    return _local_part(package.version)


@functools.lru_cache(maxsize=65536)
def _local_part(version: str) -> str | None:
    try:
        return Version(version).local
    except InvalidVersion:
        return None


def spread(values: Mapping[str, str | None]) -> tuple[str | None, list[str]]:
    """Majority value and the labels that differ from it (ties: the value sorting first)."""
    counts = Counter(values.values())
    majority = min(counts, key=lambda v: (-counts[v], v is None, v or ""))
    return majority, sorted(label for label, v in values.items() if v != majority)


def _show(value: str | None) -> str:
    return "absent" if value is None else (value or "?")


def _message(project: str, what: str, values: Mapping[str, str | None], labels: Sequence[str]) -> str:
    if len(labels) == 2:
        a, b = labels
        return f"{project}: {what} {_show(values[a])} ({a}) -> {_show(values[b])} ({b})"
    majority, outliers = spread(values)
    shown = ", ".join(f"{label} {_show(values[label])}" for label in outliers[:10])
    more = f" and {len(outliers) - 10} more" if len(outliers) > 10 else ""
    count = len(values) - len(outliers)
    head = f"{project}: {what} majority {_show(majority)} ({count}/{len(values)})"
    return f"{head}; outliers: {shown}{more}"


def _finding(
    project: str,
    kind: Kind,
    values: dict[str, str | None],
    labels: Sequence[str],
    policy: DiffPolicy,
    *,
    major: bool = False,
) -> Finding:
    severity = policy.severity(kind, project, major=major)
    rule = policy.kinds[kind].rule
    return Finding(project, kind, severity, rule, values, _message(project, kind, values, labels))


@functools.lru_cache(maxsize=65536)
def _major(version: str) -> int:
    try:
        return Version(version).major
    except InvalidVersion:
        return -1


def _is_major(versions: Sequence[str]) -> bool:
    majors = {_major(v) for v in versions}
    calendar = all(m >= 1000 for m in majors)
    return len(majors) > 1 and not calendar


def _compare_project(
    project: str, present: dict[str, Package], inventories: Sequence[Inventory], policy: DiffPolicy
) -> Finding | None:
    labels = [inv.label for inv in inventories]
    if len(present) < len(labels):
        values = {label: (present[label].version if label in present else None) for label in labels}
        majority, _ = spread({label: ("x" if label in present else None) for label in labels})
        kind: Kind = "added" if majority is None else "removed"
        if len(labels) == 2:
            kind = "added" if labels[0] not in present else "removed"
        return _finding(project, kind, values, labels, policy)
    pkgs = [present[label] for label in labels]
    known = {label: present[label].version for label in labels if present[label].version}
    if len({_public(v) for v in known.values()}) > 1:
        values = {label: present[label].version or None for label in labels}
        major = _is_major(list(known.values()))
        return _finding(project, "version", values, labels, policy, major=major)
    if len({p.installer for p in pkgs}) == 1:
        builds = {label: _local(present[label]) for label in labels}
        if None not in builds.values() and len(set(builds.values())) > 1:
            return _finding(project, "build", builds, labels, policy)
        channels = {label: present[label].channel for label in labels}
        if pkgs[0].installer == "conda" and None not in channels.values() and len(set(channels.values())) > 1:
            return _finding(project, "channel", channels, labels, policy)
        return None
    aware = {inv.label for inv in inventories if inv.format in INSTALLER_AWARE}
    if len(aware) == len(labels):
        values = {label: present[label].installer for label in labels}
        return _finding(project, "installer", dict(values), labels, policy)
    return None


def diff_packages(inventories: Sequence[Inventory], policy: DiffPolicy) -> list[Finding]:
    """Package differences across two or more inventories (one finding per project at most)."""
    if len(inventories) < 2:
        return []
    tables = [(inv.label, inv.primary()) for inv in inventories]
    projects: set[str] = set()
    for _, table in tables:
        projects.update(table)
    findings = []
    for project in sorted(projects):
        present = {label: table[project] for label, table in tables if project in table}
        finding = _compare_project(project, present, inventories, policy)
        if finding is not None:
            findings.append(finding)
    return findings
