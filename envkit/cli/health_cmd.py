"""``envkit health``: this node's latest verdict, as a node check (Slurm, Kubernetes NPD, JSON).

Imports only :mod:`envkit.fleet.health` (one bounded file read): a hook answers in well under a second.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from envkit import _proc
from envkit.cli import cli
from envkit.cli._app import command, project_root
from envkit.errors import ExitCode, FleetError, UsageError
from envkit.fleet.health import Health, drain_argv, node_name, read_health
from envkit.result import CommandResult
from envkit.store.layout import default_store

_EXIT = {0: ExitCode.OK, 1: ExitCode.FINDINGS, 2: ExitCode.USAGE}


@command(cli, "health")
@click.option(
    "--store", type=click.Path(file_okay=False, path_type=Path), help="The store (default $ENVKIT_STORE)."
)
@click.option("--node", help="This node's name (default $SLURMD_NODENAME, $NODE_NAME, else the host name).")
@click.option(
    "--hook",
    type=click.Choice(["json", "slurm", "prolog", "npd"]),
    default="json",
    show_default=True,
    help="slurm: HealthCheckProgram (with --drain, drains the node itself); prolog: a Slurm Prolog; "
    "npd: a node-problem-detector custom plugin (one line of at most 80 characters); json: a verdict.",
)
@click.option(
    "--drain", is_flag=True, help="With --hook slurm: `scontrol update … State=DRAIN` a node to remove."
)
@click.option(
    "--max-age", type=click.FloatRange(1), metavar="SECONDS", help="An older verdict is no verdict."
)
def health(
    store: Path | None, node: str | None, hook: str, drain: bool, max_age: float | None
) -> CommandResult:
    """This node's latest verdict from the fleet's history, as a Slurm, Kubernetes or JSON node check.

    Exit 0 stay (stable, explained drift), 1 remove (mercurial or suspect), 2 no verdict (none, too
    old, or its latest probe failed). See docs/guides/fleet.md for the config lines of each system."""
    if drain and hook != "slurm":
        raise UsageError("--drain is for --hook slurm", hint="envkit health --hook slurm --drain")
    answer = read_health(store or default_store(project_root()), node or node_name(), max_age=max_age)
    data = answer.to_json()
    if drain and hook == "slurm" and answer.action == "remove":
        data["drained"] = _drain(answer)
    code = _EXIT[answer.exit_code]
    if hook == "json":
        return CommandResult(
            "health", data, lambda: f"{answer.action}: {answer.message(200)}", exit_code=code
        )
    if hook == "npd":
        return CommandResult("health", data, answer.message(), exit_code=code)
    if answer.action != "stay":  # slurm and prolog: Slurm logs what the hook writes to stderr
        print(answer.message(200), file=sys.stderr)
    # a Prolog's non-zero exit drains the node and requeues the job: only for a device to remove
    return CommandResult("health", data, "", exit_code=code if answer.action == "remove" else ExitCode.OK)


def _drain(answer: Health) -> bool:
    result = _proc.run(drain_argv(answer), check=False, timeout=30, hint="is scontrol on this node's PATH?")
    if result.returncode != 0:
        raise FleetError(
            f"scontrol could not drain {answer.node}: {result.stderr.strip()}",
            hint="HealthCheckProgram runs as root (SlurmdUser): try `envkit health --hook slurm` by hand",
        )
    return True
