"""The ``envkit`` command line: parse, call one core function, render, exit code.

Exit codes: 0 ok, 1 findings (drift, divergence, vulnerabilities, stale lock),
2 usage error or invalid input, 3 tool or engine failure.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from envkit import __version__
from envkit.cli._app import report_error
from envkit.cli._services import Services
from envkit.errors import Interrupted, UsageError

__all__ = ["Services", "cli", "main"]


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100, "terminal_width": 100}
)
@click.version_option(__version__, prog_name="envkit")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
def cli(debug: bool) -> None:
    """envkit: reproducible deep-learning environments, proven numerically.

    Specs live in environments/<name>.yaml; generated build contexts in images/<name>/.
    Exit codes: 0 ok, 1 findings, 2 usage or invalid input, 3 tool or engine failure.
    """


# Commands register themselves on `cli` when their module is imported.
from envkit.cli import (  # noqa: E402,F401
    audit_cmd,
    build_cmd,
    catalog_cmd,
    diff_cmd,
    init_cmd,
    lock_cmd,
    pack_cmd,
    probe_cmd,
    spec_cmds,
)


def main(argv: Sequence[str] | None = None, *, services: Services | None = None) -> int:
    """Run the CLI and return the exit code (never raises SystemExit).

    ``services`` is the composition root (:class:`~envkit.cli._services.Services`): the real
    adapters by default; tests pass fakes.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    try:
        rv = cli.main(args=args, prog_name="envkit", standalone_mode=False, obj=services or Services())
    except click.exceptions.NoArgsIsHelpError as e:
        if as_json:
            return _usage(e, args, "arguments are missing", as_json=True)
        click.echo(e.ctx.get_help() if e.ctx else str(e))
        return 2
    except click.UsageError as e:
        return _usage(e, args, e.format_message(), as_json=as_json)
    except (click.Abort, KeyboardInterrupt):
        return report_error(_command_name(None, args), Interrupted(), as_json=as_json, debug=False)
    except click.exceptions.Exit as e:
        return int(e.exit_code)
    except click.ClickException as e:
        return _usage(e, args, e.format_message(), as_json=as_json)
    return int(rv) if isinstance(rv, int) else 0


def _command_name(ctx: click.Context | None, args: list[str]) -> str:
    if ctx is not None and ctx.parent is not None and ctx.info_name:
        return ctx.info_name
    return next((a for a in args if not a.startswith("-") and a in cli.commands), "envkit")


def _usage(e: click.ClickException, args: list[str], message: str, *, as_json: bool) -> int:
    """A usage error: ``error:``/``hint:`` on stderr and, with ``--json``, one envelope on stdout."""
    ctx = getattr(e, "ctx", None)
    hint = f"see `{ctx.command_path} --help`" if ctx is not None else "see `envkit --help`"
    return report_error(
        _command_name(ctx, args), UsageError(message, hint=hint), as_json=as_json, debug=False
    )
