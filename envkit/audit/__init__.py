"""``envkit audit``: known vulnerabilities (offline OSV directory or pip-audit) and policy checks."""

from __future__ import annotations

from envkit.audit.service import SEVERITIES, AuditSeverity, Dep, Vuln, VulnService, severity_rank
from envkit.audit.testing import FakeVulnService

__all__ = ["SEVERITIES", "AuditSeverity", "Dep", "FakeVulnService", "Vuln", "VulnService", "severity_rank"]
