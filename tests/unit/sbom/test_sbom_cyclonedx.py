"""The lock's CycloneDX SBOM: valid 1.6, the lock's packages, deterministic; audit reads it as the lock."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envkit.audit.findings import audit_inventory
from envkit.audit.osv_dir import OsvDirService
from envkit.inventory import parse_inventory
from envkit.lock.lockfile import LockContents, parse_conda_lock
from envkit.lock.solver import CondaPackage, PipPackage
from envkit.sbom.cyclonedx import ImageRef, conda_purl, lock_sbom, pypi_purl

LOCK = "inventories/condalock-pangeo-3platforms.yml"  # a real conda-lock.yml: 3 platforms, conda + pip


def _sbom(shared_dir: Path, epoch: int = 1_700_000_000) -> tuple[str, LockContents]:
    contents = parse_conda_lock((shared_dir / LOCK).read_text(), LOCK)
    text = lock_sbom(name="pangeo", lock_sha256="ab" * 32, contents=contents,
                     base=ImageRef("nvidia/cuda:12.1.1-runtime-ubuntu22.04", "sha256:" + "1" * 64),
                     epoch=epoch, cuda="12.1", frameworks={"torch": "2.1.2"})  # fmt: skip
    return text, contents


def test_every_package_of_the_lock_with_purl_and_hashes(shared_dir: Path) -> None:
    text, contents = _sbom(shared_dir)
    data = json.loads(text)
    assert data["specVersion"] == "1.6" and data["bomFormat"] == "CycloneDX"
    assert data["metadata"]["timestamp"] == "2023-11-14T22:13:20+00:00"  # the epoch, not the clock
    expected = {conda_purl(p).to_string() for ps in contents.conda.values() for p in ps}
    expected |= {pypi_purl(p).to_string() for ps in contents.pip.values() for p in ps}
    packages = {c["purl"] for c in data["components"] if c.get("bom-ref") != "base-image"}
    assert packages == expected and len(expected) > 300
    base = next(c for c in data["components"] if c["bom-ref"] == "base-image")
    assert base["purl"] == "pkg:docker/nvidia/cuda@sha256:" + "1" * 64
    one = next(c for c in data["components"] if c["name"] == "_openmp_mutex")
    assert {h["alg"] for h in one["hashes"]} == {"MD5", "SHA-256"}
    assert one["purl"] == (
        "pkg:conda/_openmp_mutex@4.5?build=1_gnu&channel=https://conda.anaconda.org/conda-forge&subdir=linux-64"
        "&type=tar.bz2"
    )
    props = {p["name"]: p["value"] for p in data["metadata"]["component"]["properties"]}
    assert props["envkit:cuda"] == "12.1" and props["envkit:framework:torch"] == "2.1.2"


def test_the_same_lock_gives_the_same_bytes(shared_dir: Path) -> None:
    assert _sbom(shared_dir)[0] == _sbom(shared_dir)[0]
    assert _sbom(shared_dir)[0] != _sbom(shared_dir, epoch=1_700_000_001)[0]


def test_purls() -> None:
    conda = CondaPackage("python", "3.11.2", "h0_envkit", "file:///c/linux-64/python-3.11.2-h0_envkit.conda",
                         "0" * 32, "1" * 64, "linux-64", "linux-64")  # fmt: skip
    assert conda_purl(conda).to_string() == (
        "pkg:conda/python@3.11.2?build=h0_envkit&channel=file:///c&subdir=linux-64&type=conda"
    )
    assert pypi_purl(PipPackage("Typing_Extensions", "4.12.2", "", ())).to_string() == (
        "pkg:pypi/typing-extensions@4.12.2"
    )


def test_audit_of_the_sbom_finds_what_audit_of_the_lock_finds(shared_dir: Path, tmp_path: Path) -> None:
    text, _ = _sbom(shared_dir)
    lock_text = (shared_dir / LOCK).read_text()
    service = OsvDirService(shared_dir / "advisory-db")
    from_lock = parse_inventory(lock_text, path=LOCK, label="lock", platform="linux-64")
    # the SBOM lists every platform; the lock inventory one: compare the linux-64 packages
    sbom = parse_inventory(text, path="sbom.cdx.json", label="sbom")
    assert sbom.format == "cyclonedx"
    linux = {(p.name, p.version, p.installer) for p in from_lock.packages}
    assert linux <= {(p.name, p.version, p.installer) for p in sbom.packages}
    lock_ids = {(f.package, f.id) for f in audit_inventory(from_lock, service)[0]}
    sbom_ids = {(f.package, f.id) for f in audit_inventory(sbom, service)[0]}
    assert lock_ids and lock_ids <= sbom_ids, (lock_ids, sbom_ids)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{"bomFormat": "CycloneDX", "specVersion": "1.6", "components": [{"purl": "pkg:pypi/six@1',
            "invalid JSON",
        ),
        ('{"bomFormat": "CycloneDX", "components": 5}', "not a list"),
        ('{"bomFormat": "CycloneDX", "components": [{"purl": "pkg:deb/debian/bash@5"}]}', "no packages"),
        ('{"spdxVersion": "SPDX-2.3", "name": "x"}', "without a packages list"),
        (
            '{"bomFormat": "CycloneDX", "components": ' + "[" * 100_000 + "]" * 100_000 + "}",
            "nested too deeply",
        ),
    ],
)
def test_hostile_sboms_are_clear_errors(text: str, message: str) -> None:
    from envkit.errors import InventoryError

    with pytest.raises(InventoryError, match=message):
        parse_inventory(text, path="bad.json", label="bad")


def test_deeply_nested_components_are_bounded() -> None:
    inner: dict[str, object] = {"purl": "pkg:pypi/deep@1.0"}
    for _ in range(200):
        inner = {"name": "x", "components": [inner]}
    data = {
        "bomFormat": "CycloneDX",
        "specVersion": "1.6",
        "components": [inner, {"purl": "pkg:pypi/six@1.16.0"}],
    }
    found = parse_inventory(json.dumps(data), path="nested.json", label="n")
    assert [(p.name, p.version) for p in found.packages] == [("six", "1.16.0")]
    assert any("nested deeper" in w for w in found.warnings)


def test_spdx_by_purl() -> None:
    deb = "pkg:deb/debian/bash@5.2"
    numpy = "pkg:conda/numpy@1.26.4?build=py311h0_0&channel=https://conda.anaconda.org/conda-forge"
    data = {"spdxVersion": "SPDX-2.3", "packages": [
        {"name": "six", "versionInfo": "1.16.0", "externalRefs": [
            {"referenceCategory": "PACKAGE-MANAGER", "referenceType": "purl",
             "referenceLocator": "pkg:pypi/six@1.16.0"}]},
        {"name": "numpy", "externalRefs": [{"referenceType": "purl", "referenceLocator": numpy}]},
        {"name": "bash", "externalRefs": [{"referenceType": "purl", "referenceLocator": deb}]},
    ]}  # fmt: skip
    found = parse_inventory(json.dumps(data), path="x.spdx.json", label="x")
    assert {(p.name, p.version, p.installer, p.channel) for p in found.packages} == {
        ("six", "1.16.0", "pip", None), ("numpy", "1.26.4", "conda", "conda-forge")}  # fmt: skip
    assert found.meta["sbom.not-audited"] == "1 deb"
