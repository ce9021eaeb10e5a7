"""The environment and image targets on a lock written by ``envkit lock`` (fake solvers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.audit.service import Vuln
from envkit.audit.targets import audit_environment, audit_image
from envkit.audit.testing import FakeVulnService
from envkit.catalog import load_catalog
from envkit.engine.protocol import ImageInfo
from envkit.errors import ExitCode, InventoryError
from envkit.lock import CondaPackage, PipPackage, current_lock, lock_environment
from envkit.lock.testing import FakeCondaSolver, FakePipResolver
from envkit.render.dockerfile import LOCK_LABEL, DockerfileInputs, labels
from envkit.spec.load import LoadedSpec, load_spec
from envkit.spec.resolve import resolve_spec
from tests.unit.audit.test_audit_outputs import fake_engine, request

SHA = "ab" * 32
PLATFORMS = ("linux-64", "linux-aarch64")


def _conda(name: str, version: str, build: str, platform: str) -> CondaPackage:
    url = f"https://conda.anaconda.org/conda-forge/{platform}/{name}-{version}-{build}.conda"
    return CondaPackage(name, version, build, url, "cd" * 16, SHA, platform, platform, ())


def _locked(tmp_path: Path) -> tuple[LoadedSpec, Path]:
    (tmp_path / "environments").mkdir()
    path = tmp_path / "environments" / "demo.yaml"
    path.write_text(
        'name: demo\npython: "3.11"\ncuda: cpu\ninstaller: miniforge\nconda:\n  - pillow>=9\n'
        "pip:\n  - requests>=2\nplatforms: [linux-64, linux-aarch64]\n",
        "utf-8",
    )
    loaded = load_spec(path)
    conda = FakeCondaSolver(
        {
            p: (
                _conda("python", "3.11.9", "hab00c5b_0_cpython", p),
                _conda("openssl", "3.0.8", "h0b41bf4_0", p),
                _conda("pillow", "9.2.0", "py311h9461556_3", p),
            )
            for p in PLATFORMS
        }
    )
    pip = FakePipResolver((PipPackage("requests", "2.28.1", "https://x/requests-2.28.1.whl", (SHA,)),))
    out = tmp_path / "images" / "demo"
    lock_environment(loaded, out, conda, pip)
    return loaded, out


def test_environment_audits_its_lock_and_the_lock_is_fresh(tmp_path: Path) -> None:
    loaded, out = _locked(tmp_path)
    service = FakeVulnService(
        {
            ("pillow", "9.2.0"): [Vuln("PYSEC-P", "pillow bad", fixed_in=("9.3.0",))],
            ("openssl", "3.0.8"): [Vuln("PYSEC-O", "PyPI openssl is another project")],
        }
    )
    report = audit_environment(loaded, out, request(service))
    ids = sorted(f.id for f in report.findings)
    assert "PYSEC-P" in ids and "PYSEC-O" not in ids
    assert not [i for i in ids if i.startswith("lock-")]
    asked = {(d.name, d.version) for d in service.queried}
    assert {("pillow", "9.2.0"), ("requests", "2.28.1")} <= asked
    assert ("openssl", "3.0.8") not in asked
    assert {"openssl", "python"} <= {n.name for n in report.not_covered}


def test_environment_with_an_edited_spec_reports_a_stale_lock(tmp_path: Path) -> None:
    loaded, out = _locked(tmp_path)
    spec = loaded.spec.model_copy(update={"pip": ("requests>=2.30",)})
    edited = LoadedSpec(spec, loaded.path, "f" * 64, resolve_spec(spec, load_catalog()))
    report = audit_environment(edited, out, request(FakeVulnService()))
    assert [f.id for f in report.findings if f.id.startswith("lock-")] == ["lock-stale"]
    assert report.exit_code("high") == ExitCode.FINDINGS


def test_image_labelled_by_the_build_matches_the_lock(tmp_path: Path) -> None:
    loaded, out = _locked(tmp_path)
    built = labels(loaded.spec, DockerfileInputs.from_lock(loaded.sha256, current_lock(loaded, out)))
    listing = '[{"name": "requests", "version": "2.28.1"}]'
    for image_labels, expected in ((built, []), ({}, ["image-lock-mismatch"])):
        info = ImageInfo(id="sha256:1", tags=("demo:1",), labels=image_labels, user="envkit", size=1)
        report = audit_image(
            fake_engine(info, listing), "demo:1", request(FakeVulnService()), loaded=loaded, image_dir=out
        )
        assert [f.id for f in report.findings if f.id.startswith(("image-", "lock-"))] == expected
    assert LOCK_LABEL in built


def test_image_with_garbled_pip_list_is_an_input_error() -> None:
    info = ImageInfo(id="sha256:1", tags=(), labels={}, user="app", size=1)
    with pytest.raises(InventoryError, match="image:t:1") as caught:
        audit_image(fake_engine(info, "pip: warning\n[oops"), "t:1", request(FakeVulnService()))
    assert caught.value.exit_code == ExitCode.USAGE
