"""The ``envkit`` command line: parse, call one core function, render, exit code.

Exit codes: 0 ok, 1 findings (drift, divergence, vulnerabilities, stale lock),
2 usage error or invalid input, 3 tool or engine failure.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from envkit import __version__

if TYPE_CHECKING:
    from envkit.cli._services import Services

__all__ = ["COMMANDS", "Services", "cli", "load_all_commands", "main"]


def __getattr__(name: str) -> Any:
    """``envkit.cli.Services``, imported on first use: ``envkit --help`` needs no composition root."""
    if name == "Services":
        from envkit.cli._services import Services

        return Services
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# name -> (module that registers it on `cli`, its one-line help as `envkit --help` shows it).
# Commands load only when used, so `envkit --help` and `envkit probe --compare` import neither
# docker, the solvers nor pydantic; tests/unit/cli checks this table against the commands.
COMMANDS: dict[str, tuple[str, str]] = {
    "audit": ("audit_cmd", "Check an environment for known vulnerabilities and policy problems."),
    "base-image": (
        "build_cmd",
        "Make a base image without a registry: debootstrap a minimal Debian, import it into the engine.",
    ),
    "build": ("build_cmd", "Build the image for environment NAME through the Docker engine."),
    "catalog": (
        "catalog_cmd",
        "Print what envkit knows: CUDA releases, framework wheels, base images, installers, rules.",
    ),
    "check": ("check_cmd", "Check, with no GPU, that IMAGE's framework will run on a GPU and driver."),
    "diff": ("diff_cmd", "Compare environments and flag drift with known-incompatibility rules."),
    "fleet": (
        "fleet_history_cmd",
        "The fleet's numerical history: which device is mercurial, which drifts for a known reason.",
    ),
    "guard": (
        "guard_cmd",
        "Show what envkit.guard recorded in a training run; replay an incident's step from its dump.",
    ),
    "health": (
        "health_cmd",
        "This node's latest verdict from the fleet's history, as a Slurm, Kubernetes or JSON node check.",
    ),
    "images": (
        "build_cmd",
        "List images built by envkit, per environment: tags, context hash, size, staleness.",
    ),
    "init": (
        "init_cmd",
        "Give this repository envkit: a starter spec, `make env-*` targets and a CI recipe.",
    ),
    "lock": (
        "lock_cmd",
        "Solve the spec and write conda-lock.yml, conda-<platform>.lock, requirements.lock, environment.yml.",
    ),
    "pack": (
        "pack_cmd",
        "Pack everything an air-gapped build of conda environment NAME needs into one tarball.",
    ),
    "probe": (
        "probe_cmd",
        "Run a seeded rnn and tiny-BERT training in torch and paddle and record the numbers.",
    ),
    "render": (
        "spec_cmds",
        "Write the build context: Dockerfile, environment.yml, .dockerignore, README.md.",
    ),
    "snapshot": (
        "diff_cmd",
        "Capture this environment (conda list --json in a conda env, pip's view, Python, platform, host).",
    ),
    "verify": (
        "verify_cmd",
        "Rebuild an image from its committed lock with --no-cache and compare digests, file by file.",
    ),
    "validate": ("spec_cmds", "Check specs: every problem of a file at once, with line, field and a hint."),
}


def load_all_commands() -> None:
    """Import every command module (each registers its commands on ``cli``)."""
    for module in sorted({m for m, _ in COMMANDS.values()}):
        importlib.import_module(f"envkit.cli.{module}")


class LazyGroup(click.Group):
    """A group whose commands' modules are imported when the command is used, not at start-up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(COMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            importlib.import_module(f"envkit.cli.{COMMANDS[cmd_name][0]}")  # registers it on `cli`
        elif cmd_name not in self.commands:
            load_all_commands()  # a command missing from the table still works (a test flags it)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from the table, without importing every command."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = []
        for name in names:
            if name in self.commands or name not in COMMANDS:
                cmd = self.get_command(ctx, name)
                if cmd is None or cmd.hidden:
                    continue
                rows.append((name, cmd.get_short_help_str(limit)))
            else:
                rows.append((name, click.Command(name, help=COMMANDS[name][1]).get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100, "terminal_width": 100},
)
@click.version_option(__version__, prog_name="envkit")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
def cli(debug: bool) -> None:
    """envkit: reproducible deep-learning environments, proven numerically.

    Specs live in environments/<name>.yaml; generated build contexts in images/<name>/.
    Exit codes: 0 ok, 1 findings, 2 usage or invalid input, 3 tool or engine failure.
    """


def main(argv: Sequence[str] | None = None, *, services: Services | None = None) -> int:
    """Run the CLI and return the exit code (never raises SystemExit).

    ``services`` is the composition root (:class:`~envkit.cli._services.Services`): the real
    adapters by default, made when a command first asks (:func:`envkit.cli._app.services`);
    tests pass fakes.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    try:
        rv = cli.main(args=args, prog_name="envkit", standalone_mode=False, obj=services)
    except click.exceptions.NoArgsIsHelpError as e:
        if as_json:
            return _usage(e, args, "arguments are missing", as_json=True)
        click.echo(e.ctx.get_help() if e.ctx else str(e))
        return 2
    except click.UsageError as e:
        return _usage(e, args, e.format_message(), as_json=as_json)
    except (click.Abort, KeyboardInterrupt):
        from envkit.cli._app import report_error
        from envkit.errors import Interrupted

        return report_error(_command_name(None, args), Interrupted(), as_json=as_json, debug=False)
    except click.exceptions.Exit as e:
        return int(e.exit_code)
    except click.ClickException as e:
        return _usage(e, args, e.format_message(), as_json=as_json)
    return int(rv) if isinstance(rv, int) else 0


def _command_name(ctx: click.Context | None, args: list[str]) -> str:
    names: list[str] = []
    while ctx is not None and ctx.parent is not None and ctx.info_name:  # up to the root, which is "envkit"
        names.insert(0, ctx.info_name)
        ctx = ctx.parent
    if names:
        return " ".join(names)
    return next((a for a in args if not a.startswith("-") and (a in cli.commands or a in COMMANDS)), "envkit")


def _usage(e: click.ClickException, args: list[str], message: str, *, as_json: bool) -> int:
    """A usage error: ``error:``/``hint:`` on stderr and, with ``--json``, one envelope on stdout."""
    from envkit.cli._app import report_error
    from envkit.errors import UsageError

    ctx = getattr(e, "ctx", None)
    hint = f"see `{ctx.command_path} --help`" if ctx is not None else "see `envkit --help`"
    return report_error(
        _command_name(ctx, args), UsageError(message, hint=hint), as_json=as_json, debug=False
    )
