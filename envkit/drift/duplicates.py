"""One package listed twice in one inventory, at different versions (``numpy==1.26.4`` and
``numpy==2.0.1`` in one pip freeze: a hand-merged file, two environments pasted together).

Which one is installed cannot be known, so neither may hide the other: each duplicate is a
finding of its own, and the rules run on every version present (:func:`variants`), so a
known-bad combination is found whichever row is the real one.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from envkit._memo import by_identity
from envkit.drift.models import DriftFinding
from envkit.inventory.models import Inventory, Package

__all__ = ["DUPLICATE_RULE", "MAX_VARIANTS", "duplicate_findings", "duplicates", "variants"]

DUPLICATE_RULE = "duplicate-entry"
MAX_VARIANTS = 64  # tables checked per inventory; beyond, each alternative is tried on its own


def duplicates(inventory: Inventory) -> dict[str, list[Package]]:
    """Projects listed more than once with different versions by one installer (and environment)."""
    found: dict[str, list[Package]] = {}
    if not _repeats(inventory.packages):
        return found  # every project listed once: the usual case, without grouping
    for project, packages in inventory.by_project().items():
        groups: dict[tuple[str, str | None], set[str]] = {}
        for package in packages:
            groups.setdefault((package.installer, package.env), set()).add(package.version)
        if any(len(versions) > 1 for versions in groups.values()):
            found[project] = packages
    return found


@by_identity
def _repeats(packages: tuple[Package, ...]) -> bool:
    return len({p.project for p in packages}) < len(packages)


def duplicate_findings(inventory: Inventory) -> list[DriftFinding]:
    findings = []
    for project, packages in sorted(duplicates(inventory).items()):
        rows = ", ".join(
            f"{p.name} {p.version or '?'}" + (f" (line {p.line})" if p.line else "") + f" [{p.installer}]"
            for p in packages
        )
        versions = ", ".join(sorted({p.version for p in packages}))
        message = (
            f"{inventory.label}: {project} is listed {len(packages)} times with different versions: {rows}; "
            "rules were applied to each"
        )
        findings.append(
            DriftFinding(project, "rule", "warning", DUPLICATE_RULE, {inventory.label: versions}, message)
        )
    return findings


def variants(inventory: Inventory) -> Iterator[dict[str, Package]]:
    """``inventory.primary()`` and the tables with each duplicated project's other rows in its place."""
    primary = inventory.primary()
    dups = duplicates(inventory)
    yield primary
    if not dups:
        return
    choices = [[(project, p) for p in packages] for project, packages in sorted(dups.items())]
    combos = 1
    for options in choices:
        combos *= len(options)
    if combos <= MAX_VARIANTS:
        for combo in itertools.product(*choices):
            yield {**primary, **dict(combo)}
        return
    for options in choices:
        for project, package in options:
            yield {**primary, project: package}
