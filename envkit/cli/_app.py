"""Shared CLI plumbing: the ``--json`` envelope, error printing and exit codes.

Every command is a function returning a :class:`~envkit.result.CommandResult`;
:func:`command` wraps it so that output and errors look the same everywhere.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import functools
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

import click

from envkit import _json
from envkit._safe import neutralise, redact
from envkit.cli._services import Services
from envkit.errors import EnvkitError, Interrupted
from envkit.result import CommandResult, envelope, error_envelope

__all__ = [
    "command",
    "err_console",
    "json_option",
    "lock_environment_option",
    "lock_python_option",
    "out_console",
    "parsed_into",
    "print_json",
    "project_root",
    "report_error",
    "run_result",
    "shown",
    "working",
]

P = ParamSpec("P")
T = TypeVar("T")
R = TypeVar("R")

if TYPE_CHECKING:
    from rich.console import Console


class _LazyConsole:
    """A rich Console made on first use: rich costs ~0.1 s to import, --help and --json need none of it."""

    def __init__(self, *, stderr: bool) -> None:
        self._stderr = stderr
        self._console: Console | None = None

    def __getattr__(self, name: str) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=self._stderr, soft_wrap=True, highlight=False)
        return getattr(self._console, name)


out_console = cast("Console", _LazyConsole(stderr=False))
err_console = cast("Console", _LazyConsole(stderr=True))


def _stderr_is_a_file() -> bool:
    """True when rich would not treat stderr as a terminal (so it prints plain text), judged without rich.

    rich's ``Console.is_terminal``: ``TTY_COMPATIBLE=1`` or a non-empty ``FORCE_COLOR`` make it a
    terminal, Jupyter never is, else ``isatty()``; anything uncertain answers False (rich is used).
    """
    if os.environ.get("TTY_COMPATIBLE") == "1" or os.environ.get("FORCE_COLOR"):
        return False
    if hasattr(builtins, "get_ipython"):  # IPython/Jupyter: rich renders there its own way
        return False
    isatty = getattr(sys.stderr, "isatty", None)
    try:
        return isatty is not None and not isatty()
    except ValueError:  # a closed stream: rich says "not a terminal" and fails on the write as we do
        return False


# Text rich prints unchanged (no markup, escape, emoji code, tab, wide or control character):
# printable ASCII without brackets or backslashes, each colon followed by a space or the end.
_RICH_VERBATIM = re.compile(r"(?:[ !-9;-Z^-~]|:(?= |\Z))*\Z")


def _print_warning(text: str) -> None:
    """``warning: TEXT`` on stderr, as ``err_console.print`` writes it; without rich when it is plain."""
    if _RICH_VERBATIM.match(text) and _stderr_is_a_file():
        sys.stderr.write(f"warning: {text}\n")
        sys.stderr.flush()
        return
    err_console.print(f"[yellow]warning:[/] {escape(text)}")


def escape(text: str) -> str:
    """rich's markup escape (imported when used)."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


json_option = click.option("--json", "as_json", is_flag=True, help="Print a versioned JSON envelope.")

# How to read one environment out of a lock that holds several (envkit audit FILE, envkit diff FILE...).
lock_environment_option = click.option(
    "--environment",
    metavar="NAME",
    help="pixi.lock environment to read (default: default); for a uv.lock: extras, comma-separated; "
    "for a poetry.lock: extras and with=G, without=G, only=G.",
)
lock_python_option = click.option(
    "--python",
    "python_minor",
    metavar="X.Y",
    help="Python to read a lock that allows several for (uv.lock, pylock.toml, poetry.lock markers), "
    "e.g. 3.10. Default: this interpreter's when the lock allows it, else the lowest it allows; "
    "the output says which.",
)


@contextlib.contextmanager
def working(message: str) -> Iterator[None]:
    """A spinner on stderr while long work runs (only on a terminal; silent in pipes and CI logs)."""
    if _stderr_is_a_file() or not err_console.is_terminal:  # the first test spares importing rich
        yield
        return
    with err_console.status(escape(shown(message))):
        yield


