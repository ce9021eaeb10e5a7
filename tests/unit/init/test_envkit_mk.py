"""Every env-* target in the generated envkit.mk expands to the documented envkit commands."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from envkit.init import init_repo

NAME = "cpu-torch-team"
BASELINE = f"environments/baselines/{NAME}.json"
CURRENT = f".envkit/reports/{NAME}.json"
HTML = f".envkit/reports/{NAME}-compare.html"
LOCK_CHECK = f"envkit lock {NAME} --check"
AUDIT = f"envkit audit {NAME} --fail-on high"
BUILD = f"envkit build {NAME}"
PROBE = f"envkit probe --image {NAME} -o {CURRENT} --label current"
COMPARE = f"envkit probe --compare {BASELINE} {CURRENT} --html {HTML}"

# target -> the envkit commands it runs, in order
EXPECTED = {
    "env-install": [],  # pip installs envkit from its pinned source; no envkit command
    "env-lock": [f"envkit lock {NAME}"],
    "env-build": [BUILD],
    "env-probe": [BUILD, PROBE],
    "env-baseline": [BUILD, f"envkit probe --image {NAME} -o {BASELINE} --label baseline"],
    "env-compare": [COMPARE],
    "env-snapshot": ["envkit snapshot -o .envkit/reports/snapshot.json"],
    "env-diff": [f"envkit diff {BASELINE} {CURRENT}"],
    "env-audit": [AUDIT],
    "env-check": [LOCK_CHECK, AUDIT, BUILD, PROBE, COMPARE],
}


@pytest.fixture
def team(repo: Path) -> Path:
    init_repo(repo, "torch", "cpu", name=NAME)
    return repo


def envkit_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("envkit ")]


@pytest.mark.parametrize(("target", "commands"), sorted(EXPECTED.items()))
def test_target_expands_to_documented_commands(
    team: Path, make: Any, target: str, commands: list[str]
) -> None:
    assert envkit_lines(make(team, target)) == commands


def test_every_env_target_is_covered(team: Path) -> None:
    declared = set(re.findall(r"^(env-[a-z-]+):", (team / "envkit.mk").read_text(), re.MULTILINE))
    assert declared - {"env-help"} == set(EXPECTED)
    for required in (
        "env-lock",
        "env-build",
        "env-probe",
        "env-compare",
        "env-diff",
        "env-audit",
        "env-check",
    ):
        assert required in declared


def test_variables_can_be_overridden(team: Path, make: Any) -> None:
    out = make(team, "env-check", "ENV=other", "BASELINE=base.json", "LABEL=ci", "AUDIT_FAIL_ON=critical")
    assert envkit_lines(out) == [
        "envkit lock other --check",
        "envkit audit other --fail-on critical",
        "envkit build other",
        "envkit probe --image other -o .envkit/reports/other.json --label ci",
        "envkit probe --compare base.json .envkit/reports/other.json"
        " --html .envkit/reports/other-compare.html",
    ]
    diff = make(team, "env-diff", "DIFF_A=a.txt", "DIFF_B=b.txt")
    assert envkit_lines(diff) == ["envkit diff a.txt b.txt"]


def test_envkit_variable_is_used(team: Path, make: Any) -> None:
    out = make(team, "env-lock", "ENVKIT=python -m envkit")
    assert f"python -m envkit lock {NAME}" in out.splitlines()


def test_env_help_lists_targets(team: Path, make: Any) -> None:
    make(team, "env-help")  # resolves; now run it for real (it only prints)
    proc = subprocess.run(
        ["make", "--no-print-directory", "env-help"], cwd=team, capture_output=True, text=True, check=True
    )
    for target in EXPECTED:
        assert re.search(rf"^\s+{target}\s+\S", proc.stdout, re.MULTILINE), target
    assert f"environment {NAME}" in proc.stdout
