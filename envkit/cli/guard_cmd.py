"""``envkit guard show RUN`` and ``envkit guard replay DUMP``: read what envkit.guard recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from envkit.cli import cli
from envkit.cli._app import command, services
from envkit.errors import ExitCode
from envkit.result import CommandResult


@cli.group("guard")
def guard() -> None:
    """Show what envkit.guard recorded in a training run; replay an incident's step from its dump.

    Both subcommands take --json (the versioned envelope). See docs/guard.md.
    """


@command(guard, "show")
@click.argument("run", type=click.Path(path_type=Path))
def show(run: Path) -> CommandResult:
    """Steps, skips and why, incidents and their localization, spikes, clipping (exit 1: an incident)."""
    from envkit.guard.show import load_run, render_run

    summary = load_run(run)
    code = ExitCode.FINDINGS if summary["incidents"] else ExitCode.OK
    return CommandResult("guard show", summary, lambda: render_run(summary), exit_code=code)


@command(guard, "replay")
@click.argument("dump", type=click.Path(path_type=Path))
@click.option("--entry", help="module:function returning (model, optimizer, loss_fn).")
@click.option("--image", help="Replay inside this image (no network, read-only mounts, its user).")
def replay(dump: Path, entry: str | None, image: str | None) -> CommandResult:
    """Run an incident's step again here: reproducible, transient or environment (with the causes)."""
    from envkit.guard.replay import load_entry, replay_dump, suggest_entry
    from envkit.guard.show import render_replay

    if entry is None:
        raise suggest_entry(dump)
    if image is not None:
        from envkit.guard.image_replay import replay_in_image

        result = replay_in_image(services().engine(), image, dump, entry)
    else:
        result = replay_dump(dump, load_entry(entry))
    data: dict[str, Any] = result.to_json()
    code = ExitCode.OK if result.verdict == "reproducible" else ExitCode.FINDINGS
    return CommandResult("guard replay", data, lambda: render_replay(data), exit_code=code)
