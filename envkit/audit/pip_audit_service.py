"""Online advisories through pip-audit's services (``PyPIService``, ``OsvService``).

pip-audit's modules are private: the version is pinned in pyproject. Two of its
traps are handled here: a ``SkippedDependency`` (PyPI answers 404, e.g. for
``torch==2.1.0+cu121``) becomes a dependency with ``skip_reason`` — *not checked*,
never clean — and local version labels are dropped before asking, since indexes
only know public versions. Connection and service errors become AuditError (exit 3).
"""

from __future__ import annotations

from typing import Any, Literal

from packaging.version import Version

from envkit.audit.service import Dep, Vuln, VulnService, short_summary
from envkit.errors import AuditError

__all__ = ["PipAuditService", "online_service"]

OnlineKind = Literal["osv", "pypi"]


class PipAuditService(VulnService):
    """Adapter over any pip-audit ``VulnerabilityService``."""

    def __init__(self, inner: Any, *, name: str = "pip-audit") -> None:
        self._inner = inner
        self.name = name

    def query(self, dep: Dep) -> tuple[Dep, list[Vuln]]:
        from pip_audit._service import (
            ConnectionError as PAConnectionError,
        )
        from pip_audit._service import (
            ResolvedDependency,
            ServiceError,
            SkippedDependency,
        )

        try:
            version = Version(Version(dep.version).public)
        except ValueError:  # InvalidVersion, or a part beyond 4,300 digits
            return dep.skipped(f"{dep.version!r} is not a PEP 440 version"), []
        try:
            answered, results = self._inner.query(ResolvedDependency(name=dep.name, version=version))
        except PAConnectionError as e:
            raise AuditError(
                f"{self.name}: cannot reach the vulnerability service: {e}",
                hint="check the network, or audit offline with --db DIR",
            ) from e
        except ServiceError as e:
            raise AuditError(
                f"{self.name}: the service failed for {dep.name} {dep.version}: {e}", hint="retry later"
            ) from e
        if isinstance(answered, SkippedDependency):
            return dep.skipped(f"{self.name}: {answered.skip_reason}"), []
        return dep, [self._vuln(r) for r in results]

    def _vuln(self, result: Any) -> Vuln:
        return Vuln(
            id=str(result.id),
            summary=short_summary(str(result.description or "")),
            aliases=tuple(sorted(str(a) for a in result.aliases)),
            fixed_in=tuple(sorted(str(v) for v in result.fix_versions)),
            severity="unknown",  # pip-audit's results carry no severity
            source=self.name,
        )


def online_service(kind: OnlineKind = "osv", *, timeout: int = 15) -> PipAuditService:
    """pip-audit's OSV (api.osv.dev) or PyPI JSON service."""
    from pip_audit._service import OsvService, PyPIService

    if kind == "pypi":
        return PipAuditService(PyPIService(timeout=timeout), name="pip-audit:pypi")
    return PipAuditService(OsvService(timeout=timeout), name="pip-audit:osv")
