"""Drift findings and the rule set they come from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "SEVERITIES",
    "DiffPolicy",
    "DriftFinding",
    "DriftSeverity",
    "Kind",
    "Rule",
    "RuleSet",
    "severity_rank",
]

DriftSeverity = Literal["info", "warning", "critical"]
Kind = Literal["added", "removed", "version", "build", "channel", "installer", "rule", "host"]
SEVERITIES: tuple[DriftSeverity, ...] = ("info", "warning", "critical")


def severity_rank(severity: str) -> int:
    return SEVERITIES.index(severity)  # type: ignore[arg-type,unused-ignore]


@dataclass(frozen=True)
class DriftFinding:
    """One drift finding about a package across inventories: kind, severity, rule, the values seen."""

    package: str
    kind: Kind
    severity: DriftSeverity
    rule: str | None
    values: Mapping[str, str | None]  # input label -> value (None: absent)
    message: str

    def sort_key(self) -> tuple[int, str, str, str]:
        return (-severity_rank(self.severity), self.package, self.kind, self.rule or "")

    def to_json(self) -> dict[str, object]:
        return {
            "package": self.package,
            "kind": self.kind,
            "severity": self.severity,
            "rule": self.rule,
            "values": dict(sorted(self.values.items())),
            "message": self.message,
        }


@dataclass(frozen=True)
class Rule:
    """A known-incompatibility rule (drift/data/rules.yaml): what it checks, its severity and source."""

    id: str
    check: str
    severity: DriftSeverity
    message: str
    source: str
    params: Mapping[str, Any] = field(default_factory=dict)
    fix: str | None = None


@dataclass(frozen=True)
class KindPolicy:
    severity: DriftSeverity
    key: DriftSeverity
    major: DriftSeverity | None = None
    rule: str | None = None


@dataclass(frozen=True)
class DiffPolicy:
    """How severe a kind of difference is, for key projects and for the rest."""

    key_projects: frozenset[str]
    kinds: Mapping[str, KindPolicy]

    def severity(self, kind: str, project: str, *, major: bool = False) -> DriftSeverity:
        policy = self.kinds[kind]
        if project in self.key_projects:
            return policy.key
        if major and policy.major:
            return policy.major
        return policy.severity


@dataclass(frozen=True)
class RuleSet:
    """The diff policy and the rules, loaded once."""

    policy: DiffPolicy
    rules: tuple[Rule, ...]
