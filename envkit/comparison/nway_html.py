"""A self-contained HTML page for an N-way comparison: the groups, the outliers with their causes,
and per framework × workload the relative difference of each group's loss from group 1's (the
majority's, unless tied) per step (log scale, the band edges as lines) and the loss and grad norm
curves of every group, drawn from a min/max envelope (:mod:`envkit.comparison.plots`): light at
100k steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from envkit.comparison.html import VERDICT_COLORS, rel_chart, step_diffs
from envkit.comparison.numbering import StepNumbers
from envkit.comparison.nway import ManyComparison, member_list
from envkit.comparison.pairwise import fmt_rel
from envkit.comparison.plots import COLORS, line_chart
from envkit.probe.model import ProbeReport, WorkloadRun

__all__ = ["render_nway_html"]

MAX_GROUPS_PLOTTED = 12
MAX_MEMBERS = 8
_COLORS = {**VERDICT_COLORS, "suspect": "#b71c1c"}


def _workload(report: ProbeReport, fw: str, wl: str) -> WorkloadRun | None:
    entry = report.frameworks.get(fw)
    return entry.workloads.get(wl) if entry is not None else None


def _curves(named: Sequence[tuple[str, ProbeReport]], result: ManyComparison) -> list[str]:
    reps = dict(named)
    groups = result.groups[:MAX_GROUPS_PLOTTED]
    first = reps[groups[0].members[0]]
    firsts = dict(result.numbering.firsts)
    # the curves are each group's first report's: their own step numbers on the axis
    steps = StepNumbers(tuple((g.members[0], firsts.get(g.members[0])) for g in groups))
    out = []
    for fw, entry in sorted(first.frameworks.items()):
        for wl in sorted(entry.workloads):
            out.append(f"<h2>{escape(fw)} · {escape(wl)}</h2>")
            ref = entry.workloads[wl]
            diffs = []
            for g in groups[1:]:
                res = _workload(reps[g.members[0]], fw, wl)
                if res is not None and res.ok and ref.ok:
                    diffs.append((f"group {g.index} loss", step_diffs(ref, res, "loss")))
            if diffs:
                title = "relative difference of the loss from group 1 per step (log scale)"
                out.append(rel_chart(title, diffs, result.bands, None, COLORS[1:], steps))
            for metric in ("loss", "grad_norm"):
                series = []
                for g in groups:
                    res = _workload(reps[g.members[0]], fw, wl)
                    values = [float(getattr(s, metric)) for s in (res.steps if res is not None else ())]
                    series.append((f"group {g.index} ({len(g.members)})", values))
                title = f"{metric.replace('_', ' ')} per step, every group"
                out.append(line_chart(title, series, COLORS, steps.axis))
    return out


def render_nway_html(named: Sequence[tuple[str, ProbeReport]], result: ManyComparison) -> str:
    groups = "".join(
        f"<tr><td>{g.index}</td><td>{len(g.members)}</td><td>{'majority' if g.majority else ''}</td>"
        f'<td style="color:{_COLORS.get(g.verdict, "#000")}">{escape(g.verdict)}</td>'
        f"<td>{fmt_rel(g.max_rel_diff)}</td><td>{result.steps_of(g).label(g.first_diff_step)}</td>"
        f"<td>{escape(member_list(g.members, MAX_MEMBERS))}</td></tr>"
        for g in result.groups
    )
    outliers = "".join(
        f'<li><b>{escape(o.name)}</b>: <span style="color:{_COLORS.get(o.tag, "#000")}">'
        f"{escape(o.tag)}</span> (group {o.group}, {fmt_rel(o.max_rel_diff)})"
        + (f" — {escape(o.reason)}" if o.reason else "")
        + "<ol>"
        + "".join(f"<li>{escape(c.message)}</li>" for c in o.causes[:8])
        + "</ol></li>"
        for o in result.outliers[:200]
    )
    failed = "".join(f"<li>{escape(n)}: {escape(e)}</li>" for n, e in result.failed)
    verdict = "all agree" if result.ok else "outliers"
    note = result.numbering.note()
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>envkit probe: {len(result.names)} reports</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 6px;font-size:12px}"
        "svg{margin:4px;border:1px solid #eee}</style></head><body>"
        f"<h1>{len(result.names)} reports, {len(result.groups)} bitwise group(s): {verdict}</h1>"
        "<table><tr><th>group</th><th>reports</th><th></th><th>verdict vs majority</th><th>max rel diff</th>"
        f"<th>from step</th><th>members</th></tr>{groups}</table>"
        + (f"<p><b>Note:</b> {escape(note)}.</p>" if note else "")
        + f"<h2>Outliers</h2><ul>{outliers or '<li>none</li>'}</ul>"
        + (f"<h2>Failed tasks</h2><ul>{failed}</ul>" if failed else "")
        + "\n".join(_curves(named, result))
        + "</body></html>\n"
    )
