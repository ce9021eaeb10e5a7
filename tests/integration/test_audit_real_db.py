"""The real PyPA advisory snapshot against a real 2023 conda environment export (../shared)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from envkit.audit.osv_dir import OsvDirService
from envkit.cli import main
from envkit.errors import AuditError, ExitCode

EXPORT = "inventories/envexport-paris-444fb8e.yml"


@pytest.fixture(scope="module")
def report(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    out = tmp_path_factory.mktemp("audit") / "paris.json"
    code = main(
        [
            "audit",
            str(shared_dir / EXPORT),
            "--db",
            str(shared_dir / "advisory-db"),
            "--format",
            "json",
            "-o",
            str(out),
        ]
    )
    assert code == ExitCode.FINDINGS
    data: dict[str, object] = json.loads(out.read_text("utf-8"))
    return data


def by_package(report: dict[str, object]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for f in report["findings"]:  # type: ignore[attr-defined]
        if f["kind"] == "vulnerability":
            found.setdefault(f"{f['package']} {f['version']}", set()).update([f["id"], *f["aliases"]])
    return found


def test_old_pins_have_the_expected_advisories(report: dict[str, object]) -> None:
    found = by_package(report)
    # pillow 9.2.0: CVE-2022-45198 (fixed 9.3.0) and the libwebp CVE-2023-4863 (fixed 10.0.1)
    assert {"PYSEC-2022-42980", "PYSEC-2023-175"} <= found["pillow 9.2.0"]
    # requests 2.28.1: Proxy-Authorization leak CVE-2023-32681 (fixed 2.31.0)
    assert "CVE-2023-32681" in found["requests 2.28.1"]
    # cryptography 37.0.1: CVE-2023-23931 (fixed 39.0.1)
    assert "CVE-2023-23931" in found["cryptography 37.0.1"]
    # pytorch=1.11.0 (conda) is torch on PyPI: CVE-2022-45907 (fixed 1.13.1)
    assert "CVE-2022-45907" in found["torch 1.11.0"]


def test_same_name_conda_c_libraries_are_not_matched(report: dict[str, object]) -> None:
    found = by_package(report)
    # the PyPA record PYSEC-2023-121 (PyPI "zstd", every version) must not hit conda's C zstd 1.5.2
    assert not any(key.startswith(("zstd ", "openssl ", "sqlite ")) for key in found)
    covered = {n["name"] for n in report["not_covered"]}  # type: ignore[attr-defined]
    assert {"zstd", "openssl", "sqlite", "libtiff", "cudatoolkit"} <= covered


def test_sarif_output_is_valid(shared_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "paris.sarif"
    main(
        [
            "audit",
            str(shared_dir / EXPORT),
            "--db",
            str(shared_dir / "advisory-db"),
            "--format",
            "sarif",
            "-o",
            str(out),
        ]
    )
    sarif = json.loads(out.read_text("utf-8"))
    assert sarif["version"] == "2.1.0" and sarif["$schema"]
    run = sarif["runs"][0]
    assert run["tool"]["driver"]["name"] == "envkit"
    assert run["results"]
    for result in run["results"]:
        assert (
            result["ruleId"] and result["message"]["text"] and result["level"] in ("note", "warning", "error")
        )
        assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]


def test_corrupted_copy_of_the_database_is_refused(
    shared_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db"
    shutil.copytree(shared_dir / "advisory-db" / "vulns" / "requests", db / "vulns" / "requests")
    victim = sorted((db / "vulns" / "requests").iterdir())[-1]
    victim.write_text(victim.read_text("utf-8")[:150] + "\n  - [broken", "utf-8")
    inventory = tmp_path / "freeze.txt"
    inventory.write_text("requests==2.28.1\n", "utf-8")
    assert main(["audit", str(inventory), "--db", str(db)]) == ExitCode.FAILURE
    assert victim.name in capsys.readouterr().err


def test_every_record_of_the_snapshot_parses(shared_dir: Path) -> None:
    service = OsvDirService(shared_dir / "advisory-db")
    total = 0
    try:
        for name in service._package_index():
            total += len(service.records(name))
    except AuditError as e:  # pragma: no cover - shows which file
        pytest.fail(e.message)
    assert total > 2000
