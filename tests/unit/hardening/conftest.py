"""Shared helpers for the hostile-input suite: a scratch project and a CLI runner that
fails the test on any traceback."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from envkit.cli import main

REPO = Path(__file__).resolve().parents[3]

GOOD_SPEC = """\
name: {name}
description: {description}
python: "3.11"
cuda: cpu
frameworks:
  torch: "2.13.0"
"""


@dataclass
class Run:
    code: int
    out: str
    err: str

    def envelope(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.out)
        assert set(data) == {"envkit", "schema", "command", "ok", "result", "errors"}
        return data


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(REPO / "environments", tmp_path / "environments")
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def envkit(capsys: pytest.CaptureFixture[str]) -> Callable[..., Run]:
    def run(*argv: str) -> Run:
        code = main(list(argv))
        captured = capsys.readouterr()
        for stream in (captured.out, captured.err):
            assert "Traceback" not in stream, stream
        return Run(code, captured.out, captured.err)

    return run


def write_spec(project: Path, name: str, body: str) -> Path:
    path = project / "environments" / f"{name}.yaml"
    path.write_text(body, "utf-8")
    return path
