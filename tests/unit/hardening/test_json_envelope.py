"""Class: `--json` prints exactly one envelope, usage errors included (issue 16, item 18)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import Run

USAGE_ERRORS = [
    (["probe", "--steps", "0", "--json"], "probe"),
    (["probe", "--steps", "many", "--json"], "probe"),
    (["audit", "x.txt", "--format", "pdf", "--json"], "audit"),
    (["validate", "--no-such-option", "--json"], "validate"),
    (["render", "--json"], "render"),
    (["diff", "--json"], "diff"),
    (["no-such-command", "--json"], "envkit"),
    (["--json"], "envkit"),
    (["lock", "a", "b", "--json"], "lock"),
    (["init", "--framework", "jax", "--json"], "init"),
]


@pytest.mark.parametrize(
    ("argv", "command"), USAGE_ERRORS, ids=lambda v: " ".join(v) if isinstance(v, list) else v
)
def test_usage_errors_print_one_envelope(
    project: Path, envkit: Callable[..., Run], argv: list[str], command: str
) -> None:
    run = envkit(*argv)
    assert run.code == 2
    data = run.envelope()  # json.loads of the whole stdout: exactly one document
    assert data["ok"] is False and data["result"] is None
    assert data["command"] == command
    (error,) = data["errors"]
    assert error["level"] == "error" and error["type"] == "UsageError"
    assert error["message"] and error["hint"]
    assert "error:" in run.err


def test_without_json_nothing_goes_to_stdout(project: Path, envkit: Callable[..., Run]) -> None:
    run = envkit("probe", "--steps", "0")
    assert run.code == 2 and run.out == "" and "error:" in run.err


def test_errors_of_commands_print_one_envelope(project: Path, envkit: Callable[..., Run]) -> None:
    run = envkit("validate", "no-such-env", "--json")
    assert run.code == 2 and run.envelope()["errors"][0]["type"] == "UsageError"


# every command, with arguments that make it fail as a user error (no engine, no network, no training)
FAILING = {
    "audit": ["audit", "no-such-file.txt"],
    "base-image": ["base-image", "Bad Tag!"],
    "build": ["build", "no-such-env"],
    "catalog": ["catalog", "--section", "nope"],
    "catalog refresh-names": ["catalog", "refresh-names", "--file", "no-such-mapping.json"],
    "check": ["check", "--site", ".", "--gpu", "H900"],
    "diff": ["diff", "only-one"],
    "fleet": ["fleet", "history", "no-such-store"],
    "guard": ["guard", "show", "no-such-run"],
    "health": ["health", "--drain", "--node", "x"],
    "images": ["images", "Bad Name"],
    "init": ["init", "--cuda", "99.9"],
    "lock": ["lock", "no-such-env"],
    "pack": ["pack", "no-such-env"],
    "probe": ["probe", "--compare", "a"],
    "render": ["render", "no-such-env"],
    "snapshot": ["snapshot", "--store", "/proc/version/x"],
    "validate": ["validate", "no-such-env"],
    "verify": ["verify", "no-such-env"],
}


def test_every_command_is_covered() -> None:
    from envkit.cli import cli

    assert set(cli.commands) <= set(FAILING), "add the new command to FAILING"


@pytest.mark.parametrize("argv", FAILING.values(), ids=FAILING.keys())
def test_every_command_prints_exactly_one_envelope_on_failure(
    project: Path, envkit: Callable[..., Run], argv: list[str]
) -> None:
    run = envkit(*argv, "--json")
    assert run.code in (2, 3), run.err
    data = run.envelope()
    assert data["ok"] is False and data["errors"] and data["errors"][0]["level"] == "error"


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["guard", "show", "no-such-run"], "guard show"),
        (["catalog", "refresh", "--pages", "/no/such"], "catalog refresh"),
    ],
)
def test_a_subcommands_error_envelope_names_the_whole_command(
    project: Path, envkit: Callable[..., Run], argv: list[str], command: str
) -> None:
    data = envkit(*argv, "--json").envelope()
    assert data["ok"] is False and data["command"] == command
