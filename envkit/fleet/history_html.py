"""The history as one HTML page: devices × runs, a coloured cell per run, the verdict per device. Pure.

Worst devices first; a cell's colour is the device's state in that run (majority, explained,
suspect, failed, …) and its title says the run; a blank cell: the device was not in that run.
Self-contained (inline CSS, no script), every text escaped.
"""

from __future__ import annotations

from html import escape

from envkit.fleet.history import FleetHistory

__all__ = ["render_history"]

_CELL = {
    "majority": "ok",
    "alone": "ok",
    "explained": "ex",
    "suspect": "su",
    "failed": "fa",
    "no-majority": "nm",
}
_VERDICT = {"stable": "ok", "explained drift": "ex", "mercurial": "me", "suspect": "su", "failed": "fa"}
_STYLE = """
body{font:13px system-ui,sans-serif;margin:1em}table{border-collapse:collapse}
td,th{padding:1px 4px;white-space:nowrap}td.c{width:9px;height:14px;padding:0;border:1px solid #fff}
.ok{background:#9bd49b}.ex{background:#f3d36b}.su{background:#e8743b}.fa{background:#888}.nm{background:#b5b5e8}
.me{background:#d0213c;color:#fff}th.r{writing-mode:vertical-rl;font-weight:normal;font-size:10px}
"""


def _legend() -> str:
    items = [
        ("ok", "with the majority"),
        ("ex", "explained difference"),
        ("su", "suspect: same setup, other bits"),
        ("fa", "failed"),
        ("nm", "no majority"),
    ]
    return " ".join(f'<span class="{c}">&nbsp;&nbsp;&nbsp;</span> {escape(t)}' for c, t in items)


def render_history(history: FleetHistory) -> str:
    """The page: a summary line, the legend, and the devices × runs table."""
    counts = ", ".join(f"{n} {v}" for v, n in history.counts().items() if n)
    head = "".join(f'<th class="r" title="{escape(r)}">{escape(r[-12:])}</th>' for r in history.runs)
    rows = []
    for d in history.devices:
        state_of = dict(d.states)
        cells = "".join(
            f'<td class="c {_CELL.get(state_of[r], "")}" title="{escape(r)}: {escape(state_of[r])}"></td>'
            if r in state_of
            else '<td class="c"></td>'
            for r in history.runs
        )
        rows.append(
            f'<tr><td class="{_VERDICT[d.verdict]}" title="{escape(d.reason)}">{escape(d.verdict)}</td>'
            f"<td>{escape(d.device)}</td>{cells}</tr>"
        )
    return (
        f"<!doctype html><meta charset=utf-8><title>envkit fleet history</title><style>{_STYLE}</style>"
        f"<h1>Fleet history: {escape(str(history.store))}</h1>"
        f"<p>{len(history.devices)} devices over {len(history.runs)} runs: {escape(counts or 'none')}</p>"
        f"<p>{_legend()}</p><table><tr><th>verdict</th><th>device</th>{head}</tr>{''.join(rows)}</table>\n"
    )
