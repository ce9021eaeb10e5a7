"""``envkit fleet history STORE``: every fleet run in the store, per device, and a verdict per device."""

from __future__ import annotations

from pathlib import Path

import click

from envkit.cli import cli
from envkit.cli._app import command
from envkit.errors import ExitCode
from envkit.result import CommandResult

__all__ = ["history_text"]


@cli.group("fleet")
def fleet() -> None:
    """The fleet's numerical history: which device is mercurial, which drifts for a known reason.

    See docs/guides/fleet.md. Subcommands take --json (the versioned envelope).
    """


@command(fleet, "history")
@click.argument("store", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option(
    "--html",
    "html_out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the timeline here.",
)
@click.option("--last", type=click.IntRange(1), help="Only the last N runs (by time).")
def history(store: Path, html_out: Path | None, last: int | None) -> CommandResult:
    """Per device (node + GPU UUID, or node + host id on a CPU): runs seen, its state in each run, first
    and last suspect, and a verdict: stable, explained drift, mercurial, suspect or failed (exit 1: any
    of the last three). Each node's verdict is also written to STORE/.health/NODE.json for `envkit health`."""
    from envkit.fleet.history import read_history, write_health

    result = read_history(store.resolve(), last=last)
    write_health(result)
    data = result.to_json()
    if html_out is not None:
        from envkit._atomic import write_text_atomic
        from envkit.fleet.history_html import render_history

        write_text_atomic(html_out, render_history(result))
        data["html"] = str(html_out)
    code = ExitCode.OK if result.ok else ExitCode.FINDINGS
    return CommandResult("fleet history", data, lambda: history_text(data), exit_code=code)


def history_text(data: dict[str, object]) -> str:
    devices = data["devices"]
    assert isinstance(devices, list)
    runs = data["runs"]
    assert isinstance(runs, list)
    counts = data["counts"]
    assert isinstance(counts, dict)
    summary = ", ".join(f"{n} {v}" for v, n in counts.items() if n) or "no devices"
    lines = [f"{len(devices)} device(s) over {len(runs)} run(s): {summary}"]
    width = max((len(str(d["device"])) for d in devices), default=6) + 2
    for d in devices:
        marks = "".join(_MARK.get(str(s["state"]), "?") for s in d["states"])
        lines.append(f"  {d['verdict']:<16}{d['device']:<{width}}{marks}  {d['reason']}")
        if d["first_suspect"]:
            lines.append(
                f"  {'':<16}{'':<{width}}suspect first in {d['first_suspect']}, last in {d['last_suspect']}"
            )
    skipped = data["skipped"] if isinstance(data["skipped"], list) else []
    lines.extend(f"  skipped run {s['run']}: {s['error']}" for s in skipped)
    lines.append("runs: . majority  e explained  S suspect  F failed  = no majority  o alone")
    if "html" in data:
        lines.append(f"timeline: {data['html']}")
    return "\n".join(lines)


_MARK = {"majority": ".", "explained": "e", "suspect": "S", "failed": "F", "no-majority": "=", "alone": "o"}
