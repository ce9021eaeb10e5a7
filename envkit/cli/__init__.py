"""The ``envkit`` command line: parse, call one core function, render, exit code.

Exit codes: 0 ok, 1 findings (drift, divergence, vulnerabilities, stale lock),
2 usage error or invalid input, 3 tool or engine failure.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click
from rich.markup import escape

from envkit import __version__
from envkit.cli._app import err_console

__all__ = ["cli", "main"]


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
    probe_cmd,
    spec_cmds,
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return the exit code (never raises SystemExit)."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        rv = cli.main(args=args, prog_name="envkit", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as e:
        click.echo(e.ctx.get_help() if e.ctx else str(e))
        return 2
    except click.UsageError as e:
        err_console.print(f"[bold red]error:[/] {escape(e.format_message())}")
        if e.ctx is not None:
            err_console.print(f"[bold]hint:[/] see `{escape(e.ctx.command_path)} --help`")
        return 2
    except click.Abort:
        err_console.print("aborted", style="red")
        return 130
    except click.exceptions.Exit as e:
        return int(e.exit_code)
    except click.ClickException as e:
        err_console.print(f"[bold red]error:[/] {escape(e.format_message())}")
        return 2
    return int(rv) if isinstance(rv, int) else 0
