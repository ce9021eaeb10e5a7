"""Render an :class:`~envkit.audit.findings.AuditReport`: table, JSON, SARIF 2.1.0, markdown.

Pure functions returning strings; byte-stable (sorted, no timestamps).
"""

from __future__ import annotations

from typing import Any

from envkit import __version__, _json
from envkit._safe import https_url, markdown_text, one_line
from envkit.audit.findings import AuditFinding, AuditReport
from envkit.audit.policy import RULES
from envkit.audit.service import severity_rank

__all__ = ["FORMATS", "render", "to_markdown", "to_sarif", "to_table"]

FORMATS = ("table", "json", "sarif", "markdown")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL = {
    "critical": "error",
    "high": "error",
    "medium": "warning",
    "unknown": "warning",
    "low": "note",
}
_SECURITY_SEVERITY = {"critical": "9.5", "high": "8.0", "medium": "5.5", "unknown": "5.5", "low": "2.0"}


def _ordered(findings: tuple[AuditFinding, ...] | list[AuditFinding]) -> list[AuditFinding]:
    return sorted(
        findings,
        key=lambda f: (
            f.ignored is not None,
            -severity_rank(f.severity),
            f.severity == "unknown",
            f.kind,
            f.package or "",
            f.id,
        ),
    )


def _summary(report: AuditReport, fail_on: str) -> str:
    counts = report.counts()
    parts = [f"{n} {s}" for s, n in counts.items() if n]
    ignored = len(report.findings) - len(report.active)
    failing = len(report.failing(fail_on))
    return (
        f"{one_line(report.target)}: {len(report.active)} finding(s) ({', '.join(parts) or 'none'}), "
        f"{ignored} ignored; "
        f"{report.checked} package(s) checked, {len(report.not_checked)} not checked, "
        f"{len(report.not_covered)} not covered; {failing} at or above --fail-on {fail_on}"
    )


def to_table(report: AuditReport, fail_on: str) -> str:
    lines: list[str] = []
    ordered = _ordered(report.findings)
    if ordered:
        rows = [
            (
                f.severity + (" (ignored)" if f.ignored else ""),
                one_line(f.id),
                one_line(f"{f.package} {f.version}") if f.package else "-",
            )
            for f in ordered
        ]
        widths = [max(len(r[i]) for r in [("SEVERITY", "ID", "PACKAGE"), *rows]) for i in range(3)]
        lines.append(
            "  ".join(h.ljust(w) for h, w in zip(("SEVERITY", "ID", "PACKAGE"), widths, strict=True))
            + "  FINDING"
        )
        indent = " " * (sum(widths) + 6)
        for row, f in zip(rows, ordered, strict=True):
            # advisory text is one line each: a newline in it cannot forge a summary line
            lines.append(
                "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + f"  {one_line(f.message)}"
            )
            lines.append(f"{indent}fix: {one_line(f.fix)}")
            if f.ignored:
                lines.append(f"{indent}ignored: {one_line(f.ignored)}")
    else:
        lines.append("no findings")
    for title, items in (
        ("not checked", report.not_checked),
        ("not covered (conda-only)", report.not_covered),
    ):
        if items:
            shown = ", ".join(one_line(f"{n.name} {n.version}".strip()) for n in items[:30])
            more = f" and {len(items) - 30} more" if len(items) > 30 else ""
            lines.append(f"{title}: {shown}{more}")
            lines += [f"  reason: {one_line(r)}" for r in sorted({n.reason for n in items})[:5]]
    if report.data_age:
        lines.append(one_line(report.data_age))
    lines.append(_summary(report, fail_on))
    return "\n".join(lines)


def to_markdown(report: AuditReport, fail_on: str) -> str:
    """Every value (advisory text, package names, SOURCE.json provenance) is escaped: literal text."""
    md = markdown_text
    out = [f"# envkit audit: {md(report.target)}", "", md(_summary(report, fail_on)), ""]
    if report.data_age:
        out += [md(report.data_age), ""]
    stale = [f"> warning: {md(w)}" for w in report.warnings if w.startswith("the advisory data")]
    out += [*stale, ""] if stale else []
    if report.findings:
        out += ["| severity | id | package | finding | fix |", "|---|---|---|---|---|"]
        for f in _ordered(report.findings):
            cells = [
                f.severity + (f" (ignored: {f.ignored})" if f.ignored else ""),
                f.id,
                f"{f.package} {f.version}" if f.package else "",
                f.message,
                f.fix,
            ]
            out.append("| " + " | ".join(md(c) for c in cells) + " |")
        out.append("")
    for title, items in (
        ("Not checked", report.not_checked),
        ("Not covered (conda-only packages)", report.not_covered),
    ):
        if items:
            out += (
                [f"## {title}", ""] + [f"- {md(f'{n.name} {n.version}: {n.reason}')}" for n in items] + [""]
            )
    out += ["## Database", ""] + [f"- {md(f'{k}: {v}')}" for k, v in sorted(report.provenance.items())]
    return "\n".join(out) + "\n"


def _rule(finding: AuditFinding) -> dict[str, object]:
    base = finding.id.split(":")[0] if finding.kind == "policy" else None
    description = RULES[base][1] if base in RULES else finding.message
    rule: dict[str, object] = {
        "id": finding.id,
        "shortDescription": {"text": description},
        "help": {"text": finding.fix},
        "properties": {"security-severity": _SECURITY_SEVERITY[finding.severity], "tags": [finding.kind]},
    }
    link = next((u for u in map(https_url, finding.references) if u), None)
    if link:  # only a plain https URL: never javascript:, data: or file: from an advisory
        rule["helpUri"] = link
    return rule


def _result(finding: AuditFinding, target: str) -> dict[str, object]:
    location: dict[str, object] = {"artifactLocation": {"uri": finding.location or target}}
    if finding.line:
        location["region"] = {"startLine": finding.line}
    result: dict[str, object] = {
        "ruleId": finding.id,
        "level": _SARIF_LEVEL[finding.severity],
        "message": {"text": f"{finding.message}. Fix: {finding.fix}"},
        "locations": [{"physicalLocation": location}],
        "properties": {"severity": finding.severity, "aliases": list(finding.aliases)},
    }
    if finding.ignored:
        result["suppressions"] = [{"kind": "external", "justification": finding.ignored}]
    return result


def to_sarif(report: AuditReport) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run; ignored findings carry a suppression."""
    findings = _ordered(report.findings)
    rules = {f.id: _rule(f) for f in findings}
    return {
        "version": "2.1.0",
        "$schema": SARIF_SCHEMA,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "envkit",
                        "version": __version__,
                        "rules": [rules[k] for k in sorted(rules)],
                    }
                },
                "results": [_result(f, report.target) for f in findings],
                "properties": {
                    "provenance": dict(sorted(report.provenance.items())),
                    "dataAge": report.data_age,
                },
            }
        ],
    }


def render(report: AuditReport, fmt: str, fail_on: str) -> str:
    if fmt == "json":  # json.dumps(..., indent=2, sort_keys=True), faster (envkit._json)
        return _json.dumps(report.to_json(fail_on)) + "\n"
    if fmt == "sarif":
        return _json.dumps(to_sarif(report)) + "\n"
    if fmt == "markdown":
        return to_markdown(report, fail_on)
    return to_table(report, fail_on) + "\n"
