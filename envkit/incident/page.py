"""``envkit guard show RUN --html OUT``: one self-contained page per run (inline SVG, no script, escaped).

Four curves over the guard's steps (its own numbering, from the first step it saw): the loss, the
global gradient norm before clipping, the learning rate and the update ratio ``lr·|grad|/|weight|``
of each parameter group (log scales where values span decades), every incident drawn as a
numbered vertical line on each, and beside the curves the incidents with their explanation (what
``guard show`` prints). Curves come from a per-pixel min/max envelope
(:func:`envkit.comparison.plots.envelope`), so a one-step spike keeps its height.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from envkit.comparison.plots import COLORS, MAX_BUCKETS
from envkit.errors import ReportError
from envkit.incident.rows import ReadStats, StepRow, jsonl_rows, step_row

__all__ = ["Curves", "read_steps", "render_page"]

MAX_STEPS_BYTES = 1 << 30
MAX_GROUPS = 16  # parameter groups drawn per chart
W, H, LEFT, RIGHT, TOP, BOTTOM = 760, 230, 64, 110, 24, 30
PW, PH = W - LEFT - RIGHT, H - TOP - BOTTOM
INCIDENT = "#d62728"
SERIES = tuple(c for c in COLORS if c != INCIDENT)  # the incidents' red is theirs only


class StreamEnvelope:
    """:func:`envkit.comparison.plots.envelope` built one value at a time, in bounded memory.

    Values are bucketed by their row's position; when there are more than ``2 × MAX_BUCKETS``
    buckets, neighbours merge (each bucket then spans twice as many rows). Each bucket keeps its
    smallest and largest finite value and the step of its first NaN/Inf, so a one-step spike keeps its
    height however long the run. A series of at most ``2 × MAX_BUCKETS`` rows is kept whole.
    """

    def __init__(self) -> None:
        self.width = 1
        self.buckets: dict[int, list[Any]] = {}  # key -> [low (step, v) | None, high | None, bad step | None]

    def add(self, position: int, step: int, value: float) -> None:
        bucket = self.buckets.setdefault(position // self.width, [None, None, None])
        _merge(bucket, [(step, value), (step, value), None] if math.isfinite(value) else [None, None, step])
        if len(self.buckets) > 2 * MAX_BUCKETS:
            self.width *= 2
            merged: dict[int, list[Any]] = {}
            for key in sorted(self.buckets):
                _merge(merged.setdefault(key // 2, [None, None, None]), self.buckets[key])
            self.buckets = merged

    def points(self) -> list[tuple[int, float]]:
        out: list[tuple[int, float]] = []
        for key in sorted(self.buckets):
            low, high, _ = self.buckets[key]
            if low is not None:
                out += [low] if low == high else sorted({low, high})
        return out

    def nonfinite(self) -> list[int]:
        return [b[2] for _, b in sorted(self.buckets.items()) if b[2] is not None]


def _merge(into: list[Any], other: list[Any]) -> None:
    low, high, bad = other
    if low is not None and (into[0] is None or low[1] < into[0][1]):
        into[0] = low
    if high is not None and (into[1] is None or high[1] > into[1][1]):
        into[1] = high
    if bad is not None and into[2] is None:
        into[2] = bad


@dataclass
class Curves:
    """What the page draws of ``steps.jsonl``: a bounded envelope per series, the step range, the count."""

    rows: int = 0
    first: int | None = None
    last: int | None = None
    series: dict[str, StreamEnvelope] = field(default_factory=dict)
    groups: dict[str, int] = field(default_factory=dict)  # "lrs"/"update_ratios" -> groups drawn
    torn: int = 0

    def add(self, row: StepRow) -> None:
        pos, step = self.rows, row.step
        self.rows += 1
        self.first = step if self.first is None else min(self.first, step)
        self.last = step if self.last is None else max(self.last, step)
        self._put("loss", pos, step, row.loss, log=False)
        self._put("grad norm", pos, step, row.grad_norm, log=True)
        if row.lr is not None and not row.lrs:
            self._put("lr", pos, step, row.lr, log=True)
        for key, values in (("lrs", row.lrs), ("update_ratios", row.update_ratios)):
            self.groups[key] = max(self.groups.get(key, 0), min(len(values), MAX_GROUPS))
            for g, v in enumerate(values[:MAX_GROUPS]):
                self._put(f"{key} {g}", pos, step, v, log=True)

    def _put(self, name: str, pos: int, step: int, value: float, *, log: bool) -> None:
        usable = value if math.isfinite(value) and (value > 0 or not log) else math.nan
        self.series.setdefault(name, StreamEnvelope()).add(pos, step, usable)


def read_steps(run: Path) -> Curves:
    """RUN/steps.jsonl streamed into :class:`Curves` (a regular file, never a FIFO or link; every
    field checked, naming file:line; memory bounded by the page's width, not by the run's length)."""
    path = run / "steps.jsonl"
    curves, seen = Curves(), ReadStats()
    try:
        for where, value in jsonl_rows(path, MAX_STEPS_BYTES, seen):
            curves.add(step_row(value, where))
    except FileNotFoundError as e:
        raise ReportError(f"{path}: cannot read the steps: no such file", hint="is RUN a guarded run?") from e
    curves.torn = len(seen.torn)
    return curves


def _mark(number: int, xx: float) -> str:
    """Incident ``number``'s dashed line at ``xx`` on a chart."""
    return (
        f'<line x1="{xx:.1f}" y1="{TOP}" x2="{xx:.1f}" y2="{TOP + PH}" stroke="{INCIDENT}" '
        f'stroke-dasharray="3,2"/><text x="{xx + 2:.1f}" y="{TOP + 10}" font-size="10" '
        f'fill="{INCIDENT}">#{number}</text>'
    )


