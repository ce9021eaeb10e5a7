from __future__ import annotations

from pathlib import Path

import pytest

from envkit.audit.cvss import cvss3_score, severity_of_score
from envkit.audit.osv_dir import OsvDirService
from envkit.audit.service import Dep
from envkit.errors import AuditError, ExitCode, UsageError


def ids(service: OsvDirService, name: str, version: str) -> list[str]:
    dep, vulns = service.query(Dep(name, version))
    assert dep.skip_reason is None
    return [v.id for v in vulns]


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("1.4.9", ["PYSEC-0001"]),
        ("1.5.0", []),
        ("2.0.0", ["PYSEC-0002"]),
        ("2.0.3", []),
        ("2.1.0", ["PYSEC-0002"]),
        ("2.1.1", []),
        ("3.0.1", ["PYSEC-0003"]),
        ("3.0.2", []),
        ("4.2.0", ["PYSEC-0005"]),
        ("4.2.1", []),
        ("1.4.9+cu121", ["PYSEC-0001"]),
        ("3.0.0+cpu", ["PYSEC-0003"]),
    ],
)
def test_ranges_versions_and_local_labels(osv_db: Path, version: str, expected: list[str]) -> None:
    assert ids(OsvDirService(osv_db), "demo", version) == expected


def test_withdrawn_and_other_ecosystems_are_ignored(osv_db: Path) -> None:
    service = OsvDirService(osv_db)
    # PYSEC-0004 (withdrawn) and the npm part of PYSEC-0005 would match every version.
    assert ids(service, "demo", "9.0") == []


def test_names_are_canonical_and_bad_fix_versions_err_towards_reporting(osv_db: Path) -> None:
    service = OsvDirService(osv_db)
    assert ids(service, "Torch.Thing", "5.0") == ["PYSEC-0007"]
    assert ids(service, "torch_thing", "0.9") == []


def test_fields_severity_and_fix(osv_db: Path) -> None:
    service = OsvDirService(osv_db)
    _, (v1,) = service.query(Dep("demo", "1.0"))
    assert v1.aliases == ("CVE-0001-0001", "GHSA-aaaa-bbbb-cccc")
    assert v1.fixed_in == ("1.5.0",)
    assert v1.severity == "unknown"
    assert v1.summary == "Demo before 1.5.0 leaks secrets."
    assert v1.source is not None and v1.source.endswith("PYSEC-0001.yaml")
    _, (v2,) = service.query(Dep("demo", "2.0.1"))
    assert v2.severity == "critical"
    assert v2.fixed_in == ("2.0.3", "2.1.1")
    _, (v3,) = service.query(Dep("demo", "3.0.0"))
    assert v3.severity == "medium"


def test_loads_only_the_packages_asked_about(osv_db: Path) -> None:
    service = OsvDirService(osv_db)
    service.query(Dep("demo", "1.0"))
    service.query(Dep("absent", "1.0"))
    assert set(service._records) == {"demo", "absent"}
    assert service._records["absent"] == []


def test_invalid_dependency_version_is_not_checked(osv_db: Path) -> None:
    dep, vulns = OsvDirService(osv_db).query(Dep("demo", "not a version"))
    assert vulns == []
    assert dep.skip_reason is not None


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("id: [unclosed\n", "ParserError"),
        ("- just a list\n", "no mapping"),
        ("details: no id\naffected: []\n", "no id"),
        ("id: X\naffected: {a: b}\n", "no affected list"),
        ("id: X\naffected:\n- package: {ecosystem: PyPI}\n", "package.name"),
        (
            "id: X\naffected:\n- package: {name: demo, ecosystem: PyPI}\n  ranges:\n  - type: ECOSYSTEM\n",
            "no events",
        ),
    ],
)
def test_corrupted_record_is_an_error_naming_the_file(osv_db: Path, text: str, why: str) -> None:
    bad = osv_db / "vulns" / "demo" / "PYSEC-9999.yaml"
    bad.write_text(text, "utf-8")
    with pytest.raises(AuditError) as info:
        OsvDirService(osv_db).query(Dep("demo", "1.0"))
    assert "PYSEC-9999.yaml" in info.value.message
    assert why in info.value.message
    assert info.value.exit_code == ExitCode.FAILURE


def test_missing_or_empty_database(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        OsvDirService(tmp_path / "nope")
    (tmp_path / "empty" / "vulns").mkdir(parents=True)
    with pytest.raises(AuditError, match="empty"):
        OsvDirService(tmp_path / "empty").query(Dep("demo", "1.0"))


@pytest.mark.parametrize(
    ("vector", "score", "severity"),
    [
        ("CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H", 9.8, "critical"),
        ("CVSS:3.1/AV:N/AC:L/PR:N/UI:R/S:C/C:L/I:L/A:N", 6.1, "medium"),
        ("CVSS:3.0/AV:N/AC:L/PR:N/UI:N/S:U/C:N/I:N/A:H", 7.5, "high"),
        ("CVSS:3.1/AV:L/AC:H/PR:H/UI:R/S:U/C:L/I:N/A:N", 1.8, "low"),
        ("CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:N/I:N/A:N", 0.0, "unknown"),
    ],
)
def test_cvss3(vector: str, score: float, severity: str) -> None:
    assert cvss3_score(vector) == score
    assert severity_of_score(score) == severity


def test_cvss_other_versions_are_not_scored() -> None:
    assert cvss3_score("CVSS:4.0/AV:N/AC:L/AT:N/PR:N/UI:N/VC:H/VI:H/VA:H/SC:N/SI:N/SA:N") is None
    assert cvss3_score("CVSS:3.1/AV:X") is None
