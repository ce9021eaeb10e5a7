"""A self-contained HTML page for a comparison: inline SVG plots, no scripts, nothing fetched.

Per framework × workload: loss and global grad norm per step for both sides, and the relative
difference of each parameter's grad norm (first and last step) and final norm, on a log scale.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import Any

from envkit.comparison.pairwise import Comparison, fmt_rel
from envkit.probe.model import ProbeReport, WorkloadRun

__all__ = ["VERDICT_COLORS", "line_chart", "render_html"]

W, H, PAD = 520, 220, 44
COLORS = ("#1f77b4", "#d62728")
VERDICT_COLORS = {
    "identical": "#2ca02c",
    "equivalent": "#7cb342",
    "precision-drift": "#ff9800",
    "diverged": "#d62728",
    "invalid": "#6a1b9a",
}


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def line_chart(
    title: str, series: Sequence[tuple[str, Sequence[float]]], colors: Sequence[str] = COLORS
) -> str:
    """An SVG line chart, one polyline per series (the first solid, the others dashed)."""
    finite = [v for _, ys in series for v in ys if math.isfinite(v)]
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
    if hi == lo:
        hi, lo = hi + 0.5 * (abs(hi) or 1), lo - 0.5 * (abs(lo) or 1)
    n = max((len(ys) for _, ys in series), default=1)

    def x(i: int) -> float:
        return PAD + (W - 2 * PAD) * (i / max(n - 1, 1))

    def y(v: float) -> float:
        return H - PAD + (PAD * 2 - H) * (v - lo) / (hi - lo)

    parts = [
        f'<svg width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img"><title>{escape(title)}</title>',
        f'<text x="{W / 2}" y="16" text-anchor="middle" font-size="13">{escape(title)}</text>',
        f'<line x1="{PAD}" y1="{H - PAD}" x2="{W - PAD}" y2="{H - PAD}" stroke="#999"/>',
        f'<line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{H - PAD}" stroke="#999"/>',
        f'<text x="{PAD - 4}" y="{PAD + 4}" text-anchor="end" font-size="10">{hi:.4g}</text>',
        f'<text x="{PAD - 4}" y="{H - PAD}" text-anchor="end" font-size="10">{lo:.4g}</text>',
        f'<text x="{W - PAD}" y="{H - PAD + 14}" text-anchor="end" font-size="10">step {n}</text>',
    ]
    for k, (name, ys) in enumerate(series):
        color = colors[k % len(colors)]
        pts = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(ys) if math.isfinite(v))
        dash = ' stroke-dasharray="5,3"' if k else ""
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2"{dash} points="{pts}"/>')
        for i, v in enumerate(ys):
            if not math.isfinite(v):
                parts.append(
                    f'<text x="{x(i):.1f}" y="{PAD + 12 * (k + 1)}" fill="{color}" '
                    f'font-size="10" text-anchor="middle">NaN</text>'
                )
        parts.append(
            f'<text x="{W - PAD}" y="{PAD + 14 * k}" text-anchor="end" font-size="11" '
            f'fill="{color}">{escape(name)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _bar_chart(title: str, bars: Sequence[tuple[str, float]]) -> str:
    """Horizontal bars of relative differences on a log scale (1e-9 … 1); zero is drawn as 'identical'."""
    row = 14
    height = PAD + row * len(bars) + 10
    label_w = 230
    span = W + 120 - label_w - 20
    parts = [
        f'<svg width="{W + 120}" height="{height}" role="img"><title>{escape(title)}</title>',
        f'<text x="4" y="16" font-size="13">{escape(title)}</text>',
    ]
    for i, (name, value) in enumerate(bars):
        yy = PAD + i * row
        parts.append(
            f'<text x="{label_w - 6}" y="{yy + 10}" text-anchor="end" font-size="10">{escape(name)}</text>'
        )
        if value > 0 and math.isfinite(value):
            frac = min(max((math.log10(value) + 9) / 9, 0.01), 1.0)
            parts.append(
                f'<rect x="{label_w}" y="{yy + 1}" width="{span * frac:.1f}" '
                f'height="{row - 3}" fill="#ff9800"/>'
            )
        parts.append(
            f'<text x="{label_w + 4 + (span * frac if value > 0 and math.isfinite(value) else 0):.1f}" '
            f'y="{yy + 10}" font-size="10">{escape(fmt_rel(value) if value else "identical")}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _rel(a: Any, b: Any) -> float:
    x, y = _num(a), _num(b)
    if x == y:
        return 0.0
    scale = max(abs(x), abs(y))
    return abs(x - y) / scale if scale and math.isfinite(scale) else math.nan


def _workload_section(fw: str, wl: str, ra: WorkloadRun, rb: WorkloadRun, names: tuple[str, str]) -> str:
    out = [f"<h2>{escape(fw)} · {escape(wl)}</h2>"]
    for metric in ("loss", "grad_norm"):
        series = [(names[k], [float(getattr(s, metric)) for s in r.steps]) for k, r in enumerate((ra, rb))]
        out.append(line_chart(f"{metric.replace('_', ' ')} per step", series))
    bars = []
    for which in ("first", "last"):
        ga, gb = ra.grad_norms(which), rb.grad_norms(which)
        bars += [(f"grad {which}: {p}", _rel(ga[p], gb[p])) for p in ga if p in gb]
    fa, fb = ra.final_param_norms, rb.final_param_norms
    bars += [(f"final: {p}", _rel(fa[p], fb[p])) for p in fa if p in fb]
    out.append(_bar_chart("per-parameter relative difference (log scale, 1e-9 … 1)", bars))
    return "\n".join(out)


def _both_ok(a: ProbeReport, b: ProbeReport) -> list[tuple[str, str]]:
    out = []
    for fw in sorted(set(a.frameworks) & set(b.frameworks)):
        wa, wb = a.frameworks[fw].workloads, b.frameworks[fw].workloads
        out += [(fw, wl) for wl in sorted(set(wa) & set(wb)) if wa[wl].ok and wb[wl].ok]
    return out


def render_html(a: ProbeReport, b: ProbeReport, comparison: Comparison) -> str:
    names = comparison.names
    rows = "".join(
        f"<tr><td>{escape(c.framework)}</td><td>{escape(c.workload)}</td><td>{escape(c.mode)}</td>"
        f'<td>{escape(c.metric)}</td><td style="color:{VERDICT_COLORS[c.verdict]}">{escape(c.verdict)}</td>'
        f"<td>{fmt_rel(c.max_rel_diff)}</td><td>{c.first_diff_step or '-'}</td>"
        f"<td>{escape(c.detail or '')}</td></tr>"
        for c in comparison.comparisons
    )
    causes = "".join(f"<li>{escape(c.message)}</li>" for c in comparison.causes[:25]) or "<li>none found</li>"
    sections = [
        _workload_section(fw, wl, a.frameworks[fw].workloads[wl], b.frameworks[fw].workloads[wl], names)
        for fw, wl in _both_ok(a, b)
    ]
    color = VERDICT_COLORS[comparison.verdict]
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
        f"{comparison.bands.drift:g} · diverged beyond · invalid on NaN/Inf. Solid line: {escape(names[0])}, "
        f"dashed: {escape(names[1])}.</p>"
        f"<h2>Likely causes</h2><ol>{causes}</ol>"
        "<h2>Comparisons</h2><table><tr><th>framework</th><th>workload</th><th>mode</th><th>metric</th>"
        f"<th>verdict</th><th>max rel diff</th><th>first diff step</th><th>detail</th></tr>{rows}</table>"
        + "\n".join(sections)
        + "</body></html>\n"
    )
