"""``envkit guard show RUN`` and ``envkit guard replay DUMP``: read what envkit.guard recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from envkit.cli import cli
from envkit.cli._app import command, project_root, services
from envkit.errors import ExitCode, UsageError
from envkit.result import CommandResult


@cli.group("guard")
def guard() -> None:
    """Show what envkit.guard recorded in a training run; replay an incident's step from its dump.

    Both subcommands take --json (the versioned envelope). See docs/guides/guard.md.
    """


@command(guard, "show")
@click.argument("run", type=click.Path(path_type=Path))
@click.option(
    "--html",
    "html_out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write an HTML page there: the curves, incidents marked, explained.",
)
def show(run: Path, html_out: Path | None) -> CommandResult:
    """Steps, skips and why, incidents and their localization, spikes, clipping (exit 1: an incident)."""
    from envkit.incident.show import load_run, render_run

    summary = load_run(run)
    if html_out is not None:
        summary["html"] = str(_write_page(summary, html_out))
    code = ExitCode.FINDINGS if summary["incidents"] else ExitCode.OK
    return CommandResult("guard show", summary, lambda: render_run(summary), exit_code=code)


def _write_page(summary: dict[str, Any], out: Path) -> Path:
    from envkit._atomic import write_text_atomic
    from envkit.incident.page import read_steps, render_page
    from envkit.incident.show import explain_incident

    run = Path(summary["run"])
    curves = read_steps(run)  # streamed: bounded memory, a FIFO or link refused
    write_text_atomic(out, render_page(summary, curves, lambda i: explain_incident(i, str(run))))
    return out


@command(guard, "replay")
@click.argument("dump", type=click.Path(path_type=Path))
@click.option("--entry", help="module:function returning (model, optimizer, loss_fn).")
@click.option("--image", help="Replay inside this image (no network, read-only mounts, its user).")
@click.option("--slurm", is_flag=True, help="Replay on other nodes: one fleet task per node through Slurm.")
@click.option(
    "--scheduler",
    type=click.Choice(["slurm", "local"]),
    help="The fleet's scheduler (--slurm is --scheduler slurm; local: tasks as processes here).",
)
@click.option("--nodes", type=click.IntRange(1), default=1, show_default=True, help="Fleet: node count.")
@click.option("--nodelist", metavar="N1,N2", help="Fleet: these nodes (overrides --nodes).")
@click.option("--partition", help="Fleet: Slurm partition.")
@click.option("--time", "time_limit", metavar="LIMIT", help="Fleet: time limit (Slurm syntax, e.g. 30).")
@click.option("--store", type=click.Path(path_type=Path), help="Fleet: the shared store (as for probe).")
@click.option("--run-id", help="Fleet: the run's name in the store (default run-DATE-TIME-XXXX).")
@click.option("--wait-timeout", type=click.FloatRange(1), metavar="SECONDS", help="Fleet: cancel after this.")
def replay(
    dump: Path, entry: str | None, image: str | None, slurm: bool, scheduler: str | None, nodes: int,
    nodelist: str | None, partition: str | None, time_limit: str | None, store: Path | None,
    run_id: str | None, wait_timeout: float | None,
) -> CommandResult:  # fmt: skip
    """Run an incident's step again here: reproducible, nondeterministic, transient or environment.

    With --slurm (or --scheduler) the step is replayed on other nodes as a fleet task, one per node,
    and each node gets its own verdict.
    """
    from envkit.incident.replay import load_entry, replay_dump, suggest_entry
    from envkit.incident.show import render_replay

    if entry is None:
        raise suggest_entry(dump)
    fleet = "slurm" if slurm else scheduler
    fleet_only = {
        "--nodes": nodes != 1, "--nodelist": nodelist, "--partition": partition, "--time": time_limit,
        "--store": store, "--run-id": run_id, "--wait-timeout": wait_timeout,
    }  # fmt: skip
    given = [name for name, value in fleet_only.items() if value]
    if fleet is None and given:
        raise UsageError(
            f"{', '.join(given)}: only with --slurm or --scheduler (a fleet replay)",
            hint="add --slurm (or --scheduler local) to replay on other nodes",
        )
    if fleet is not None:
        if image is not None:
            raise UsageError("--image and --slurm/--scheduler: choose one", hint="see docs/guides/guard.md")
        nodes_named = tuple(n for n in (nodelist or "").split(",") if n)
        return _fleet(
            dump, entry, fleet, nodes, nodes_named, partition, time_limit, store, run_id, wait_timeout
        )
    if image is not None:
        from envkit.incident.image_replay import replay_in_image

        result = replay_in_image(services().engine(), image, dump, entry)
    else:
        result = replay_dump(dump, load_entry(entry))
    data: dict[str, object] = result.to_json()
    code = ExitCode.OK if result.verdict == "reproducible" else ExitCode.FINDINGS
    return CommandResult("guard replay", data, lambda: render_replay(data), exit_code=code)


def _fleet(
    dump: Path, entry: str, scheduler: str, nodes: int, nodelist: tuple[str, ...], partition: str | None,
    time_limit: str | None, store: Path | None, run_id: str | None, wait_timeout: float | None,
) -> CommandResult:  # fmt: skip
    from envkit.fleet.guard_replay import ReplayFleetOptions, render_fleet_replay, replay_on_fleet
    from envkit.store.layout import default_store

    where = (store or default_store(project_root())).resolve()  # the nodes write there: absolute
    opts = ReplayFleetOptions(
        store=where, nodes=len(nodelist) or nodes, nodelist=nodelist, run_id=run_id, partition=partition,
        time_limit=time_limit, timeout_s=wait_timeout,
    )  # fmt: skip
    result = replay_on_fleet(services().scheduler(scheduler), opts, dump, entry)
    data = result.to_json()
    ok = result.verdict == "reproducible" and result.run.ok and not result.unreadable
    code = ExitCode.OK if ok else ExitCode.FINDINGS
    return CommandResult("guard replay", data, lambda: render_fleet_replay(result), exit_code=code)
