"""Inline SVG plots for the comparison pages, downsampled for drawing only. Pure.

A run of 100k steps has 100k points per curve, and a page needs about two per pixel column.
:func:`envelope` cuts a series into one bucket of consecutive steps per pixel column and keeps, in
step order, each bucket's smallest and largest finite value (a min/max envelope), so a spike of one
step is still drawn at its full height; a bucket that holds a NaN/Inf keeps the step of its first
one, drawn as a marker. The verdicts (:mod:`envkit.comparison.pairwise`) read every step: these
plots are a view of them, never an input.

:func:`log_chart` draws relative differences on a log scale with the band edges as horizontal
lines and marked steps (the onset window, the first difference) as vertical ones; a difference of
exactly 0 sits on the bottom line. :func:`line_chart` draws values on a linear scale. Every text
is escaped; no script, nothing fetched.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

__all__ = ["COLORS", "MAX_BUCKETS", "Envelope", "LogScale", "envelope", "line_chart", "log_chart"]

W, H = 720, 250
LEFT, RIGHT, TOP, BOTTOM = 56, 150, 26, 30  # the plot box's margins; the right one holds the labels
PLOT_W, PLOT_H = W - LEFT - RIGHT, H - TOP - BOTTOM
MAX_BUCKETS = PLOT_W  # one bucket per pixel column: at most 2 × 514 points per series
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
MAX_NONFINITE_MARKS = 50
LOWEST_DECADE = -20


@dataclass(frozen=True)
class Envelope:
    """What is drawn of a series: ``(index, value)`` points in index order and the NaN/Inf indices."""

    n: int  # the series' length (the x axis spans all of it)
    points: tuple[tuple[int, float], ...]
    nonfinite: tuple[int, ...]


def envelope(values: Sequence[float], buckets: int = MAX_BUCKETS) -> Envelope:
    """Each bucket's min and max finite value (in index order) and its first non-finite index.

    A series of at most ``2 × buckets`` values is kept whole.
    """
    n = len(values)
    if n <= 2 * buckets:
        pts = tuple((i, v) for i, v in enumerate(values) if math.isfinite(v))
        return Envelope(n, pts, tuple(i for i, v in enumerate(values) if not math.isfinite(v)))
    points: list[tuple[int, float]] = []
    bad: list[int] = []
    for b in range(buckets):
        lo, hi = b * n // buckets, (b + 1) * n // buckets
        finite = [i for i in range(lo, hi) if math.isfinite(values[i])]
        if len(finite) < hi - lo:
            bad.append(next(i for i in range(lo, hi) if not math.isfinite(values[i])))
        if finite:
            low = min(finite, key=values.__getitem__)
            high = max(finite, key=values.__getitem__)
            points += (
                [(low, values[low])] if low == high else sorted({(low, values[low]), (high, values[high])})
            )
    return Envelope(n, tuple(points), tuple(bad))


def _x(i: int, n: int) -> float:
    return LEFT + PLOT_W * (i / max(n - 1, 1))


@dataclass(frozen=True)
class LogScale:
    """The y axis of :func:`log_chart`: decades ``low`` … ``high`` (powers of ten); 0 on the bottom line."""

    low: int
    high: int

    @classmethod
    def fit(cls, values: Sequence[float], edges: Sequence[float]) -> LogScale:
        positive = [v for v in values if v > 0 and math.isfinite(v)]
        marks = [e for e in edges if e > 0] + positive
        low = math.floor(math.log10(min(marks))) - 1 if marks else -12
        high = max(0, math.ceil(math.log10(max(marks)))) if marks else 0
        return cls(max(low, LOWEST_DECADE), high)

    def y(self, value: float) -> float:
        """The pixel row of ``value`` (clamped into the axis; 0 and below on the bottom line)."""
        if value <= 0:
            return float(TOP + PLOT_H)
        exp = min(max(math.log10(value), self.low), self.high)
        return TOP + PLOT_H * (self.high - exp) / (self.high - self.low)


def _frame(title: str) -> list[str]:
    return [
        f'<svg width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img"><title>{escape(title)}</title>',
        f'<text x="{LEFT}" y="16" font-size="13">{escape(title)}</text>',
        f'<rect x="{LEFT}" y="{TOP}" width="{PLOT_W}" height="{PLOT_H}" fill="none" stroke="#999"/>',
    ]


def _position(step: int) -> str:
    return f"{step:,}"


StepLabel = Callable[[int], str]  # a position (1-based) as the text of its step


def _x_axis(n: int, label: StepLabel) -> list[str]:
    base = TOP + PLOT_H + 14
    first, last = escape(label(1)), escape(label(n))
    return [
        f'<text x="{LEFT}" y="{base}" font-size="10">step {first}</text>',
        f'<text x="{LEFT + PLOT_W}" y="{base}" text-anchor="end" font-size="10">step {last}</text>',
    ]


def _polyline(env: Envelope, y: Callable[[float], float], color: str, dash: bool) -> str:
    pts = " ".join(f"{_x(i, env.n):.1f},{y(v):.1f}" for i, v in env.points)
    style = ' stroke-dasharray="5,3"' if dash else ""
    return f'<polyline fill="none" stroke="{color}" stroke-width="1.5"{style} points="{pts}"/>'


def _nonfinite(env: Envelope, k: int, color: str) -> list[str]:
    out = [
        f'<text x="{_x(i, env.n):.1f}" y="{TOP + 10 + 10 * k}" fill="{color}" font-size="9" '
        f'text-anchor="middle">NaN</text>'
        for i in env.nonfinite[:MAX_NONFINITE_MARKS]
    ]
    if len(env.nonfinite) > MAX_NONFINITE_MARKS:
        out.append(
            f'<text x="{LEFT + PLOT_W}" y="{TOP + 10 + 10 * k}" text-anchor="end" fill="{color}" '
            f'font-size="9">+{len(env.nonfinite) - MAX_NONFINITE_MARKS} more NaN/Inf columns</text>'
        )
    return out


def _legend(k: int, name: str, color: str) -> str:
    return (
        f'<text x="{LEFT + PLOT_W + 8}" y="{TOP + 10 + 14 * k}" font-size="11" fill="{color}">'
        f"{escape(name)}</text>"
    )


def log_chart(
    title: str,
    series: Sequence[tuple[str, Sequence[float]]],
    *,
    edges: Sequence[tuple[str, float]] = (),
    marks: Sequence[tuple[str, int]] = (),
    colors: Sequence[str] = COLORS,
    step_label: StepLabel = _position,
) -> str:
    """Relative differences per step (index 0 is step 1) on a log scale, edges and marked steps as lines.

    ``step_label`` writes a position's step on the axis (the runs' own numbers:
    :mod:`envkit.comparison.numbering`).
    """
    envs = [envelope(ys) for _, ys in series]
    scale = LogScale.fit([v for e in envs for _, v in e.points], [v for _, v in edges])
    n = max((e.n for e in envs), default=1)
    parts = _frame(title)
    for exp in range(scale.low, scale.high + 1, 1 if scale.high - scale.low <= 10 else 2):
        yy = scale.y(10.0**exp)
        parts.append(
            f'<line x1="{LEFT}" y1="{yy:.1f}" x2="{LEFT + PLOT_W}" y2="{yy:.1f}" stroke="#eee"/>'
            f'<text x="{LEFT - 4}" y="{yy + 3:.1f}" text-anchor="end" font-size="9">1e{exp}</text>'
        )
    parts.append(
        f'<text x="{LEFT - 4}" y="{TOP + PLOT_H + 12}" text-anchor="end" font-size="9">0 (bitwise)</text>'
    )
    for label, value in edges:
        yy = scale.y(value)
        parts.append(
            f'<line x1="{LEFT}" y1="{yy:.1f}" x2="{LEFT + PLOT_W}" y2="{yy:.1f}" stroke="#555" '
            f'stroke-dasharray="2,2"/><text x="{LEFT + PLOT_W + 4}" y="{yy + 3:.1f}" font-size="9" '
            f'fill="#555">{escape(label)}</text>'
        )
    for label, step in marks:
        xx = _x(step - 1, n)
        parts.append(
            f'<line x1="{xx:.1f}" y1="{TOP}" x2="{xx:.1f}" y2="{TOP + PLOT_H}" stroke="#888" '
            f'stroke-dasharray="4,2"/><text x="{xx + 2:.1f}" y="{TOP + PLOT_H - 4}" font-size="9" '
            f'fill="#666">{escape(label)}</text>'
        )
    parts += _x_axis(n, step_label)
    for k, ((name, _), env) in enumerate(zip(series, envs, strict=True)):
        color = colors[k % len(colors)]
        parts.append(_polyline(env, scale.y, color, False))
        parts += _nonfinite(env, k, color)
        parts.append(_legend(k + len(edges), name, color))
    parts.append("</svg>")
    return "".join(parts)


def line_chart(
    title: str,
    series: Sequence[tuple[str, Sequence[float]]],
    colors: Sequence[str] = COLORS,
    step_label: StepLabel = _position,
) -> str:
    """Values per step on a linear scale, one polyline per series (the first solid, the others dashed)."""
    envs = [envelope(ys) for _, ys in series]
    finite = [v for e in envs for _, v in e.points]
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
    if hi == lo:
        hi, lo = hi + 0.5 * (abs(hi) or 1), lo - 0.5 * (abs(lo) or 1)

    def y(v: float) -> float:
        return TOP + PLOT_H * (hi - v) / (hi - lo)

    n = max((e.n for e in envs), default=1)
    parts = [
        *_frame(title),
        f'<text x="{LEFT - 4}" y="{TOP + 8}" text-anchor="end" font-size="9">{hi:.4g}</text>',
        f'<text x="{LEFT - 4}" y="{TOP + PLOT_H}" text-anchor="end" font-size="9">{lo:.4g}</text>',
        *_x_axis(n, step_label),
    ]
    for k, ((name, _), env) in enumerate(zip(series, envs, strict=True)):
        color = colors[k % len(colors)]
        parts.append(_polyline(env, y, color, k > 0))
        parts += _nonfinite(env, k, color)
        parts.append(_legend(k, name, color))
    parts.append("</svg>")
    return "".join(parts)
