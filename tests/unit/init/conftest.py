"""Fixtures for `envkit init`: a fresh git repository with a team Makefile."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

TEAM_MAKEFILE = """\
# The team's own Makefile: init must not lose a byte of it.
PY ?= python3

.PHONY: all test
all: test

test:
\t$(PY) -m pytest -q
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A fresh git repository holding a Makefile with its own targets."""
    root = tmp_path / "team-repo"
    root.mkdir()
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "Makefile").write_text(TEAM_MAKEFILE)
    return root


@pytest.fixture
def team_makefile() -> str:
    return TEAM_MAKEFILE


MakeDryRun = Callable[..., str]


@pytest.fixture
def make() -> MakeDryRun:
    """``make(root, *args)``: ``make -n ARGS`` in ``root`` with ENVKIT=envkit; returns stdout."""
    if shutil.which("make") is None:
        pytest.skip("GNU make is not installed")
    return _make


def _make(root: Path, *args: str) -> str:
    proc = subprocess.run(
        ["make", "--no-print-directory", "-n", "ENVKIT=envkit", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout
