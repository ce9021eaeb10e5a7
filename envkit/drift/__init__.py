"""Pure drift detection: inventories in, findings out (no I/O beyond packaged rule data)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from envkit.drift.diff import diff_packages, spread
from envkit.drift.duplicates import duplicate_findings
from envkit.drift.host import host_findings
from envkit.drift.models import DriftFinding, DriftSeverity, RuleSet, severity_rank
from envkit.drift.rules import apply_rules, load_rules
from envkit.inventory.models import Inventory

__all__ = ["DriftFinding", "DriftReport", "diff_inventories", "load_rules", "spread"]


@dataclass(frozen=True)
class DriftReport:
    """Drift across inventories: the findings, the inputs and their labels."""

    inventories: tuple[Inventory, ...]
    findings: tuple[DriftFinding, ...]

    @property
    def worst(self) -> DriftSeverity | None:
        return max((f.severity for f in self.findings), key=severity_rank, default=None)

    def to_json(self) -> dict[str, object]:
        return {
            "inputs": [
                {
                    "label": i.label,
                    "path": i.path,
                    "format": i.format,
                    "packages": len(i.packages),
                    "selected": i.meta.get("selected"),
                    "warnings": list(i.warnings),
                }
                for i in self.inventories
            ],
            "findings": [f.to_json() for f in self.findings],
        }


def diff_inventories(inventories: Sequence[Inventory], rules: RuleSet | None = None) -> DriftReport:
    """Differences and rule findings across ``inventories`` (one inventory: rules only)."""
    rules = rules or load_rules()
    packages = diff_packages(inventories, rules.policy)
    findings = _once(packages, apply_rules(inventories, rules), rules) + host_findings(inventories)
    findings += [f for inv in inventories for f in duplicate_findings(inv)]
    return DriftReport(tuple(inventories), tuple(sorted(findings, key=DriftFinding.sort_key)))


def _once(packages: list[DriftFinding], ruled: list[DriftFinding], rules: RuleSet) -> list[DriftFinding]:
    """Each outlier once: a ``differs_with`` rule (numpy under a framework) that repeats a version
    difference raises that finding's severity and adds its reason instead of a second finding."""
    merging = {r.id: r for r in rules.rules if r.check == "differs_with"}
    versions = {f.package: i for i, f in enumerate(packages) if f.kind == "version"}
    out = list(packages)
    kept = []
    for finding in ruled:
        index = versions.get(finding.package)
        rule = merging.get(finding.rule or "")
        if rule is None or index is None:
            kept.append(finding)
            continue
        held = out[index]
        severity = max(held.severity, finding.severity, key=severity_rank)
        out[index] = replace(held, severity=severity, rule=rule.id, message=f"{held.message}: {rule.message}")
    return out + kept
