"""The image's SBOM with its GPU readiness facts (``envkit check IMAGE --sbom FILE``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envkit.catalog import load_catalog
from envkit.cli import main
from envkit.engine.protocol import RunResult
from envkit.engine.testing import FakeEngine
from envkit.errors import ProbeError, UsageError
from envkit.lock.lockfile import LockContents
from envkit.lock.solver import PipPackage
from envkit.readiness.check import fingerprint_facts, readiness_sbom
from envkit.readiness.facts import parse_facts
from envkit.sbom.cyclonedx import SBOM_LABEL, SBOM_PATH, ImageRef, lock_sbom, sbom_sha256
from envkit.sbom.readiness import with_readiness
from tests.unit.readiness.test_rules import paddle_doc

CUDNN = PipPackage(
    "nvidia-cudnn-cu11", "8.6.0.163", "https://files.example/nvidia_cudnn_cu11-8.6.0.163.whl", ("3" * 64,)
)


def _sbom() -> str:
    contents = LockContents(("linux-64",), (), {}, {"linux-64": (CUDNN,)})
    return lock_sbom(name="cuda11.8-paddle2.6", lock_sha256="ab" * 32, contents=contents,
                     base=ImageRef("envkit/debian-python:bookworm"), epoch=1, cuda="11.8",
                     frameworks={"paddle": "2.6.2"})  # fmt: skip


def _props(text: str) -> dict[str, str]:
    doc = json.loads(text)
    return {p["name"]: p["value"] for p in doc["metadata"]["component"]["properties"]}


FLOORS = {"cuda": "11.8", "toolkit": "520.61.05", "minor-version": "450.80.02"}


def _summary() -> dict[str, Any]:
    return fingerprint_facts(parse_facts(json.dumps(paddle_doc()), "t"))


def test_the_sbom_gains_loaded_versions_gpu_code_and_floors_and_keeps_the_rest() -> None:
    before = _sbom()
    after = with_readiness(before, _summary(), FLOORS)
    props = _props(after)
    assert props["envkit:gpu:paddle:loaded:cudnn"] == "8.6.0"
    assert props["envkit:gpu:paddle:cuda-build"] == "11.8"
    assert props["envkit:gpu:code:libphi.so:ptx"] == "none"
    assert "sm_86" in props["envkit:gpu:code:libphi.so:sass"].split()
    assert props["envkit:gpu:code:libcublasLt.so.11:ptx"] == "compute_90"
    assert props["envkit:cuda:driver-floor:minor-version"] == "450.80.02"
    assert props["envkit:cuda"] == "11.8" and props["envkit:lock-sha256"] == "ab" * 32  # kept
    a, b = json.loads(before), json.loads(after)
    assert b["version"] == a["version"] + 1 and b["serialNumber"] == a["serialNumber"]
    assert b["components"] == a["components"]
    # applied again (another check of the same image): replaced, not doubled
    again = json.loads(with_readiness(after, _summary(), {}))
    names = [p["name"] for p in again["metadata"]["component"]["properties"]]
    assert len(names) == len(set(names)) and "envkit:cuda:driver-floor:toolkit" not in names
    assert with_readiness(before, _summary(), FLOORS) == after  # deterministic


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "not JSON"),
        ("[" * 100_000, "not JSON"),
        ('{"bomFormat": "SPDX"}', "not a CycloneDX"),
        ('{"bomFormat": "CycloneDX", "specVersion": "1.6"}', "names no image"),
        ('{"bomFormat": "CycloneDX", "specVersion": "1.6", "metadata": {"component": 3}}', "names no image"),
        ('{"bomFormat": "CycloneDX", "specVersion": "1.6", "metadata": {"component": {}}}', "validate"),
    ],
)
def test_hostile_sboms_are_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        with_readiness(text, _summary(), FLOORS)


def _engine(sbom: str, label: str | None, code: int = 0) -> FakeEngine:
    engine = FakeEngine(handler=lambda run: RunResult(code, sbom if run.argv[-1] == SBOM_PATH else "", "x"))
    engine.add_image("envkit/f:latest", "sha256:f", labels={SBOM_LABEL: label} if label else {})
    return engine


def test_the_sbom_is_read_from_the_image_and_must_match_its_label() -> None:
    facts, catalog, text = parse_facts(json.dumps(paddle_doc()), "t"), load_catalog(), _sbom()
    out = readiness_sbom(_engine(text, sbom_sha256(text)), "envkit/f:latest", facts, catalog)
    assert _props(out)["envkit:cuda:driver-floor:cuda"] == "11.8"
    with pytest.raises(UsageError, match="carries no SBOM"):
        readiness_sbom(_engine(text, None), "envkit/f:latest", facts, catalog)
    with pytest.raises(ProbeError, match="not the one its"):
        readiness_sbom(_engine(text + " ", sbom_sha256(text)), "envkit/f:latest", facts, catalog)
    with pytest.raises(ProbeError, match="unreadable"):
        readiness_sbom(_engine(text, sbom_sha256(text), code=1), "envkit/f:latest", facts, catalog)
    forged = '{"bomFormat": "SPDX"}'
    with pytest.raises(ProbeError, match="not a CycloneDX"):
        readiness_sbom(_engine(forged, sbom_sha256(forged)), "envkit/f:latest", facts, catalog)


def test_sbom_without_an_image_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--site", str(tmp_path), "--sbom", str(tmp_path / "s.json")]) == 2
    assert "--sbom needs an IMAGE" in capsys.readouterr().err
    assert not (tmp_path / "s.json").exists()
