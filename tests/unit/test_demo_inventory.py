"""The demo's inventory step on a fresh clone: no ../shared beside it, maybe no Docker, no advisory DB."""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit import demo


def test_without_image_shared_or_database_it_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(demo, "demo_image", lambda: None)
    monkeypatch.setattr(demo, "SHARED", tmp_path / "no-shared")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("ENVKIT_ADVISORY_DB", raising=False)
    outputs = demo.inventory_step()
    out = capsys.readouterr().out
    assert outputs == [str(demo.OUT / "snapshot.json")]
    assert "diff" not in [line.split()[1] for line in out.splitlines() if line.startswith("$ envkit")]
    hint = [line for line in out.splitlines() if "no advisory database" in line]
    assert len(hint) == 1 and "envkit audit --update-db" in hint[0]


def test_an_advisory_database_in_the_cache_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("ENVKIT_ADVISORY_DB", raising=False)
    monkeypatch.setattr(demo, "SHARED", tmp_path / "no-shared")
    assert demo.advisory_db() is None
    (tmp_path / "cache" / "envkit" / "advisory-db" / "vulns").mkdir(parents=True)
    assert demo.advisory_db() == tmp_path / "cache" / "envkit" / "advisory-db"
