"""The README's quoted ``--help`` texts are the real ones (``make check-readme``)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from envkit.cli import main

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCK = re.compile(r"```console\n\$ (envkit [^\n]*--help)\n(.*?)```", re.S)


def quoted_help() -> list[tuple[str, str]]:
    return BLOCK.findall(README.read_text("utf-8"))


def test_readme_quotes_help() -> None:
    assert quoted_help(), "the README should quote at least one --help text"


@pytest.mark.parametrize(
    ("command", "expected"), quoted_help(), ids=lambda v: v if v.startswith("envkit") else ""
)
def test_help_matches_cli(command: str, expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(shlex.split(command)[1:]) == 0
    actual = capsys.readouterr().out
    assert actual.strip() == expected.strip(), f"README's `{command}` is stale: paste the new output"


def test_spec_reference_is_generated_from_the_models() -> None:
    from envkit.spec.reference import spec_reference

    text = README.read_text("utf-8")
    start, end = "<!-- spec-reference:start -->\n", "<!-- spec-reference:end -->"
    assert start in text and end in text
    quoted = text.split(start, 1)[1].split(end, 1)[0]
    assert quoted == spec_reference(), "README's spec reference is stale: paste envkit.spec.reference output"
