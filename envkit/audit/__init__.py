"""``envkit audit``: known vulnerabilities (offline OSV directory or pip-audit) and policy checks."""

from __future__ import annotations

from envkit.audit.service import SEVERITIES, Dep, Severity, Vuln, VulnService, severity_rank
from envkit.audit.testing import FakeVulnService

__all__ = ["SEVERITIES", "Dep", "FakeVulnService", "Severity", "Vuln", "VulnService", "severity_rank"]
