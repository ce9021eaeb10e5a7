"""`docs/reference/cli.md` is every command's `--help`: regenerated here, compared with the committed page."""

from __future__ import annotations

import re

import click
import pytest

from envkit.cli import COMMANDS, cli, load_all_commands, reference


def test_committed_page_is_what_the_commands_print() -> None:
    committed = reference.PAGE.read_text("utf-8") if reference.PAGE.is_file() else ""
    assert reference.render() == committed, (
        f"docs/reference/cli.md is stale (a command's --help changed): run `{reference.REGENERATE}`"
    )


def test_every_command_and_subcommand_has_a_section() -> None:
    load_all_commands()
    paths = reference.command_paths()
    assert paths[0] == ()
    assert {p[0] for p in paths if len(p) == 1} == set(COMMANDS)
    groups = {name: cmd for name, cmd in cli.commands.items() if isinstance(cmd, click.Group)}
    assert set(groups) >= {"catalog", "fleet", "guard"}
    for group, cmd in groups.items():
        subcommands = {name for name, sub in cmd.commands.items() if not sub.hidden}
        assert subcommands and {p[1] for p in paths if len(p) == 2 and p[0] == group} == subcommands
    page = reference.render()
    titles = re.findall(r"^## (envkit.*)$", page, re.M)
    assert titles == [" ".join(("envkit", *p)) for p in paths]


@pytest.mark.parametrize("columns", ["40", "300"])
def test_the_text_does_not_depend_on_the_terminal(columns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    wide = reference.help_text(("probe",))
    monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.setenv("LINES", "10")
    assert reference.help_text(("probe",)) == wide
    assert max(len(line) for line in wide.splitlines()) <= 100


def test_a_changed_help_makes_the_page_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail: one option's help changed is one changed line of the page."""
    load_all_commands()
    build = cli.commands["build"]
    option = next(p for p in build.params if p.name == "no_cache")
    before = reference.render()
    monkeypatch.setattr(option, "help", "A changed help text.")
    after = reference.render()
    assert after != before
    assert "A changed help text." in after and "A changed help text." not in before
