"""Every ```envkit CMD ... --flag``` quoted in envkit's messages, generated files and docs names a flag that
CMD has: `envkit build NAME --debug` (no such option: `--debug` is the group's "show tracebacks", the
debug image is `--debug-image`) was written in the debug Dockerfile's header and three hints."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from envkit.cli import cli, load_all_commands

ROOT = Path(__file__).resolve().parents[3]
SPAN = re.compile(r"`(envkit [^`\n]+)`")  # one inline code span (Markdown, or a message's quoting)
SHELL = ("|", "&&", "||", ";", ">", "2>&1", "<")
SOURCES = ("envkit", "docs", "images", "tests/golden")


def _options(command: click.Command) -> set[str]:
    names = {"--", "--help", "-h"}
    for param in command.params:
        if isinstance(param, click.Option):
            names |= {*param.opts, *param.secondary_opts}
    return names


def unknown_flags(text: str) -> list[tuple[int, str, str]]:
    """(line, quoted command, flag) for each long option that the quoted command does not have; the
    words after ``envkit`` choose the (sub)command, an option before a subcommand is its group's."""
    load_all_commands()
    found = []
    for match in SPAN.finditer(text):
        command: click.Command = cli
        for word in match.group(1).split()[1:]:
            if word.startswith(SHELL):
                break
            if isinstance(command, click.Group) and not word.startswith("-"):
                sub = command.get_command(click.Context(command), word)
                if sub is None:
                    break
                command = sub
                continue
            line = text.count("\n", 0, match.start()) + 1
            flags = word.split("=", 1)[0].rstrip(".,:;)").split("/")
            found += [
                (line, match.group(1), f) for f in flags if f.startswith("--") and f not in _options(command)
            ]
    return found


def _files() -> list[Path]:
    files = [ROOT / "README.md"]
    for top in SOURCES:
        files += sorted(
            p for p in (ROOT / top).rglob("*") if p.is_file() and p.suffix not in {".pyc", ".tar"}
        )
    return files


def test_every_quoted_command_names_its_own_flags() -> None:
    wrong = []
    for path in _files():
        try:
            text = path.read_text("utf-8")
        except UnicodeDecodeError:
            continue
        wrong += [
            f"{path.relative_to(ROOT)}:{line}: `{quoted}` has no {flag}"
            for line, quoted, flag in unknown_flags(text)
        ]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(
    ("text", "flag"),
    [
        ("regenerate with `envkit build demo --debug`", "--debug"),  # the group's flag, after the command
        ("`envkit probe --image x --debug`", "--debug"),
        ("`envkit guard show RUN --no-such`", "--no-such"),  # a subcommand's own options
        ("`envkit build --offline/--refresh-debs`", "--refresh-debs"),
    ],
)
def test_a_flag_the_command_lacks_is_found(text: str, flag: str) -> None:
    assert [f for _, _, f in unknown_flags(text)] == [flag]


@pytest.mark.parametrize(
    "text",
    [
        "`envkit build demo --debug-image`",
        "`envkit --debug probe --image x`",  # the group's option, before the command
        "`envkit build --offline/--pack`",
        "`envkit catalog refresh --offline`",
        "`envkit lock NAME --check && envkit build NAME --frozen`",
    ],
)
def test_the_flags_commands_have_pass(text: str) -> None:
    assert unknown_flags(text) == []


# `--debug` is the group's option, `envkit --debug CMD ...`: "rerun with --debug" reads as
# `envkit CMD ... --debug`, which click refuses. Still written so in files outside this change:
BARE_DEBUG_LEFT = {"envkit/readiness/check.py", "envkit/readiness/facts.py", "envkit/engine/docker_api.py"}


def test_hints_say_where_debug_goes() -> None:
    bare = re.compile(r"\b(?:re)?run with --debug\b")
    found = {
        str(p.relative_to(ROOT))
        for p in sorted((ROOT / "envkit").rglob("*.py"))
        if bare.search(p.read_text("utf-8"))
    }
    assert found <= BARE_DEBUG_LEFT, (
        f"say `envkit --debug CMD ...` instead: {sorted(found - BARE_DEBUG_LEFT)}"
    )
