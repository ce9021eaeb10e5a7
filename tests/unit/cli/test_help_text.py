"""``envkit --help`` printed without click: the kept text is click's, and nothing more is imported."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from envkit import _help
from envkit.cli import help_text

ROOT = Path(__file__).resolve().parents[3]


def test_kept_text_is_what_click_renders() -> None:
    assert help_text.render() == _help.TEXT, (
        "the top-level help changed: run `python -m envkit.cli.help_text`"
    )


def test_written_module_holds_the_text() -> None:
    text = help_text.render()
    (assign,) = (n for n in ast.parse(help_text.module_source(text)).body if isinstance(n, ast.Assign))
    assert ast.literal_eval(assign.value) == text


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_console_script_prints_it_without_click(flag: str) -> None:
    probe = (
        "import sys\n"
        f"sys.argv = ['envkit', {flag!r}]\n"
        "from envkit._entry import main\n"
        "code = main()\n"
        "mods = sorted(m for m in sys.modules if m.split('.')[0] in ('click', 'envkit'))\n"
        "sys.stderr.write(' '.join([str(code), *mods]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout == _help.TEXT
    assert done.stderr.split() == ["0", "envkit", "envkit._entry", "envkit._help"]


def test_anything_else_goes_through_click() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "envkit", "--debug", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    assert done.stdout == _help.TEXT  # the same text, rendered by click
