"""Differences between inventories: pairwise for two inputs, a fleet view for three or more.

For every project, each input has a value (absent, or version/build/channel/installer).
Two inputs give ``A -> B`` findings; with three or more, each finding names the majority
value and the outlier inputs. Values are compared with ``packaging`` (never as strings).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Mapping, Sequence

from packaging.version import Version

from envkit.drift.models import DiffPolicy, DriftFinding, Kind
from envkit.inventory.models import Inventory, Package

__all__ = ["INSTALLER_AWARE", "diff_packages", "no_majority", "spread"]

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
    except ValueError:  # InvalidVersion, or a part beyond 4,300 digits
        return version.lower()


def _local(package: Package) -> str | None:
    if package.installer == "conda":
        return package.build
    return _local_part(package.version)


@functools.lru_cache(maxsize=65536)
def _local_part(version: str) -> str | None:
    try:
        return Version(version).local
    except ValueError:  # InvalidVersion, or a part beyond 4,300 digits
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
    count = len(values) - len(outliers)
    if count <= 1:
        return f"{project}: {what} {no_majority(values)}"
    shown = ", ".join(f"{label} {_show(values[label])}" for label in outliers[:10])
    more = f" and {len(outliers) - 10} more" if len(outliers) > 10 else ""
    head = f"{project}: {what} majority {_show(majority)} ({count}/{len(values)})"
    return f"{head}; outliers: {shown}{more}"


def no_majority(values: Mapping[str, str | None]) -> str:
    """``no majority: 550 (a), 535 (b), absent (c)``: every value on one input only (issue 34 class 17:
    a 1:1 split is not a majority and its 'outliers')."""
    shown = ", ".join(f"{_show(v)} ({label})" for label, v in sorted(values.items())[:10])
    more = f" and {len(values) - 10} more" if len(values) > 10 else ""
    return f"no majority: {shown}{more}"


def _finding(
    project: str,
    kind: Kind,
    values: dict[str, str | None],
    labels: Sequence[str],
    policy: DiffPolicy,
    *,
    major: bool = False,
) -> DriftFinding:
    severity = policy.severity(kind, project, major=major)
    rule = policy.kinds[kind].rule
    return DriftFinding(project, kind, severity, rule, values, _message(project, kind, values, labels))


@functools.lru_cache(maxsize=65536)
def _major(version: str) -> int:
    try:
        return Version(version).major
    except ValueError:  # InvalidVersion, or a part beyond 4,300 digits
        return -1


def _is_major(versions: Sequence[str]) -> bool:
    majors = {_major(v) for v in versions}
    calendar = all(m >= 1000 for m in majors)
    return len(majors) > 1 and not calendar


def _compare_project(
    project: str, present: dict[str, Package], inventories: Sequence[Inventory], policy: DiffPolicy
) -> DriftFinding | None:
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


def diff_packages(inventories: Sequence[Inventory], policy: DiffPolicy) -> list[DriftFinding]:
    """Package differences across two or more inventories (one finding per project at most).

    A fleet's inventories mostly share their packages (one image, many hosts: one table, one
    Package per row, see ``Inventory.primary``): each project is judged on its distinct packages,
    and the label-by-label comparison (:func:`_compare_project`) runs only where there is a finding.
    """
    # a report that lists no package (a collect_env whose sections say "Could not collect", a paste of
    # its header): its packages are unknown, not absent, so it takes no part in the package comparison
    inventories = [inv for inv in inventories if inv.packages or inv.meta.get("packages") != "not collected"]
    if len(inventories) < 2:
        return []
    labels = [inv.label for inv in inventories]
    tables = [inv.primary() for inv in inventories]
    if len(set(labels)) < len(labels):  # a label twice: the label-keyed comparison decides as it always did
        return _diff_by_label(inventories, tables, policy)
    groups: dict[int, tuple[dict[str, Package], int]] = {}
    for table in tables:
        held = groups.get(id(table))
        groups[id(table)] = (table, held[1] + 1 if held else 1)
    projects: set[str] = set()
    for table, _ in groups.values():
        projects.update(table)
    findings = []
    for project in sorted(projects):
        finding = _compare_shared(project, labels, tables, groups, inventories, policy)
        if finding is not None:
            findings.append(finding)
    return findings


def _diff_by_label(
    inventories: Sequence[Inventory], tables: list[dict[str, Package]], policy: DiffPolicy
) -> list[DriftFinding]:
    labelled = [(inv.label, table) for inv, table in zip(inventories, tables, strict=True)]
    projects: set[str] = set()
    for _, table in labelled:
        projects.update(table)
    findings = []
    for project in sorted(projects):
        present = {label: table[project] for label, table in labelled if project in table}
        finding = _compare_project(project, present, inventories, policy)
        if finding is not None:
            findings.append(finding)
    return findings


def _compare_shared(
    project: str,
    labels: list[str],
    tables: list[dict[str, Package]],
    groups: dict[int, tuple[dict[str, Package], int]],
    inventories: Sequence[Inventory],
    policy: DiffPolicy,
) -> DriftFinding | None:
    """:func:`_compare_project` decided on the distinct packages (labels are unique here)."""
    distinct: dict[int, Package] = {}
    count = 0
    for table, members in groups.values():
        package = table.get(project)
        if package is not None:
            distinct[id(package)] = package
            count += members
    pkgs = list(distinct.values())
    versions = [p.version for p in pkgs if p.version]
    if count == len(labels) and len({_public(v) for v in versions}) > 1:
        values = {label: table[project].version or None for label, table in zip(labels, tables, strict=True)}
        return _finding(project, "version", values, labels, policy, major=_is_major(versions))
    if count == len(labels) and len({_public(v) for v in versions}) <= 1:
        installers = {p.installer for p in pkgs}
        builds = {_local(p) for p in pkgs}
        channels = {p.channel for p in pkgs}
        same_build = None in builds or len(builds) == 1
        same_channel = installers != {"conda"} or None in channels or len(channels) == 1
        if len(installers) == 1 and same_build and same_channel:
            return None  # nothing differs: the usual case
    present = {label: table[project] for label, table in zip(labels, tables, strict=True) if project in table}
    return _compare_project(project, present, inventories, policy)
