"""`make demo` on a fresh clone: a snapshot inside a real image diffed against the host's, and audited."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envkit import demo
from envkit.engine.docker_api import DockerEngine
from tests.conftest import shared_path

pytestmark = pytest.mark.docker

IMAGE = "envkit/debian-python:bookworm"  # `envkit base-image` makes it (the demo's first Docker step)


def test_demo_diffs_the_image_against_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if DockerEngine(timeout=10).inspect(IMAGE) is None:
        pytest.skip(f"{IMAGE} is not built here (envkit base-image)")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(demo, "demo_image", lambda: IMAGE)
    monkeypatch.setattr(demo, "SHARED", tmp_path / "no-shared")
    db = shared_path() / "advisory-db"
    monkeypatch.setenv("ENVKIT_ADVISORY_DB", str(db))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    outputs = demo.inventory_step()
    out = capsys.readouterr().out
    inside = json.loads((tmp_path / demo.OUT / "snapshot-image.json").read_text())
    assert inside["python"].startswith("3.") and inside["facts"].get("os", "").startswith("Debian")
    assert f"$ envkit diff {demo.OUT / 'snapshot-image.json'} {demo.OUT / 'snapshot.json'}" in out
    assert "WARNING" in out and "no differences" not in out  # the host venv has torch, the image does not
    if (db / "vulns").is_dir():
        assert any(o.endswith("audit.sarif") for o in outputs)
    else:
        assert "no advisory database" in out
