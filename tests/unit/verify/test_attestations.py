"""Provenance statements and the checks ``envkit verify`` runs on an image's SBOM and provenance.

Hostile files (truncated, huge, deeply nested, wrong shape, packages the lock lacks) give a
clear error or a finding, never a traceback.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

import pytest

from envkit.errors import UsageError
from envkit.lock import LockState
from envkit.lock.lockfile import LockContents
from envkit.lock.lockset import Lock
from envkit.lock.solver import CondaPackage, PipPackage
from envkit.sbom.cyclonedx import SBOM_LABEL, SBOM_NAME, ImageRef, lock_sbom
from envkit.sbom.provenance import (
    MAX_PROVENANCE_BYTES,
    Material,
    provenance_path,
    provenance_statement,
    read_provenance,
    write_provenance,
)
from envkit.verify.attestations import check_provenance, check_sbom

IMAGE = "sha256:" + "c" * 64
LOCK_SHA = "ab" * 32
CONDA = CondaPackage("tinylib", "1.2.0", "pyh0_0", "file:///ch/noarch/tinylib-1.2.0-pyh0_0.conda",
                     "0" * 32, "1" * 64, "linux-64", "noarch")  # fmt: skip
SIX = PipPackage("six", "1.16.0", "https://files.example/six-1.16.0-py2.py3-none-any.whl", ("2" * 64,))


def _lock(pip: tuple[PipPackage, ...] = (SIX,)) -> LockState:
    contents = LockContents(("linux-64",), ("file:///ch",), {"linux-64": (CONDA,)}, {"linux-64": pip})
    return LockState("fresh", "", (), Lock(Path("."), "0" * 64, contents, {}, LOCK_SHA))


def _nested(depth: int) -> object:
    value: object = {}
    for _ in range(depth):
        value = [value]
    return value


def _statement(image_id: str = IMAGE, lock: str = LOCK_SHA) -> dict[str, object]:
    now = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
    return provenance_statement(
        name="x", image_id=image_id, external={"name": "x"}, internal={"source_date_epoch": "1"},
        materials=[Material("base-image", "docker-image://b", "sha256:" + "b" * 64),
                   Material("lock", "l", lock)],
        byproducts=[Material("sbom", "file:images/x/sbom.cdx.json", "d" * 64)], started=now, finished=now,
    )  # fmt: skip


def test_statement_shape_and_round_trip(tmp_path: Path) -> None:
    path = write_provenance(tmp_path, "x", _statement())
    assert path == provenance_path(tmp_path, "x", IMAGE) and path.name == f"x-{'c' * 12}.intoto.json"
    data = read_provenance(path)
    assert data["_type"] == "https://in-toto.io/Statement/v1"
    assert data["predicateType"] == "https://slsa.dev/provenance/v1"
    deps = {d["name"]: d for d in data["predicate"]["buildDefinition"]["resolvedDependencies"]}
    assert deps["base-image"]["digest"] == {"sha256": "b" * 64}
    assert deps["envkit"]["uri"].startswith("pkg:pypi/")
    labels = {"io.envkit.lock-sha256": LOCK_SHA}
    assert check_provenance(tmp_path, "x", IMAGE, labels, "sha256:" + "b" * 64) == []
    findings = check_provenance(tmp_path, "x", IMAGE, labels, "sha256:" + "e" * 64)
    assert findings and "base image" in findings[0]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (lambda: json.dumps(_statement())[:200], "invalid JSON"),  # truncated
        (lambda: "[" * 50_000 + "]" * 50_000, "nested too deeply|nested deeper"),
        (lambda: json.dumps({"a": _nested(40)}), "nested deeper"),
        (lambda: " " * (MAX_PROVENANCE_BYTES + 1), "larger than"),
        (lambda: json.dumps({"_type": "x"}), "not an in-toto statement"),
        (lambda: json.dumps({**_statement(), "subject": [{"name": "x"}]}), "subject"),
        (lambda: "\udcff", "cannot read|invalid"),
    ],
)
def test_hostile_provenance(tmp_path: Path, content: object, message: str) -> None:
    path = provenance_path(tmp_path, "x", IMAGE)
    path.parent.mkdir(parents=True)
    text = content()  # type: ignore[operator]
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(UsageError, match=message):
        read_provenance(path)
    findings = check_provenance(tmp_path, "x", IMAGE, {}, None)  # verify: a finding, not a traceback
    assert len(findings) == 1 and str(path) in findings[0]


def test_provenance_of_another_image_or_lock(tmp_path: Path) -> None:
    write_provenance(tmp_path, "x", _statement(lock="f" * 64))
    findings = check_provenance(tmp_path, "x", IMAGE, {"io.envkit.lock-sha256": LOCK_SHA}, None)
    assert len(findings) == 1 and "lock" in findings[0]


def _write_sbom(directory: Path, lock: LockState) -> dict[str, str]:
    assert lock.lock is not None
    text = lock_sbom(name="x", lock_sha256=LOCK_SHA, contents=lock.lock.contents, base=ImageRef("b"), epoch=1,
                     cuda="cpu", frameworks={})  # fmt: skip
    (directory / SBOM_NAME).write_text(text)
    return {SBOM_LABEL: hashlib.sha256(text.encode()).hexdigest()}


def test_the_sbom_of_the_lock_has_no_findings(tmp_path: Path) -> None:
    labels = _write_sbom(tmp_path, _lock())
    assert check_sbom(tmp_path, labels, _lock()) == []


def test_an_sbom_with_packages_the_lock_lacks(tmp_path: Path) -> None:
    extra = PipPackage("evil", "6.6.6", "", ("3" * 64,))
    labels = _write_sbom(tmp_path, _lock((SIX, extra)))
    findings = check_sbom(tmp_path, labels, _lock())
    assert findings == [f"{tmp_path / SBOM_NAME}: packages the lock does not have: evil==6.6.6 (pip)"]
    findings = check_sbom(tmp_path, labels, _lock((SIX, extra, PipPackage("numpy", "2.0.0", "", ()))))
    assert any("packages of the lock it does not list: numpy==2.0.0 (pip)" in f for f in findings)


def test_an_edited_truncated_or_missing_sbom(tmp_path: Path) -> None:
    labels = _write_sbom(tmp_path, _lock())
    path = tmp_path / SBOM_NAME
    path.write_text(path.read_text()[:300])
    findings = check_sbom(tmp_path, labels, _lock())
    assert "is not the image's io.envkit.sbom-sha256" in findings[0] and "unreadable SBOM" in findings[1]
    path.write_text("[" * 100_000)
    assert any("nested too deeply" in f for f in check_sbom(tmp_path, labels, _lock()))
    path.unlink()
    assert "missing" in check_sbom(tmp_path, labels, _lock())[0]
    assert check_sbom(tmp_path, {}, _lock()) == []  # an image from before SBOMs: nothing to check


def test_spec_sbom_names_only_the_frameworks_the_spec_sets() -> None:
    # the shipped Paddle flagship: no envkit:framework:torch property (it was one with no value)
    from envkit.sbom.cyclonedx import spec_sbom
    from envkit.spec.load import load_spec

    root = Path(__file__).resolve().parents[3]
    spec = load_spec(root / "environments" / "cuda11.8-paddle2.6.yaml").spec
    text = spec_sbom(spec, _lock(), ImageRef("envkit/debian-base:12", IMAGE), 1_700_000_000)
    assert text is not None
    props = json.loads(text)["metadata"]["component"]["properties"]
    frameworks = {p["name"]: p.get("value") for p in props if p["name"].startswith("envkit:framework:")}
    assert frameworks == {"envkit:framework:paddle": spec.frameworks.paddle}
