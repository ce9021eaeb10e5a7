"""Pure drift detection: inventories in, findings out (no I/O beyond packaged rule data)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from envkit.drift.compare import diff_packages, spread
from envkit.drift.models import Finding, RuleSet, Severity, severity_rank
from envkit.drift.rules import apply_rules, load_rules
from envkit.inventory.models import Inventory

__all__ = ["DriftReport", "Finding", "diff_inventories", "load_rules", "spread"]


@dataclass(frozen=True)
class DriftReport:
    inventories: tuple[Inventory, ...]
    findings: tuple[Finding, ...]

    @property
    def worst(self) -> Severity | None:
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
    findings = diff_packages(inventories, rules.policy) + apply_rules(inventories, rules)
    return DriftReport(tuple(inventories), tuple(sorted(findings, key=Finding.sort_key)))
