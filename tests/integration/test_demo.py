"""`make demo` keeps working: every step but the Docker one, in a copy of the project (marker frameworks)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from envkit import demo
from tests.conftest import shared_path

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.frameworks


def test_demo_without_docker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for folder in ("environments", "images"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(demo, "docker_reachable", lambda: False)
    monkeypatch.setattr(demo, "SHARED", shared_path())
    demo.main()
    out = capsys.readouterr().out
    assert "probing the host only" in out
    assert "verdict: equivalent" in out or "verdict: identical" in out
    assert (tmp_path / ".envkit" / "demo" / "compare-threads.html").is_file()
    assert "first non-finite output: head (NaiveLogSoftmax)" in out
    assert "step 3: reproducible" in out
    assert (tmp_path / ".envkit" / "demo" / "snapshot.json").is_file()
    assert not list((tmp_path / "images").rglob("*.tmp"))
