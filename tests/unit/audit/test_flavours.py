"""Class 8 (issue 26): flavour-named distributions get their base project's advisories.

Against the real PyPA advisory data (``../shared/advisory-db``), which files PaddlePaddle's
advisories under ``paddlepaddle`` only and CVE-2023-4863 once per OpenCV package.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envkit.audit.findings import audit_inventory
from envkit.audit.flavours import Flavour, _entry, base_dep, load_flavours
from envkit.audit.osv_dir import OsvDirService
from envkit.audit.service import Dep, Vuln
from envkit.audit.testing import FakeVulnService
from envkit.cli import main
from envkit.errors import CatalogError
from envkit.inventory import parse_inventory, read_inventory

DATA = Path(__file__).resolve().parents[2] / "data" / "inventories"


def _findings(text: str, db: Path) -> list[Any]:
    inventory = parse_inventory(text, path="freeze.txt", label="x", format="pip-freeze")
    findings, checked, not_checked, _ = audit_inventory(inventory, OsvDirService(db))
    assert not_checked == [] and checked == len(inventory.packages)
    return findings


@pytest.fixture
def db(shared_dir: Path) -> Path:
    return shared_dir / "advisory-db"


def test_paddlepaddle_gpu_at_a_vulnerable_version_gets_the_paddlepaddle_advisories(db: Path) -> None:
    # the case: 2.1.3.post112 (PaddlePaddle 2.1.3 for CUDA 11.2), listed in PYSEC-2022-43063
    findings = _findings("paddlepaddle-gpu==2.1.3.post112\n", db)
    assert {f.id for f in findings} == {
        "PYSEC-2022-43063",
        "PYSEC-2023-122",
        "PYSEC-2023-123",
        "PYSEC-2023-124",
        "PYSEC-2023-125",
        "PYSEC-2023-126",
    }
    for finding in findings:
        assert finding.package == "paddlepaddle-gpu" and finding.version == "2.1.3.post112"
        assert "advisory of paddlepaddle" in finding.message and "flavour mapping" in finding.message
    critical = next(f for f in findings if f.id == "PYSEC-2022-43063")
    assert critical.severity == "critical"


def test_a_real_requirements_file_with_paddlepaddle_gpu(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["audit", str(DATA / "requirements-paddlegpu-UIE-X.txt"), "--db", str(db), "--json"])
    result = json.loads(capsys.readouterr().out)["result"]
    assert code == 1
    hits = {(f["package"], f["id"]) for f in result["findings"]}
    assert ("paddlepaddle-gpu", "PYSEC-2023-126") in hits  # fixed in 2.5.0; 2.4.1.post112 is before it


def test_without_the_mapping_paddlepaddle_gpu_would_be_reported_clean(db: Path) -> None:
    """What the mapping fixes: the database has no folder for the flavour name."""
    assert OsvDirService(db).query(Dep("paddlepaddle-gpu", "2.1.3.post112"))[1] == []


@pytest.mark.parametrize(
    "freeze",
    [
        "opencv-python==4.8.1.78\nopencv-python-headless==4.8.1.78\n",  # CVE-2023-4863 fixed in 4.8.1.78
        "tensorflow-cpu==2.12.0\ntensorflow-gpu==2.12.0\n",
        "onnxruntime==1.16.0\nonnxruntime-gpu==1.16.0\n",
    ],
)
def test_a_cpu_gpu_variant_pair_at_a_fixed_version_gets_none(db: Path, freeze: str) -> None:
    assert _findings(freeze, db) == []


def test_a_real_freeze_with_headless_and_contrib_opencv_at_fixed_versions(shared_dir: Path, db: Path) -> None:
    # opencv-python-headless==4.10.0.84 and opencv-contrib-python 4.9.0.80 (from its wheel URL)
    inventory = read_inventory(
        shared_dir / "inventories" / "pipfreeze-wheelurl-localver-nix_python_cuda_flake.txt"
    )
    names = {p.name: p.version for p in inventory.packages}
    assert names["opencv-python-headless"] == "4.10.0.84" and names["opencv-contrib-python"] == "4.9.0.80"
    findings, *_ = audit_inventory(inventory, OsvDirService(db))
    assert not [f for f in findings if f.package and f.package.startswith("opencv")]


def test_headless_opencv_at_a_vulnerable_version_gets_both_records(db: Path) -> None:
    findings = _findings("opencv-python-headless==4.5.5.64\n", db)
    by_id = {f.id: f for f in findings}
    assert set(by_id) == {"PYSEC-2023-183", "PYSEC-2023-184"}
    assert "flavour mapping" in by_id["PYSEC-2023-183"].message  # filed under opencv-python
    assert "flavour mapping" not in by_id["PYSEC-2023-184"].message  # filed under its own name


def test_tensorflow_gpu_keeps_its_own_records_and_merges_the_shared_ones(db: Path) -> None:
    own = OsvDirService(db).query(Dep("tensorflow-gpu", "2.4.0"))[1]
    findings = _findings("tensorflow-gpu==2.4.0\n", db)
    assert len(findings) >= len(own) > 100
    cves = [sorted(i for i in f.ids if i.startswith("CVE-")) for f in findings]
    flat = [c for group in cves for c in group]
    assert len(flat) == len(set(flat))  # one finding per CVE: the tensorflow copy merged by alias


def test_conda_pytorch_is_audited_as_torch_and_says_so(db: Path) -> None:
    text = "# Name  Version  Build  Channel\npytorch  1.13.0  py3.9_cuda11.7_cudnn8.5.0_0  pytorch\n"
    inventory = parse_inventory(text, path="conda.txt", label="x", format="conda-list")
    findings, checked, *_ = audit_inventory(inventory, OsvDirService(db))
    assert checked == 1 and "PYSEC-2022-43015" in {f.id for f in findings}
    assert all("conda pytorch is PyPI torch" in f.message for f in findings)


def test_a_flavour_is_checked_when_only_the_base_answers() -> None:
    vuln = Vuln("PYSEC-1", "s", fixed_in=("2.5.0",))
    service = FakeVulnService(
        {("paddlepaddle", "2.4.1"): [vuln]}, skip={"paddlepaddle-gpu": "not on the index"}
    )
    inventory = parse_inventory("paddlepaddle-gpu==2.4.1.post112\n", path="f", label="x", format="pip-freeze")
    findings, checked, not_checked, _ = audit_inventory(inventory, service)
    assert (checked, not_checked, [f.id for f in findings]) == (1, [], ["PYSEC-1"])
    assert service.queried == [Dep("paddlepaddle-gpu", "2.4.1.post112"), Dep("paddlepaddle", "2.4.1")]


def test_the_mapping_data_is_sourced_and_sane() -> None:
    flavours = load_flavours()
    assert {"paddlepaddle-gpu", "tensorflow-gpu", "opencv-python-headless"} <= set(flavours)
    for name, flavour in flavours.items():
        assert flavour.project != name and flavour.project not in flavours
        assert len(flavour.source) > 40
    assert base_dep(Dep("paddlepaddle-gpu", "2.6.1.post120")) == (
        Dep("paddlepaddle", "2.6.1"),
        flavours["paddlepaddle-gpu"],
    )
    assert base_dep(Dep("tensorflow-gpu", "2.4.0.post1"))[0] == Dep("tensorflow", "2.4.0.post1")  # type: ignore[index]
    assert base_dep(Dep("numpy", "1.0")) is None


@pytest.mark.parametrize(
    "raw",
    [
        [],
        {"distribution": "a", "project": "b", "version": "same"},
        {"distribution": "a", "project": "b", "version": "guess", "source": "s"},
        {"distribution": "a", "project": 3, "version": "same", "source": "s"},
    ],
)
def test_a_broken_mapping_entry_is_a_catalog_error(raw: object) -> None:
    with pytest.raises(CatalogError, match=r"flavours\.yaml"):
        _entry(raw, 0)


def test_flavour_value() -> None:
    flavour = Flavour("paddlepaddle-gpu", "paddlepaddle", "drop-post-cuda", "s")
    assert flavour.base_version("2.4.1.post112") == "2.4.1" and flavour.base_version("2.4.1") == "2.4.1"
