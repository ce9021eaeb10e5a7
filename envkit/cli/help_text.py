"""Write :mod:`envkit._help`, the top-level ``envkit --help`` text that the console script prints
without importing click: ``python -m envkit.cli.help_text`` after changing a command's one-line
help, an option of the group, or the group's docstring (``tests/unit/cli/test_help_text.py``
fails until it is rewritten)."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

from envkit._atomic import write_text_atomic
from envkit.cli import main

__all__ = ["MODULE", "module_source", "render", "write"]

MODULE = Path(__file__).resolve().parent.parent / "_help.py"

_HEADER = '''"""The top-level ``envkit --help`` text, as click renders it (written by
``python -m envkit.cli.help_text``; do not edit by hand)."""

TEXT = (
'''


def render() -> str:
    """The text ``envkit --help`` prints through click (the group's help, rendered at width 100)."""
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["--help"])
    if code != 0:
        raise RuntimeError(f"envkit --help exited {code}")
    return out.getvalue()


def module_source(text: str) -> str:
    """The module's source: ``TEXT``, one string literal per line of the help
    (JSON-quoted: a valid Python literal, as ruff formats it)."""
    lines = "".join(f"    {json.dumps(line)}\n" for line in text.splitlines(keepends=True))
    return f"{_HEADER}{lines})\n"


def write() -> Path:
    write_text_atomic(MODULE, module_source(render()))
    return MODULE


if __name__ == "__main__":
    print(f"wrote {write()}")
