"""The vulnerability-service interface: plain values in, plain values out.

A :class:`VulnService` answers, for each dependency, which advisories affect it.
A dependency the service could not check comes back with ``skip_reason`` set (as
pip-audit's ``SkippedDependency``): it is reported as *not checked*, never as clean.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Literal

from envkit._pep503 import canonicalize_name

__all__ = [
    "SEVERITIES",
    "AuditSeverity",
    "Dep",
    "Vuln",
    "VulnService",
    "severity_rank",
    "short_summary",
]

AuditSeverity = Literal["unknown", "low", "medium", "high", "critical"]
SEVERITIES: tuple[AuditSeverity, ...] = ("low", "medium", "high", "critical")

# An advisory without severity data counts as medium for --fail-on: most PyPA
# records carry no CVSS vector, and ranking them lowest would let `--fail-on medium`
# pass known, unrated vulnerabilities.
_RANK: dict[str, int] = {"low": 1, "unknown": 2, "medium": 2, "high": 3, "critical": 4}


def short_summary(text: str, limit: int = 160) -> str:
    """The first sentence of an advisory's text, whitespace collapsed, at most ``limit`` characters."""
    flat = " ".join(text.split())
    end = flat.find(". ")
    if 0 < end < limit:
        return flat[: end + 1]
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def severity_rank(severity: str) -> int:
    return _RANK.get(severity, 2)


@dataclass(frozen=True, order=True)
class Dep:
    """One distribution to check, under its PyPI (canonical) name."""

    name: str
    version: str
    skip_reason: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", canonicalize_name(self.name))

    def skipped(self, reason: str) -> Dep:
        return replace(self, skip_reason=reason)


@dataclass(frozen=True)
class Vuln:
    """One advisory that affects a dependency."""

    id: str
    summary: str
    aliases: tuple[str, ...] = ()
    fixed_in: tuple[str, ...] = ()
    severity: AuditSeverity = "unknown"
    source: str | None = None  # the advisory file or service that said so
    references: tuple[str, ...] = field(default=(), compare=False)
    via: str | None = None  # how it was matched when not by the distribution's own name (flavours)

    @property
    def ids(self) -> frozenset[str]:
        return frozenset((self.id, *self.aliases))


class VulnService(abc.ABC):
    """Answers which advisories affect each dependency."""

    name: str = "service"

    @abc.abstractmethod
    def query(self, dep: Dep) -> tuple[Dep, list[Vuln]]:
        """Advisories for ``dep``; return ``(dep.skipped(reason), [])`` when it cannot be checked."""

    def query_all(self, deps: Iterable[Dep]) -> Iterator[tuple[Dep, list[Vuln]]]:
        """Query many; services may override this to batch."""
        for dep in deps:
            yield self.query(dep)

    def provenance(self) -> dict[str, str]:
        """What the answers are based on (database path, revision, URL)."""
        return {"service": self.name}
