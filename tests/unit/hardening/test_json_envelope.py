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
