"""The audit's values and its pure core: inventory + service -> findings; ignores; the exit decision."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

from packaging.version import Version

from envkit.audit.flavours import base_dep
from envkit.audit.service import SEVERITIES, AuditSeverity, Dep, Vuln, VulnService, severity_rank
from envkit.errors import ExitCode
from envkit.inventory.models import VCS_VERSION_PREFIX, Inventory, Package

if TYPE_CHECKING:  # the spec's pydantic models cost more to import than an audit of a file takes
    from envkit.spec.models import AuditIgnore

__all__ = [
    "AuditFinding",
    "AuditReport",
    "NotChecked",
    "apply_ignores",
    "audit_inventory",
    "vuln_finding",
]

Kind = Literal["vulnerability", "policy"]


@dataclass(frozen=True, order=True)
class AuditFinding:
    """One problem: an advisory affecting a package, or a failed policy check."""

    kind: Kind
    id: str  # advisory id or policy rule id
    severity: AuditSeverity
    message: str
    fix: str
    package: str | None = None
    version: str | None = None
    aliases: tuple[str, ...] = ()
    location: str | None = None  # the file the problem is in (inventory, lock, spec, image:REF)
    line: int | None = None
    ignored: str | None = None  # the reason, when the spec ignores it
    references: tuple[str, ...] = field(default=(), compare=False)

    @property
    def ids(self) -> frozenset[str]:
        return frozenset((self.id, *self.aliases))

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "id": self.id,
            "severity": self.severity,
            "message": self.message,
            "fix": self.fix,
            "package": self.package,
            "version": self.version,
            "aliases": list(self.aliases),
            "location": self.location,
            "line": self.line,
            "ignored": self.ignored,
            "references": list(self.references),
        }


@dataclass(frozen=True, order=True)
class NotChecked:
    """A dependency the audit could not check (or no advisory feed covers), and why."""

    name: str
    version: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version, "reason": self.reason}


@dataclass(frozen=True)
class AuditReport:
    """The audit of one target: its findings, what was checked and what was not, and on what data."""

    target: str
    target_kind: str  # environment | inventory | image
    provenance: Mapping[str, str]
    findings: tuple[AuditFinding, ...]
    checked: int
    not_checked: tuple[NotChecked, ...] = ()
    not_covered: tuple[NotChecked, ...] = ()  # conda-only packages: no advisory feed covers them
    warnings: tuple[str, ...] = ()  # the data's age; the inventory's: rows it could not read
    data_age: str = ""  # "advisory data as of 2024-10-10 (782 day(s) old, from README)" (data_age.py)

    @property
    def active(self) -> list[AuditFinding]:
        return [f for f in self.findings if f.ignored is None]

    def failing(self, fail_on: str) -> list[AuditFinding]:
        threshold = severity_rank(fail_on)
        return [f for f in self.active if severity_rank(f.severity) >= threshold]

    def exit_code(self, fail_on: str) -> ExitCode:
        return ExitCode.FINDINGS if self.failing(fail_on) else ExitCode.OK

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = dict.fromkeys((*reversed(SEVERITIES), "unknown"), 0)
        for finding in self.active:
            counts[finding.severity] += 1
        return counts

    def to_json(self, fail_on: str) -> dict[str, object]:
        return {
            "target": self.target,
            "target_kind": self.target_kind,
            "provenance": dict(sorted(self.provenance.items())),
            "data_age": self.data_age,
            "fail_on": fail_on,
            "checked": self.checked,
            "counts": self.counts(),
            "failing": len(self.failing(fail_on)),
            "findings": [f.to_json() for f in self.findings],
            "not_checked": [n.to_json() for n in self.not_checked],
            "not_covered": [n.to_json() for n in self.not_covered],
        }


@functools.lru_cache(maxsize=65536)  # pure; a fleet audit asks for the same few thousand pairs
def _fix_for(name: str, version: str, vuln: Vuln) -> str:
    try:
        current = Version(Version(version).public)
        later = [v for v in vuln.fixed_in if Version(v) > current]
    except ValueError:  # InvalidVersion, or a part beyond 4,300 digits
        later = list(vuln.fixed_in)
    if later:
        return f"upgrade {name} to {later[0]} or later"
    return f"no fixed release of {name} is known: remove it, or ignore {vuln.id} in the spec with a reason"


def vuln_finding(dep: Dep, vuln: Vuln, package: Package | None, location: str | None) -> AuditFinding:
    via = f" [{vuln.via}]" if vuln.via else ""
    if package is not None and package.installer == "conda" and package.name != dep.name:
        via += f" [conda {package.name} is PyPI {dep.name}: matched through envkit's conda/PyPI name mapping]"
    return AuditFinding(
        kind="vulnerability",
        id=vuln.id,
        severity=vuln.severity,
        message=f"{dep.name} {dep.version}: {vuln.summary or vuln.id}{via}",
        fix=_fix_for(dep.name, dep.version, vuln),
        package=dep.name,
        version=dep.version,
        aliases=vuln.aliases,
        location=location,
        line=package.line if package else None,
        references=vuln.references,
    )


def audit_inventory(
    inventory: Inventory, service: VulnService, *, location: str | None = None
) -> tuple[list[AuditFinding], int, list[NotChecked], list[NotChecked]]:
    """Query ``service`` for every PyPI project in ``inventory``.

    Returns (findings, number checked, not checked, not covered). conda-only
    packages (project ``conda:<name>``) are *not covered*: never matched by name.
    """
    where = location or inventory.path
    deps: dict[Dep, Package] = {}
    not_checked: list[NotChecked] = []
    not_covered: list[NotChecked] = []
    for package in sorted(inventory.packages, key=lambda p: (p.project, p.version, p.line or 0)):
        if package.project.startswith("conda:"):
            not_covered.append(
                NotChecked(package.name, package.version, "conda-only package: no PyPI advisory applies")
            )
            continue
        if not package.version or package.version.startswith(VCS_VERSION_PREFIX):
            not_checked.append(
                NotChecked(
                    package.project, package.version, "no release version (URL, VCS or editable install)"
                )
            )
            continue
        deps.setdefault(Dep(package.project, package.version), package)
    findings: list[AuditFinding] = []
    checked = 0
    bases = {dep: mapped for dep in deps if (mapped := base_dep(dep)) is not None}
    asks = list(dict.fromkeys([*deps, *(b for b, _ in bases.values())]))
    answers: dict[Dep, tuple[Dep, list[Vuln]]] = {}
    for dep, vulns in service.query_all(asks):
        answers[Dep(dep.name, dep.version)] = (dep, vulns)
    unanswered = []
    for asked, package in deps.items():
        if asked not in answers:
            unanswered.append(asked)
            continue
        dep, vulns = answers[asked]
        if asked in bases:  # a flavour: its own advisories and the base project's
            base, flavour = bases[asked]
            base_answer, base_vulns = answers.get(base) or (base.skipped("no answer"), [])
            if base_answer.skip_reason is None:
                dep = replace(dep, skip_reason=None)
                vulns = [*vulns, *(replace(v, via=flavour.via()) for v in base_vulns)]
        if dep.skip_reason is not None:
            not_checked.append(NotChecked(dep.name, dep.version, dep.skip_reason))
            continue
        checked += 1
        findings += [vuln_finding(dep, v, package, where) for v in _dedupe(vulns)]
    # A dependency the service never answered for is not checked: never let it pass as clean.
    not_checked += [NotChecked(d.name, d.version, f"{service.name} gave no answer") for d in unanswered]
    return findings, checked, sorted(set(not_checked)), sorted(set(not_covered))


def _dedupe(vulns: Iterable[Vuln]) -> list[Vuln]:
    # Vuln equality leaves references out: the key keeps them, so a cached answer is the same answer.
    return list(_dedupe_once(tuple((v, v.references) for v in vulns)))


@functools.lru_cache(maxsize=65536)  # pure; a fleet audit sees the same lists on every host
def _dedupe_once(keyed: tuple[tuple[Vuln, tuple[str, ...]], ...]) -> tuple[Vuln, ...]:
    """Merge advisories that are aliases of each other (PYSEC and GHSA for one CVE) into one.

    The merged finding keeps the PYSEC id (else the smallest), the *highest* severity of the
    group (a PYSEC record without severity must not hide the GHSA record's critical), and every
    source's data: all ids as aliases, fixed versions, references and sources.
    """
    groups: list[list[Vuln]] = []
    for vuln, _ in keyed:
        joined = [g for g in groups if any(vuln.ids & other.ids for other in g)]
        merged = [vuln, *(v for g in joined for v in g)]
        groups = [g for g in groups if g not in joined] + [merged]
    return tuple(sorted((_merge(g) for g in groups), key=lambda v: v.id))


def _merge(group: list[Vuln]) -> Vuln:
    ordered = sorted(group, key=lambda v: (not v.id.startswith("PYSEC"), v.id))
    if len(ordered) == 1:
        return ordered[0]
    first = ordered[0]
    ids = set().union(*(v.ids for v in ordered))
    fixed = {f for v in ordered for f in v.fixed_in}
    return Vuln(
        id=first.id,
        summary=next((v.summary for v in ordered if v.summary), ""),
        aliases=tuple(sorted(ids - {first.id})),
        fixed_in=tuple(sorted(fixed, key=_version_or_text)),
        # highest first; "unknown" ranks as medium (as --fail-on counts it), a known rating wins a tie
        severity=max((v.severity for v in ordered), key=lambda s: (severity_rank(s), s != "unknown")),
        source="; ".join(dict.fromkeys(v.source for v in ordered if v.source)) or None,
        references=tuple(dict.fromkeys(r for v in ordered for r in v.references)),
        via=first.via if all(v.via for v in ordered) else None,  # one own-name record: a direct match
    )


def _version_or_text(text: str) -> tuple[int, Version | str]:
    try:
        return (0, Version(text))
    except ValueError:  # InvalidVersion, or a part beyond 4,300 digits
        return (1, text)


def apply_ignores(findings: Sequence[AuditFinding], ignores: Sequence[AuditIgnore]) -> list[AuditFinding]:
    """Mark findings whose id or alias the spec ignores; they stay in the report with the reason."""
    reasons = {i.id: i.reason for i in ignores}
    marked = []
    for finding in findings:
        hit = next((reasons[i] for i in sorted(finding.ids) if i in reasons), None)
        marked.append(replace(finding, ignored=hit) if hit else finding)
    return marked
