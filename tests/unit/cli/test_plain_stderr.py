"""Warnings printed without rich when stderr is a file: the bytes rich would print, never others.

rich costs ~0.1 s to import; a warm ``envkit audit FILE`` prints one warning (the database's age)
to a pipe. The plain path is taken only for text rich prints unchanged, and only when rich would
not treat stderr as a terminal; these tests compare it with rich itself.
"""

from __future__ import annotations

import io
import random

import pytest
from rich.console import Console

from envkit.cli import _app

REAL = [
    "the advisory data is 783 days old (as of 2024-10-10, more than --max-db-age 30): advisories "
    "published since are not checked; run envkit audit --update-db",
    "the advisory data's date is unknown: findings may miss advisories published since; "
    "run envkit audit --update-db",
    "x" * 300,  # wider than any terminal: rich's soft wrap keeps it on one line
    "ends with a colon:",
    "",
]
HOSTILE = [
    ":smile: emoji code",  # rich replaces it with an emoji
    "a:thumbs_up:b",
    "[bold]markup[/bold]",
    "an \\[escaped] bracket",
    "tab\tinside",  # rich expands tabs
    "two\nlines",
    "unicode … ellipsis",
    "wide 漢字",
    "colon:directly",
    "https://example.org/x",
    "\x1b[31mred",
    "freeze.txt:3: skipped 'garbage' (not a requirement)",  # ":3:" could be an emoji code: rich decides
]


@pytest.fixture(autouse=True)
def _no_forced_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)  # a CI may set them: the tests set their own
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)


def _rich(text: str) -> str:
    out = io.StringIO()
    Console(file=out, soft_wrap=True, highlight=False).print(f"[yellow]warning:[/] {_app.escape(text)}")
    return out.getvalue()


def _plain(text: str, capsys: pytest.CaptureFixture[str]) -> str:
    _app._print_warning(text)
    return capsys.readouterr().err


def _random_texts(n: int) -> list[str]:
    rng = random.Random(35)
    alphabet = [chr(c) for c in range(0x20, 0x7F)] + [": ", ":", " :", "\t", "…", "[", "]", "\\"]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(n)]


@pytest.mark.parametrize("text", REAL + HOSTILE + _random_texts(400))
def test_a_warning_is_the_bytes_rich_prints(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _plain(text, capsys) == _rich(text)


def test_the_plain_path_is_taken_for_real_warnings_and_refused_for_hostile_ones() -> None:
    assert all(_app._RICH_VERBATIM.match(t) for t in REAL)
    assert not any(_app._RICH_VERBATIM.match(t) for t in HOSTILE)
    # the refusals matter: rich changes emoji codes and tabs
    assert all(_rich(t) != f"warning: {t}\n" for t in (":smile: emoji code", "a:thumbs_up:b", "tab\tinside"))
    assert len([t for t in _random_texts(400) if _app._RICH_VERBATIM.match(t)]) > 20  # the fuzz tests both


@pytest.mark.parametrize(("name", "value"), [("FORCE_COLOR", "1"), ("TTY_COMPATIBLE", "1")])
def test_rich_is_used_when_it_would_see_a_terminal(
    name: str, value: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _app._stderr_is_a_file()  # pytest's captured stderr
    monkeypatch.setenv(name, value)
    assert not _app._stderr_is_a_file()
    assert Console(stderr=True).is_terminal  # rich agrees


def test_an_empty_force_color_still_means_a_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "")
    monkeypatch.setenv("TTY_COMPATIBLE", "0")
    assert _app._stderr_is_a_file()
    assert not Console(stderr=True).is_terminal
