"""``envkit audit``: known vulnerabilities (offline OSV directory or pip-audit) and policy checks."""

from __future__ import annotations

from envkit.audit.service import SEVERITIES, Dep, FakeVulnService, Severity, Vuln, VulnService, severity_rank

__all__ = ["SEVERITIES", "Dep", "FakeVulnService", "Severity", "Vuln", "VulnService", "severity_rank"]