def services() -> Services:
    """The composition root of this command line (``main(argv, services=...)``)."""
    obj = click.get_current_context().find_root().obj
    if not isinstance(obj, Services):  # invoked through click directly, not envkit.cli.main
        obj = Services()
        click.get_current_context().find_root().obj = obj
    return obj


def project_root() -> Path:
    """The project whose ``environments/`` envkit works on: ``$ENVKIT_ROOT`` or the cwd."""
    return Path(os.environ.get("ENVKIT_ROOT", ".")).resolve()


def command(group: click.Group, name: str) -> Callable[[Callable[P, CommandResult]], click.Command]:
    """Register ``fn`` as ``envkit NAME``; it gets ``--json`` and returns a result."""

    # the envelope's "command" is the whole path ("guard show"), as the results name themselves
    full = name if group.name in (None, "cli", "envkit") else f"{group.name} {name}"

    def decorate(fn: Callable[P, CommandResult]) -> click.Command:
        @functools.wraps(fn)
        def run(*args: P.args, **params: P.kwargs) -> int:
            as_json = bool(params.pop("as_json", False))
            return run_result(full, lambda: fn(*args, **params), as_json=as_json)

        return group.command(name)(json_option(run))

    return decorate


def parsed_into(cls: type[T]) -> Callable[[Callable[[T], R]], Callable[..., R]]:
    """Click passes every option by name: hand ``fn`` one frozen ``cls`` instead (a field per option).

    The one place the options are an untyped mapping; an option without a field (or a field
    without an option) is a programming error that the first call reports.
    """
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]

    def decorate(fn: Callable[[T], R]) -> Callable[..., R]:
        @functools.wraps(fn)
        def callback(**params: object) -> R:
            if set(params) != names:
                raise TypeError(f"{cls.__name__} does not match the options: {sorted(set(params) ^ names)}")
            return fn(cls(**params))

        return callback

    return decorate


def run_result(name: str, produce: Callable[[], CommandResult], *, as_json: bool) -> int:
    """Call ``produce`` and print its result (or its error) as every command does; return the exit code."""
    ctx = click.get_current_context()
    debug = bool(ctx.find_root().params.get("debug"))
    try:
        result = produce()
    except EnvkitError as e:
        return report_error(name, e, as_json=as_json, debug=debug)
    except KeyboardInterrupt:
        return report_error(name, Interrupted(), as_json=as_json, debug=False)
    except OSError as e:
        return report_error(name, _os_error(e), as_json=as_json, debug=debug)
    if as_json:
        print_json(envelope(result))
    else:
        for warning in result.warnings:
            _print_warning(shown(warning))
        text = result.render_text()
        if text:  # plain text, as it is (no rich: no markup, no emoji codes, nothing to import)
            click.echo(shown(text))
    return int(result.exit_code)


def _os_error(error: OSError) -> EnvkitError:
    """An OS error no stage translated (a read-only directory, a full disk): exit 3 with the path."""
    where = error.filename if error.filename is not None else "a file"
    reason = error.strerror or str(error)
    hint = "check the path exists and is writable (permissions, free space), or choose another output"
    return EnvkitError(f"{where}: {reason}", hint=hint)


def shown(text: str) -> str:
    """What envkit may print: credentials redacted, terminal control characters made visible."""
    return neutralise(redact(text))


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v) for v in value]
    return value


def print_json(data: Any) -> None:
    """One envelope on stdout; credentials redacted (control characters are escaped by JSON)."""
    click.echo(_json.dumps(_scrub(data)))  # json.dumps(..., indent=2, sort_keys=True), faster


def report_error(name: str, error: EnvkitError, *, as_json: bool, debug: bool) -> int:
    if debug:
        import traceback  # only for --debug

        traceback.print_exception(error, file=sys.stderr)
    if as_json:
        print_json(error_envelope(name, error))
    err_console.print(f"[bold red]error:[/] {escape(shown(error.message))}", highlight=False)
    if error.hint:
        err_console.print(f"[bold]hint:[/] {escape(shown(error.hint))}", highlight=False)
    return int(error.exit_code)
