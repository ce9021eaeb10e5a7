"""``carried_sbom``: an image's SBOM read back once, under one size limit, only when its label names it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envkit.engine.protocol import RunResult
from envkit.engine.testing import FakeEngine
from envkit.errors import SbomNotCarried
from envkit.sbom import carried
from envkit.sbom.carried import MAX_SBOM_BYTES, carried_sbom
from envkit.sbom.cyclonedx import SBOM_LABEL, SBOM_PATH, sbom_sha256

IMAGE = "envkit/s:latest"
TEXT = '{"bomFormat": "CycloneDX", "specVersion": "1.6"}'


def _engine(sbom: str, label: str | None, code: int = 0) -> FakeEngine:
    engine = FakeEngine(
        handler=lambda run: RunResult(code, sbom if run.argv == ("cat", SBOM_PATH) else "", "x")
    )
    engine.add_image(IMAGE, "sha256:s", labels={SBOM_LABEL: label} if label else {})
    return engine


def test_the_sbom_its_label_names_is_read_back() -> None:
    engine = _engine(TEXT, sbom_sha256(TEXT))
    assert carried_sbom(engine, IMAGE) == TEXT
    assert carried_sbom(engine, "sha256:s") == TEXT  # by image ID too (the debug image's runtime)
    assert [r.gpus for r in engine.runs] == [False, False]


@pytest.mark.parametrize(
    ("text", "label", "code", "why", "labelled"),
    [
        (TEXT, None, 0, f"no {SBOM_LABEL} label", False),
        (TEXT + " ", sbom_sha256(TEXT), 0, "not the one its", True),
        (TEXT, sbom_sha256(TEXT), 1, "unreadable", True),
    ],
)
def test_an_sbom_that_is_not_the_labelled_one_is_refused(
    text: str, label: str | None, code: int, why: str, labelled: bool
) -> None:
    with pytest.raises(SbomNotCarried, match=re.escape(why)) as caught:
        carried_sbom(_engine(text, label, code), IMAGE)
    assert caught.value.labelled is labelled and why in caught.value.why


def test_no_image_is_no_sbom() -> None:
    with pytest.raises(SbomNotCarried, match="no such image"):
        carried_sbom(FakeEngine(), "envkit/none:latest")


def test_past_the_one_limit_even_a_matching_sbom_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(carried, "MAX_SBOM_BYTES", len(TEXT) - 1)
    with pytest.raises(SbomNotCarried, match=f"larger than {len(TEXT) - 1} bytes"):
        carried_sbom(_engine(TEXT, sbom_sha256(TEXT)), IMAGE)
    assert MAX_SBOM_BYTES == 32 << 20


def test_the_sbom_is_read_from_an_image_in_one_place() -> None:
    package = Path(carried.__file__).resolve().parents[1]
    readers = [
        str(p.relative_to(package))
        for p in sorted(package.rglob("*.py"))
        if re.search(r"\[\s*\"cat\",\s*SBOM_PATH\s*\]", p.read_text(encoding="utf-8"))
    ]
    assert readers == ["sbom/carried.py"]
    limits = [
        p for p in sorted(package.rglob("*.py")) if "MAX_SBOM_BYTES = " in p.read_text(encoding="utf-8")
    ]
    assert [str(p.relative_to(package)) for p in limits] == ["sbom/carried.py"]
