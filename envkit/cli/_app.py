"""Shared CLI plumbing: the ``--json`` envelope, error printing and exit codes.

Every command is a function returning a :class:`~envkit.result.CommandResult`;
:func:`command` wraps it so that output and errors look the same everywhere.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ParamSpec

import click
from rich.console import Console
from rich.markup import escape

from envkit.errors import EnvkitError
from envkit.result import CommandResult, envelope, error_envelope

__all__ = ["command", "err_console", "json_option", "out_console", "project_root", "run_result", "working"]

P = ParamSpec("P")

out_console = Console(soft_wrap=True, highlight=False)
err_console = Console(stderr=True, soft_wrap=True, highlight=False)

json_option = click.option("--json", "as_json", is_flag=True, help="Print a versioned JSON envelope.")


@contextlib.contextmanager
def working(message: str) -> Iterator[None]:
    """A spinner on stderr while long work runs (only on a terminal; silent in pipes and CI logs)."""
    if not err_console.is_terminal:
        yield
        return
    with err_console.status(escape(message)):
        yield


def project_root() -> Path:
    """The project whose ``environments/`` envkit works on: ``$ENVKIT_ROOT`` or the cwd."""
    return Path(os.environ.get("ENVKIT_ROOT", ".")).resolve()


def command(
    group: click.Group, name: str, **kwargs: Any
) -> Callable[[Callable[P, CommandResult]], click.Command]:
    """Register ``fn`` as ``envkit NAME``; it gets ``--json`` and returns a result."""

    def decorate(fn: Callable[P, CommandResult]) -> click.Command:
        @functools.wraps(fn)
        def run(*args: P.args, **kw: P.kwargs) -> int:
            as_json = bool(kw.pop("as_json", False))
            return run_result(name, lambda: fn(*args, **kw), as_json=as_json)

        return group.command(name, **kwargs)(json_option(run))

    return decorate


def run_result(name: str, produce: Callable[[], CommandResult], *, as_json: bool) -> int:
    """Call ``produce`` and print its result (or its error) as every command does; return the exit code."""
    ctx = click.get_current_context()
    debug = bool(ctx.find_root().params.get("debug"))
    try:
        result = produce()
    except EnvkitError as e:
        return _report_error(name, e, as_json=as_json, debug=debug)
    except KeyboardInterrupt:
        err_console.print("interrupted", style="red")
        return 130
    if as_json:
        click.echo(json.dumps(envelope(result), indent=2, sort_keys=True))
    else:
        for warning in result.warnings:
            err_console.print(f"[yellow]warning:[/] {escape(warning)}")
        text = result.render_text()
        if text:
            out_console.print(text, markup=False)
    return int(result.exit_code)


def _report_error(name: str, error: EnvkitError, *, as_json: bool, debug: bool) -> int:
    if debug:
        traceback.print_exception(error, file=sys.stderr)
    if as_json:
        click.echo(json.dumps(error_envelope(name, error), indent=2, sort_keys=True))
    err_console.print(f"[bold red]error:[/] {escape(error.message)}", highlight=False)
    if error.hint:
        err_console.print(f"[bold]hint:[/] {escape(error.hint)}", highlight=False)
    return int(error.exit_code)
