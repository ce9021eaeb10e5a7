"""Typed command results and the versioned JSON envelope printed by ``--json``.

Every command returns a :class:`CommandResult`; the CLI prints it as text or
as ``{"envkit", "schema", "command", "ok", "result", "errors"}``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from envkit import __version__
from envkit.errors import EnvkitError, ExitCode

__all__ = ["SCHEMA_VERSION", "CommandResult", "envelope", "error_envelope"]

SCHEMA_VERSION = 1

JSONValue = Any


@dataclass(frozen=True)
class CommandResult:
    """What a command produced.

    ``data`` is the JSON-able result; ``text`` renders it for people;
    ``exit_code`` is OK or FINDINGS; ``warnings`` go to stderr in text mode
    and into ``errors`` (with level ``warning``) in JSON mode.
    """

    command: str
    data: JSONValue
    text: Callable[[], str] | str
    exit_code: ExitCode = ExitCode.OK
    warnings: Sequence[str] = field(default_factory=tuple)

    def render_text(self) -> str:
        return self.text() if callable(self.text) else self.text


def envelope(result: CommandResult) -> dict[str, JSONValue]:
    return {
        "envkit": __version__,
        "schema": SCHEMA_VERSION,
        "command": result.command,
        "ok": result.exit_code == ExitCode.OK,
        "result": result.data,
        "errors": [{"level": "warning", "message": w} for w in result.warnings],
    }


def error_envelope(command: str, error: EnvkitError) -> Mapping[str, JSONValue]:
    return {
        "envkit": __version__,
        "schema": SCHEMA_VERSION,
        "command": command,
        "ok": False,
        "result": None,
        "errors": [{"level": "error", **error.to_json()}],
    }
