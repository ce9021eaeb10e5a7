"""``envkit guard show RUN --html OUT``: one self-contained page per run (inline SVG, no script, escaped).

Four curves over the guard's steps (its own numbering, from the first step it saw): the loss, the
global gradient norm before clipping, the learning rate and the update ratio ``lr·|grad|/|weight|``
of each parameter group (log scales where values span decades), every incident drawn as a
numbered vertical line on each, and beside the curves the incidents with their explanation (what
``guard show`` prints). Curves come from a per-pixel min/max envelope
(:func:`envkit.comparison.plots.envelope`), so a one-step spike keeps its height.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

from envkit._io import read_text_bounded
from envkit.comparison.plots import COLORS, envelope
from envkit.errors import ReportError
from envkit.guard.records import read_float

__all__ = ["read_steps", "render_page"]

MAX_STEPS_BYTES = 1 << 30
W, H, LEFT, RIGHT, TOP, BOTTOM = 760, 230, 64, 110, 24, 30
PW, PH = W - LEFT - RIGHT, H - TOP - BOTTOM
INCIDENT = "#d62728"
SERIES = tuple(c for c in COLORS if c != INCIDENT)  # the incidents' red is theirs only


def read_steps(run: Path) -> list[dict[str, Any]]:
    """RUN/steps.jsonl (what the flight recorder wrote, whole at close, appended while running)."""
    path = run / "steps.jsonl"
    try:
        text = read_text_bounded(path, MAX_STEPS_BYTES)
    except OSError as e:
        raise ReportError(
            f"{path}: cannot read the steps: {e.strerror or e}", hint="is RUN a guarded run?"
        ) from e
    steps = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as e:
            if n == len(text.splitlines()):
                break  # the last line of a run that was killed mid-write
            raise ReportError(f"{path}:{n}: not JSON", hint="the file was edited") from e
        if isinstance(row, dict) and isinstance(row.get("step"), int):
            steps.append(row)
    return steps


def _value(row: dict[str, Any], key: str, index: int | None = None) -> float:
    raw = row.get(key)
    if index is not None:
        raw = raw[index] if isinstance(raw, list) and index < len(raw) else None
    try:
        return math.nan if raw is None else read_float(raw)
    except (TypeError, ValueError):
        return math.nan


def _chart(
    title: str,
    xs: Sequence[int],
    series: Sequence[tuple[str, Sequence[float]]],
    marks: Sequence[tuple[int, int]],
    *,
    log: bool,
) -> str:
    """A y-over-step chart; ``marks`` are (incident number, step): numbered vertical lines."""
    usable = [[v if math.isfinite(v) and (v > 0 or not log) else math.nan for v in ys] for _, ys in series]
    envs = [envelope(ys) for ys in usable]
    finite = [v for e in envs for _, v in e.points]
    parts = [
        f'<svg width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img"><title>{escape(title)}</title>',
        f'<text x="{LEFT}" y="15" font-size="13">{escape(title)}</text>',
        f'<rect x="{LEFT}" y="{TOP}" width="{PW}" height="{PH}" fill="none" stroke="#999"/>',
    ]
    if not finite or not xs:
        parts.append(f'<text x="{LEFT + 8}" y="{TOP + 20}" font-size="11">not recorded</text></svg>')
        return "".join(parts)
    lo, hi = min(finite), max(finite)
    fy = math.log10 if log else float
    a, b = fy(lo), fy(hi)
    if b - a < 1e-12:
        a, b = a - 0.5, b + 0.5

    def y(v: float) -> float:
        return TOP + PH * (b - fy(v)) / (b - a)

    first, last = xs[0], xs[-1]

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
    for number, step in marks:
        xx = x(step)
        parts.append(
            f'<line x1="{xx:.1f}" y1="{TOP}" x2="{xx:.1f}" y2="{TOP + PH}" stroke="{INCIDENT}" '
            f'stroke-dasharray="3,2"/><text x="{xx + 2:.1f}" y="{TOP + 10}" font-size="10" '
            f'fill="{INCIDENT}">#{number}</text>'
        )
    for k, ((name, _), env) in enumerate(zip(series, envs, strict=True)):
        color = SERIES[k % len(SERIES)]
        pts = " ".join(f"{x(xs[i]):.1f},{y(v):.1f}" for i, v in env.points)
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.3" points="{pts}"/>')
        parts += [
            f'<text x="{x(xs[i]):.1f}" y="{TOP + PH - 4}" font-size="9" fill="{INCIDENT}" '
            f'text-anchor="middle">NaN</text>'
            for i in env.nonfinite[:50]
        ]
        parts.append(
            f'<text x="{LEFT + PW + 8}" y="{TOP + 12 + 14 * k}" font-size="11" fill="{color}">'
            f"{escape(name)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _groups(steps: Sequence[dict[str, Any]], key: str) -> int:
    return max((len(s[key]) for s in steps if isinstance(s.get(key), list)), default=0)


def render_page(summary: dict[str, Any], steps: Sequence[dict[str, Any]], explain: Any) -> str:
    """The page: ``summary`` from :func:`envkit.incident.show.load_run`, ``explain(incident)`` its lines."""
    xs = [int(s["step"]) for s in steps]
    incidents = [i for i in summary["incidents"] if isinstance(i.get("step"), int)]
    marks = [(n, int(i["step"])) for n, i in enumerate(incidents, 1)]
    lrs = _groups(steps, "lrs")
    ratios = _groups(steps, "update_ratios")
    lr_series = (
        [(f"group {g}", [_value(s, "lrs", g) for s in steps]) for g in range(lrs)]
        if lrs
        else [("lr", [_value(s, "lr") for s in steps])]
    )
    charts = [
        _chart("loss", xs, [("loss", [_value(s, "loss") for s in steps])], marks, log=False),
        _chart(
            "gradient norm (before clipping)",
            xs,
            [("grad norm", [_value(s, "grad_norm") for s in steps])],
            marks,
            log=True,
        ),
        _chart("learning rate", xs, lr_series, marks, log=True),
        _chart(
            "update ratio lr·|grad|/|weight|",
            xs,
            [(f"group {g}", [_value(s, "update_ratios", g) for s in steps]) for g in range(ratios)],
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
