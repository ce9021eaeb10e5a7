"""No test file or docs page is named after a development round, wave or issue: a name says what it holds
(``test_round2.py`` held spikes, dump budgets, the ledger and the incident page)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HISTORY = re.compile(r"(?:^|[_.-])(?:round|wave|sprint|phase|iteration|issue|pr)[_-]?\d+(?:$|[_.-])", re.I)


def named_files() -> list[str]:
    """The tracked (and new, not ignored) files under tests/, benchmarks/ and docs/."""
    done = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "tests", "benchmarks", "docs"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return [line for line in done.stdout.splitlines() if line.endswith((".py", ".md"))]


def test_no_test_or_page_is_named_after_a_round() -> None:
    files = named_files()
    assert any(f.startswith("tests/unit/") for f in files) and any(f.startswith("docs/") for f in files)
    wrong = [f for f in files if HISTORY.search(Path(f).stem)]
    assert not wrong, f"named after the project's history, not what they hold: {wrong}"


@pytest.mark.parametrize(
    "stem", ["test_round2", "test_adopt_round4", "test_issue34_classes", "wave-3", "test_pr12_fix", "Round_1"]
)
def test_history_names_are_found(stem: str) -> None:
    assert HISTORY.search(stem)


@pytest.mark.parametrize(
    "stem",
    ["test_init_lock_roundtrip", "test_spikes", "test_cuda12", "test_issues_page", "test_prune", "probe"],
)
def test_names_of_things_pass(stem: str) -> None:
    assert not HISTORY.search(stem)
