"""The ``envkit`` console script: the CLI, imported inside the Ctrl-C guard.

Importing the CLI loads pydantic, rattler, docker and rich (a second or more); Ctrl-C
during that start-up must not print a traceback either. Standard library only here.

``envkit --help`` (and ``-h``) alone prints the text click renders, kept in
:mod:`envkit._help` (written by ``python -m envkit.cli.help_text``; a unit test fails when the two
differ), without importing click: the top-level help costs Python's start-up and nothing more.
"""

from __future__ import annotations

import sys

__all__ = ["main"]

INTERRUPTED = 130


def main() -> int:
    if sys.argv[1:] in (["--help"], ["-h"]):
        from envkit._help import TEXT

        sys.stdout.write(TEXT)
        return 0
    try:
        from envkit.cli import main as cli_main  # the import itself is what is guarded

        return cli_main()
    except KeyboardInterrupt:
        return _interrupted(sys.argv[1:])


def _interrupted(argv: list[str]) -> int:
    if "--json" in argv:
        import json

        from envkit import __version__

        command = next((a for a in argv if not a.startswith("-")), "envkit")
        error = {"level": "error", "type": "Interrupted", "message": "interrupted", "hint": None}
        envelope = {"envkit": __version__, "schema": 1, "command": command, "ok": False}
        sys.stdout.write(
            json.dumps({**envelope, "result": None, "errors": [error]}, indent=2, sort_keys=True) + "\n"
        )
    sys.stderr.write("envkit: interrupted\n")
    return INTERRUPTED