def _chart(
    title: str,
    curves: Curves,
    series: Sequence[tuple[str, str]],
    marks: Sequence[tuple[int, int]],
    *,
    log: bool,
) -> str:
    """A y-over-step chart of ``series`` (label, name in ``curves``); ``marks``: (incident number, step)."""
    envs = [(label, curves.series[name]) for label, name in series if name in curves.series]
    finite = [v for _, e in envs for _, v in e.points()]
    parts = [
        f'<svg width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img"><title>{escape(title)}</title>',
        f'<text x="{LEFT}" y="15" font-size="13">{escape(title)}</text>',
        f'<rect x="{LEFT}" y="{TOP}" width="{PW}" height="{PH}" fill="none" stroke="#999"/>',
    ]
    if not finite or curves.first is None or curves.last is None:
        parts.append(f'<text x="{LEFT + 8}" y="{TOP + 20}" font-size="11">not recorded</text></svg>')
        return "".join(parts)
    lo, hi = min(finite), max(finite)
    fy = math.log10 if log else float
    a, b = fy(lo), fy(hi)
    if b / 2 - a / 2 < 1e-12:
        a, b = a - 0.5, b + 0.5

    def y(v: float) -> float:  # halves: no overflow for values near ±1.8e308
        return TOP + PH * (b / 2 - fy(v) / 2) / (b / 2 - a / 2)

    first, last = curves.first, curves.last

    def x(step: float) -> float:
        return LEFT + PW * (step - first) / max(last - first, 1)

    def label(v: float) -> str:
        return f"{v:.2g}" if log else f"{v:.3g}"

    parts += [
        f'<text x="{LEFT - 4}" y="{TOP + 9}" text-anchor="end" font-size="9">{label(hi)}</text>',
        f'<text x="{LEFT - 4}" y="{TOP + PH}" text-anchor="end" font-size="9">{label(lo)}</text>',
        f'<text x="{LEFT}" y="{TOP + PH + 14}" font-size="10">step {first}</text>',
        f'<text x="{LEFT + PW}" y="{TOP + PH + 14}" text-anchor="end" font-size="10">step {last}</text>',
    ]
    if log:
        parts.append(f'<text x="{LEFT + PW}" y="15" text-anchor="end" font-size="9">log scale</text>')
    parts += [_mark(number, x(step)) for number, step in marks if first <= step <= last]
    for k, (name, env) in enumerate(envs):
        color = SERIES[k % len(SERIES)]
        pts = " ".join(f"{x(step):.1f},{y(v):.1f}" for step, v in env.points())
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.3" points="{pts}"/>')
        parts += [
            f'<text x="{x(step):.1f}" y="{TOP + PH - 4}" font-size="9" fill="{INCIDENT}" '
            f'text-anchor="middle">NaN</text>'
            for step in env.nonfinite()[:50]
        ]
        parts.append(
            f'<text x="{LEFT + PW + 8}" y="{TOP + 12 + 14 * k}" font-size="11" fill="{color}">'
            f"{escape(name)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def render_page(summary: dict[str, Any], curves: Curves, explain: Any) -> str:
    """The page: ``summary`` from :func:`envkit.incident.show.load_run`, ``explain(incident)`` its lines."""
    incidents = [i for i in summary["incidents"] if isinstance(i.get("step"), int)]
    marks = [(n, int(i["step"])) for n, i in enumerate(incidents, 1)]
    lrs, ratios = curves.groups.get("lrs", 0), curves.groups.get("update_ratios", 0)
    lr_series = [(f"group {g}", f"lrs {g}") for g in range(lrs)] if lrs else [("lr", "lr")]
    charts = [
        _chart("loss", curves, [("loss", "loss")], marks, log=False),
        _chart("gradient norm (before clipping)", curves, [("grad norm", "grad norm")], marks, log=True),
        _chart("learning rate", curves, lr_series, marks, log=True),
        _chart(
            "update ratio lr·|grad|/|weight|",
            curves,
            [(f"group {g}", f"update_ratios {g}") for g in range(ratios)],
            marks,
            log=True,
        ),
    ]
    items = []
    for n, inc in enumerate(incidents, 1):
        lines = "".join(f"<li>{escape(line.strip())}</li>" for line in explain(inc))
        items.append(
            f'<div class="inc"><h3><span style="color:{INCIDENT}">#{n}</span> step {inc["step"]}: '
            f"{escape(str(inc.get('kind')))} ({escape(str(inc.get('action')))})</h3>"
            f"<p>{escape(str(inc.get('message')))}</p><ul>{lines}</ul></div>"
        )
    run = str(summary["run"])
    head = (
        f"{summary['steps']} steps, {summary['skipped']} skipped, {summary['overflows']} loss-scale "
        f"overflows, {summary['clipped_steps']} clipped, {len(incidents)} incidents"
        + (
            ""
            if summary.get("closed", True)
            else "; the run did not close (read from what it wrote while running)"
        )
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>envkit guard: {escape(run)}</title>"
        "<style>body{font-family:sans-serif;margin:1.5em}.wrap{display:flex;gap:1.5em;align-items:"
        "flex-start}.inc{border-left:3px solid #d62728;padding:0 .8em;margin-bottom:1em}"
        ".inc h3{margin:.2em 0;font-size:15px}.inc p,.inc li{font-size:13px}"
        "svg{display:block;margin-bottom:6px;border:1px solid #eee}</style></head><body>"
        f"<h1>envkit guard: {escape(run)}</h1><p>{escape(head)}. Incidents are the numbered red lines; "
        "curves are drawn from a min/max envelope per pixel column.</p>"
        f'<div class="wrap"><div>{"".join(charts)}</div><div><h2>Incidents</h2>'
        f"{''.join(items) or '<p>none</p>'}</div></div></body></html>\n"
    )
