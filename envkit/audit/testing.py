"""Fakes for the audit stage's tests (one convention: a stage's fakes live in its ``testing.py``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from envkit._pep503 import canonicalize_name
from envkit.audit.service import Dep, Vuln, VulnService

__all__ = ["FakeVulnService"]


class FakeVulnService(VulnService):
    """For tests: fixed answers keyed by (name, version); ``skip`` maps names to reasons."""

    name = "fake"

    def __init__(
        self,
        vulns: Mapping[tuple[str, str], Sequence[Vuln]] | None = None,
        *,
        skip: Mapping[str, str] | None = None,
    ) -> None:
        self._vulns = {(str(canonicalize_name(n)), v): list(vs) for (n, v), vs in (vulns or {}).items()}
        self._skip = {str(canonicalize_name(n)): r for n, r in (skip or {}).items()}
        self.queried: list[Dep] = []

    def query(self, dep: Dep) -> tuple[Dep, list[Vuln]]:
        self.queried.append(dep)
        if dep.name in self._skip:
            return dep.skipped(self._skip[dep.name]), []
        return dep, list(self._vulns.get((dep.name, dep.version), []))
