"""A self-contained HTML page for a comparison: inline SVG plots, no scripts, nothing fetched.

Per framework × workload: the relative difference of the loss and of the global grad norm per step,
|a − b| / max(|a|, |b|, tiny), on a log scale with the band edges of the comparison as lines (onset
and growth at a glance), both loss curves for context, and the per-parameter differences (grad norms
at the first and last step, final norms) largest first, the identical parameters collapsed into one
line. Curves are downsampled for drawing (:func:`envkit.comparison.plots.envelope`), never for the
verdict: a 100k-step pair stays a page of ~100 KB (benchmarks/bench_html.py).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from html import escape

from envkit.comparison.bands import Bands
from envkit.comparison.numbering import POSITIONS, StepNumbers
from envkit.comparison.pairwise import PairComparison, fmt_rel, rel_diff
from envkit.comparison.plots import COLORS, line_chart, log_chart
from envkit.probe.model import ProbeReport, WorkloadRun

__all__ = ["VERDICT_COLORS", "param_section", "rel_chart", "render_html", "step_diffs"]

TINY = sys.float_info.min  # the floor of the relative difference's denominator (0 vs 0 is 0)
MAX_PARAM_ROWS = 40
BAR_W, ROW, LABEL_W = 640, 14, 260
VERDICT_COLORS = {
    "identical": "#2ca02c",
    "equivalent": "#7cb342",
    "precision-drift": "#ff9800",
    "diverged": "#d62728",
    "invalid": "#6a1b9a",
}


def _bar_chart(title: str, bars: Sequence[tuple[str, float]]) -> str:
    """Horizontal bars of relative differences on a log scale (1e-9 … 1)."""
    height = 30 + ROW * len(bars) + 6
    span = BAR_W - LABEL_W - 80
    parts = [
        f'<svg width="{BAR_W}" height="{height}" role="img"><title>{escape(title)}</title>',
        f'<text x="4" y="16" font-size="13">{escape(title)}</text>',
    ]
    for i, (name, value) in enumerate(bars):
        yy = 30 + i * ROW
        drawn = math.isfinite(value) and value > 0
        frac = min(max((math.log10(value) + 9) / 9, 0.01), 1.0) if drawn else 0.0
        parts.append(
            f'<text x="{LABEL_W - 6}" y="{yy + 10}" text-anchor="end" font-size="10">{escape(name)}</text>'
            f'<rect x="{LABEL_W}" y="{yy + 1}" width="{span * frac:.1f}" height="{ROW - 3}" fill="#ff9800"/>'
            f'<text x="{LABEL_W + 4 + span * frac:.1f}" y="{yy + 10}" font-size="10">{fmt_rel(value)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def param_section(ra: WorkloadRun, rb: WorkloadRun) -> str:
    """The parameters that differ (largest first, MAX_PARAM_ROWS bars at most); the identical in one line."""
    rows: dict[str, list[tuple[str, float]]] = {}
    for which in ("first", "last"):
        ga, gb = ra.grad_norms(which), rb.grad_norms(which)
        for p in ga:
            if p in gb:
                rows.setdefault(p, []).append((f"grad {which}: {p}", rel_diff(ga[p], gb[p], TINY)))
    fa, fb = ra.final_param_norms, rb.final_param_norms
    for p in fa:
        if p in fb:
            rows.setdefault(p, []).append((f"final: {p}", rel_diff(fa[p], fb[p], TINY)))
    same = [p for p, values in rows.items() if all(v == 0 for _, v in values)]
    bars = sorted(
        (bar for values in rows.values() for bar in values if bar[1] != 0),
        key=lambda bar: (-bar[1] if not math.isnan(bar[1]) else -math.inf, bar[0]),
    )
    out = [
        f"<p>{len(same)} of {len(rows)} parameters identical (grad norm at the first and the last step, "
        f"final norm){': every one' if len(same) == len(rows) else ''}.</p>"
    ]
    if bars:
        out.append(
            _bar_chart(
                "per-parameter relative difference, largest first (log scale, 1e-9 … 1)",
                bars[:MAX_PARAM_ROWS],
            )
        )
    if len(bars) > MAX_PARAM_ROWS:
        out.append(f"<p>… and {len(bars) - MAX_PARAM_ROWS} smaller differences not drawn.</p>")
    return "".join(out)


def step_diffs(ra: WorkloadRun, rb: WorkloadRun, metric: str) -> list[float]:
    """|a − b| / max(|a|, |b|, tiny) of ``metric`` (``loss``, ``grad_norm``) at every step."""
    return [
        rel_diff(getattr(sa, metric), getattr(sb, metric), TINY)
        for sa, sb in zip(ra.steps, rb.steps, strict=True)
    ]


def rel_chart(
    title: str,
    series: Sequence[tuple[str, Sequence[float]]],
    bands: Bands,
    first_diff: int | None,
    colors: Sequence[str] = COLORS,
    steps: StepNumbers = POSITIONS,
) -> str:
    """``series`` of relative differences with ``bands``' edges and the onset window drawn as lines.

    Positions are labelled as ``steps`` says (the runs' own step numbers)."""
    marks = [(f"onset window ({bands.window})", bands.window)]
    if first_diff is not None:
        marks.append((f"first difference: step {steps.label(first_diff, grouped=True)}", first_diff))
    edges = [
        (f"equivalent ≤ {bands.equivalent:g}", bands.equivalent),
        (f"drift ≤ {bands.drift:g}", bands.drift),
    ]
    return log_chart(title, series, edges=edges, marks=marks, colors=colors, step_label=steps.axis)


def _workload_section(
    fw: str, wl: str, ra: WorkloadRun, rb: WorkloadRun, names: tuple[str, str], comparison: PairComparison
) -> str:
    out = [f"<h2>{escape(fw)} · {escape(wl)}</h2>"]
    diffs = [(metric.replace("_", " "), step_diffs(ra, rb, metric)) for metric in ("loss", "grad_norm")]
    if any(d != 0 for _, ys in diffs for d in ys):
        first = min(
            (
                c.first_diff_step
                for c in comparison.comparisons
                if (c.framework, c.workload) == (fw, wl)
                and c.metric in ("loss", "grad_norm")
                and c.first_diff_step is not None
            ),
            default=None,
        )
        title = "relative difference per step, |a − b| / max(|a|, |b|) (log scale)"
        out.append(rel_chart(title, diffs, comparison.bands, first, steps=comparison.numbering))
    else:
        out.append(f"<p>loss and grad norm bitwise identical at all {len(ra.steps):,} steps.</p>")
    series = [(names[k], [s.loss for s in r.steps]) for k, r in enumerate((ra, rb))]
    out.append(line_chart("loss per step", series, step_label=comparison.numbering.axis))
    out.append(param_section(ra, rb))
    return "\n".join(out)


def _both_ok(a: ProbeReport, b: ProbeReport) -> list[tuple[str, str]]:
    out = []
    for fw in sorted(set(a.frameworks) & set(b.frameworks)):
        wa, wb = a.frameworks[fw].workloads, b.frameworks[fw].workloads
        out += [(fw, wl) for wl in sorted(set(wa) & set(wb)) if wa[wl].ok and wb[wl].ok]
    return out


def render_html(a: ProbeReport, b: ProbeReport, comparison: PairComparison) -> str:
    names = comparison.names
    rows = "".join(
        f"<tr><td>{escape(c.framework)}</td><td>{escape(c.workload)}</td><td>{escape(c.mode)}</td>"
        f'<td>{escape(c.metric)}</td><td style="color:{VERDICT_COLORS[c.verdict]}">{escape(c.verdict)}</td>'
        f"<td>{fmt_rel(c.max_rel_diff)}</td><td>{comparison.numbering.label(c.first_diff_step)}</td>"
        f"<td>{escape(c.detail or '')}</td></tr>"
        for c in comparison.comparisons
    )
    causes = "".join(f"<li>{escape(c.message)}</li>" for c in comparison.causes[:25]) or "<li>none found</li>"
    sections = [
        _workload_section(
            fw, wl, a.frameworks[fw].workloads[wl], b.frameworks[fw].workloads[wl], names, comparison
        )
        for fw, wl in _both_ok(a, b)
    ]
    color = VERDICT_COLORS[comparison.verdict]
    note = comparison.numbering.note()
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>envkit probe: {escape(names[0])} vs {escape(names[1])}</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 6px;font-size:12px}"
        "svg{margin:4px;border:1px solid #eee}</style>"
        "</head><body>"
        f"<h1>{escape(names[0])} vs {escape(names[1])}: "
        f'<span style="color:{color}">{comparison.verdict}</span></h1>'
        f"<p>bands: identical (bitwise) · equivalent ≤ {comparison.bands.equivalent:g} · precision-drift ≤ "
        f"{comparison.bands.drift:g} · diverged beyond · invalid on NaN/Inf. Loss curves: "
        f"{escape(names[0])} solid, {escape(names[1])} dashed. Curves are drawn from a min/max envelope "
        "per pixel column; the verdicts read every step.</p>"
        + (f"<p><b>Note:</b> {escape(note)}.</p>" if note else "")
        + f"<h2>Likely causes</h2><ol>{causes}</ol>"
        "<h2>Comparisons</h2><table><tr><th>framework</th><th>workload</th><th>mode</th><th>metric</th>"
        f"<th>verdict</th><th>max rel diff</th><th>first diff step</th><th>detail</th></tr>{rows}</table>"
        + "\n".join(sections)
        + "</body></html>\n"
    )
