"""Typed command results and the versioned JSON envelope printed by ``--json``.

Every command returns a :class:`CommandResult`; the CLI prints it as text or
as ``{"envkit", "schema", "command", "ok", "result", "errors"}``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from envkit import __version__
from envkit._safe import one_line
from envkit.errors import EnvkitError, ExitCode

__all__ = ["SCHEMA_VERSION", "CommandResult", "Lines", "envelope", "error_envelope"]

SCHEMA_VERSION = 1

JSONValue = Any

Lines = list[str]
"""A text as its lines: each is printed on one line (a line break or control character in a field
taken from a file is shown escaped, ``\\n``), so no report, inventory or lock can print a line of
its own (a forged ``verdict: identical`` under the real one)."""


@dataclass(frozen=True)
class CommandResult:
    """What a command produced.

    ``data`` is the JSON-able result; ``text`` renders it for people, as one string or as
    :class:`Lines`; ``exit_code`` is OK or FINDINGS; ``warnings`` go to stderr in text mode
    and into ``errors`` (with level ``warning``) in JSON mode.
    """

    command: str
    data: JSONValue
    text: Callable[[], str | Lines] | str | Lines
    exit_code: ExitCode = ExitCode.OK
    warnings: Sequence[str] = field(default_factory=tuple)

    def render_text(self) -> str:
        """The text; :class:`Lines` each printed on one line, whatever a field in them holds."""
        text = self.text() if callable(self.text) else self.text
        return text if isinstance(text, str) else "\n".join(one_line(line) for line in text)


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
