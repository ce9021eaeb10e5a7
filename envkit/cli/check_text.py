"""``envkit check``'s text: the environment, then one verdict per target; several targets as one
compact table (target x driver -> verdict, first reason) with each finding written once below it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from envkit._safe import one_line
from envkit.readiness.check import CheckResult, fingerprint_facts
from envkit.readiness.lockcheck import LockVerdict
from envkit.readiness.rules import ReadinessFinding

__all__ = ["MARK", "check_text", "verdict_lines", "verdict_table"]

MARK = {"error": "x", "warning": "!", "note": "-"}
REASON_WIDTH = 100


class _Row:
    def __init__(self, target: str, driver: str, status: str, reason: str) -> None:
        self.cells = (target, driver, status, reason)


def _first_reason(findings: Sequence[ReadinessFinding]) -> str:
    for severity in ("error", "warning"):
        found = next((f for f in findings if f.severity == severity), None)
        if found is not None:
            text = one_line(found.message)
            cut = text if len(text) <= REASON_WIDTH else text[: REASON_WIDTH - 3] + "..."
            return f"{MARK[severity]} {cut}"
    return ""


def _gpu_label(label: str, driver: str | None) -> str:
    return label if driver is None or label != f"driver {driver}" else "-"


def _scope(hits: list[tuple[str, str | None]], rows: list[tuple[str, str | None]]) -> str:
    """Which targets a finding concerns: "" for all, else GPUs whole (every driver) or GPU x driver."""
    if len(set(hits)) == len(set(rows)):
        return ""
    parts: list[str] = []
    for label in dict.fromkeys(label for label, _ in rows):
        mine = [d for lbl, d in rows if lbl == label]
        hit = [d for lbl, d in hits if lbl == label]
        if not hit:
            continue
        if len(set(hit)) == len(set(mine)):
            parts.append(label)
        else:
            parts.extend(f"{label} x {d}" for d in dict.fromkeys(hit))
    return f"  [{', '.join(parts)}]"


def verdict_table(
    verdicts: Sequence[tuple[str, str | None, str, Sequence[ReadinessFinding]]],
    environment: Sequence[ReadinessFinding] = (),
) -> list[str]:
    """``(target label, driver, status, findings)`` per target as a table, then each finding once
    (with the targets it concerns when not all of them). A target that fails only through
    ``environment`` (what holds on every GPU, shown above) gives that as its reason."""
    rows = [_Row("target", "driver", "verdict", "first reason")]
    for label, driver, status, findings in verdicts:
        errors = [f for f in findings if f.severity == "error"]
        if not errors and environment and status != "ready":  # failing through what holds on every GPU
            reason = _first_reason(environment) + " (on every GPU)"
        else:
            reason = _first_reason(findings)
        rows.append(_Row(one_line(_gpu_label(label, driver)), driver or "-", status.upper(), reason.strip()))
    widths = [max(len(r.cells[i]) for r in rows) for i in range(3)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(r.cells[:3], widths, strict=True)) + "  " + r.cells[3]
        for r in rows
    ]
    lines = [line.rstrip() for line in lines]
    keys = [(one_line(label), driver) for label, driver, _, _ in verdicts]
    order: dict[tuple[str, str], list[tuple[str, str | None]]] = {}
    for key, (_, _, _, findings) in zip(keys, verdicts, strict=True):
        for f in findings:
            if f.severity != "note":
                order.setdefault((f.severity, f.message), []).append(key)
    if order:
        lines.append("details:")
    for (severity, message), hits in order.items():
        lines.append(f"  {MARK[severity]} {message}{_scope(hits, keys)}")
    return [one_line(line) for line in lines]  # texts from files (names, paths) stay on their line


def verdict_lines(verdicts: Sequence[LockVerdict]) -> list[str]:
    """A lock's verdicts: the table for several targets, else the one verdict and its findings."""
    if len(verdicts) > 1:
        return verdict_table([(v.target.label, v.target.driver, v.status, v.findings) for v in verdicts])
    lines = []
    for v in verdicts:
        lines.append(f"{v.target.label}: {v.status.upper()}")
        lines += [f"  {MARK[f.severity]} {f.message}" for f in v.findings if f.severity != "note"]
    return lines


def check_text(result: CheckResult, show_all: bool, sbom: Path | None = None) -> str:
    lines = [f"{result.where}:"]
    summary = fingerprint_facts(result.facts)
    for name, fw in summary["frameworks"].items():
        loaded = ", ".join(f"{k} {v}" for k, v in fw["loaded"].items()) or "nothing loaded"
        lines.append(
            f"  {name} {fw['version']}: built for CUDA {fw['cuda_build'] or '- (CPU-only)'}"
            + (f", cuDNN {fw['cudnn_build']}" if fw["cudnn_build"] else "")
            + f"; loaded: {loaded}"
        )
    for lib, code in summary["gpu_code"].items():
        ptx = ", ".join(code["ptx"]) or "no PTX"
        lines.append(f"  {lib}: {code['fatbins']} fatbins, SASS {', '.join(code['sass']) or '-'}; {ptx}")
    box = result.facts.load_sandbox
    if box is not None:
        lines.append(
            f"  libraries opened on this host: environment {box.get('environment')}, cwd "
            f"{box.get('cwd')}, network {box.get('network')}"
        )
    shown = [f for f in result.environment if show_all or f.code not in ("loaded", "host-library")]
    if shown:
        lines.append("  on every GPU:")
        lines.extend(f"    {MARK[f.severity]} {f.message}" for f in shown)
    if len(result.verdicts) > 1:
        rows = [
            (
                v.target.label,
                v.target.driver,
                v.status,
                [f for f in v.findings if f not in result.environment],
            )
            for v in result.verdicts
        ]
        lines.extend(verdict_table(rows, [f for f in result.environment if f.severity == "error"]))
    for verdict in result.verdicts if len(result.verdicts) == 1 else ():
        lines.append(f"{verdict.target.label}: {verdict.status.upper()}")
        lines.extend(
            f"  {MARK[f.severity]} {f.message}" for f in verdict.findings if f not in result.environment
        )
    if sbom is not None:
        lines.append(f"SBOM with these facts: {sbom}")
    # every text from a file (a GPU name, a path in the image, a version) stays on its line
    return "\n".join(one_line(line) for line in lines)
