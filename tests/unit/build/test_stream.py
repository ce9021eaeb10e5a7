"""One build loop: ``envkit.build.stream.stream_build`` is where every image build meets the engine."""

from __future__ import annotations

import re
from pathlib import Path

import envkit


def test_the_engine_builds_from_one_loop() -> None:
    package = Path(envkit.__file__).resolve().parent
    callers = [
        str(p.relative_to(package))
        for p in sorted(package.rglob("*.py"))
        if re.search(r"\bengine\.build\(", p.read_text(encoding="utf-8"))
    ]
    assert callers == ["build/stream.py"]
