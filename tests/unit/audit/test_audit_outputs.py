"""Reports (SARIF required fields), pip-audit adapter, database update, image target, CLI."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import date
from pathlib import Path
from typing import Any

import fastjsonschema
import pytest
from packaging.version import Version
from pip_audit._service import ConnectionError as PAConnectionError
from pip_audit._service import SkippedDependency, VulnerabilityResult

from envkit.audit.findings import AuditFinding, AuditReport
from envkit.audit.osv_dir import OsvDirService
from envkit.audit.pip_audit_service import PipAuditService
from envkit.audit.report import render, to_sarif
from envkit.audit.service import Dep, Vuln
from envkit.audit.targets import AuditRequest, audit_image
from envkit.audit.testing import FakeVulnService
from envkit.audit.update_db import OSV_PYPI_URL, update_db
from envkit.catalog import load_catalog
from envkit.cli import main
from envkit.engine.protocol import ImageInfo, RunResult
from envkit.engine.testing import FakeEngine
from envkit.errors import AuditError, ExitCode, UsageError
from envkit.offline.testing import FakeFetcher

# The parts of the SARIF 2.1.0 schema that are required (sarif-schema-2.1.0.json "required" lists).
SARIF_REQUIRED = {
    "type": "object",
    "required": ["version", "runs"],
    "properties": {
        "version": {"const": "2.1.0"},
        "$schema": {"type": "string"},
        "runs": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["tool"],
                "properties": {
                    "tool": {
                        "type": "object",
                        "required": ["driver"],
                        "properties": {"driver": {"type": "object", "required": ["name"]}},
                    },
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["message", "ruleId", "level", "locations"],
                            "properties": {
                                "message": {"type": "object", "required": ["text"]},
                                "level": {"enum": ["none", "note", "warning", "error"]},
                                "locations": {
                                    "type": "array",
                                    "minItems": 1,
                                    "items": {
                                        "type": "object",
                                        "required": ["physicalLocation"],
                                        "properties": {
                                            "physicalLocation": {
                                                "type": "object",
                                                "required": ["artifactLocation"],
                                            }
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}
validate_sarif = fastjsonschema.compile(SARIF_REQUIRED)


def sample_report() -> AuditReport:
    findings = (
        AuditFinding(
            "vulnerability",
            "PYSEC-1",
            "high",
            "pillow 9.2.0: bad",
            "upgrade pillow to 9.3.0 or later",
            package="pillow",
            version="9.2.0",
            aliases=("CVE-1",),
            location="env.yml",
            line=4,
            references=("https://example.invalid/1",),
        ),
        AuditFinding("policy", "python-eol", "medium", "Python 3.9 ...", "move", location="env.yml"),
        AuditFinding(
            "vulnerability", "PYSEC-2", "low", "x 1: y", "z", package="x", version="1", ignored="not used"
        ),
    )
    return AuditReport("env.yml", "inventory", {"service": "fake"}, findings, 3)


def test_sarif_has_the_required_fields_and_suppressions() -> None:
    sarif = to_sarif(sample_report())
    validate_sarif(sarif)
    assert sarif["$schema"].endswith("sarif-2.1.0.json")
    results = sarif["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["PYSEC-1", "python-eol", "PYSEC-2"]
    assert results[0]["level"] == "error"
    assert results[0]["locations"][0]["physicalLocation"]["region"] == {"startLine": 4}
    assert results[2]["suppressions"][0]["justification"] == "not used"
    rule_ids = [r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]]
    assert rule_ids == sorted(set(rule_ids))
    with pytest.raises(fastjsonschema.JsonSchemaException):
        validate_sarif({"version": "2.1.0", "runs": [{"tool": {"driver": {}}}]})


def test_formats_are_byte_stable_and_show_ignores() -> None:
    for fmt in ("table", "json", "sarif", "markdown"):
        assert render(sample_report(), fmt, "low") == render(sample_report(), fmt, "low")
    table = render(sample_report(), "table", "low")
    assert "ignored: not used" in table and "fix: upgrade pillow" in table
    markdown = render(sample_report(), "markdown", "high")
    assert "| high | PYSEC-1 |" in markdown and "(ignored: not used)" in markdown
    data = json.loads(render(sample_report(), "json", "high"))
    assert data["failing"] == 1 and data["counts"]["high"] == 1


class FakePipAudit:
    def __init__(self, answer: Any = None, error: Exception | None = None) -> None:
        self.answer, self.error = answer, error
        self.asked: list[Any] = []

    def query(self, spec: Any) -> tuple[Any, list[Any]]:
        self.asked.append(spec)
        if self.error:
            raise self.error
        if self.answer == "skip":
            return SkippedDependency(name=spec.name, skip_reason="Dependency not found on PyPI"), []
        result = VulnerabilityResult.create(["GHSA-z", "PYSEC-9"], "desc\nmore", [Version("2.0")], None)
        return spec, [result]


def test_pip_audit_skips_become_not_checked_and_local_labels_are_dropped() -> None:
    inner = FakePipAudit("skip")
    dep, vulns = PipAuditService(inner).query(Dep("torch", "2.1.0+cu121"))
    assert vulns == [] and dep.skip_reason is not None and "not found" in dep.skip_reason
    assert inner.asked[0].version == Version("2.1.0")
    dep, vulns = PipAuditService(FakePipAudit()).query(Dep("demo", "1.0"))
    assert dep.skip_reason is None
    assert (vulns[0].id, vulns[0].aliases, vulns[0].fixed_in, vulns[0].summary) == (
        "PYSEC-9",
        ("GHSA-z",),
        ("2.0",),
        "desc more",
    )


def test_pip_audit_connection_failure_is_exit_3() -> None:
    with pytest.raises(AuditError) as info:
        PipAuditService(FakePipAudit(error=PAConnectionError("offline"))).query(Dep("demo", "1.0"))
    assert info.value.exit_code == ExitCode.FAILURE


def osv_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        record = {
            "id": "PYSEC-5",
            "details": "d",
            "affected": [
                {
                    "package": {"name": "Demo_Pkg", "ecosystem": "PyPI"},
                    "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "1.1"}]}],
                }
            ],
        }
        archive.writestr("PYSEC-5.json", json.dumps(record))
    return buffer.getvalue()


def served(data: bytes) -> FakeFetcher:
    """The one Fetcher's fake, serving ``data`` as the OSV export."""
    return FakeFetcher({OSV_PYPI_URL: data})


def test_update_db_writes_a_readable_directory(tmp_path: Path) -> None:
    target = tmp_path / "db"
    meta = update_db(target, served(osv_zip()))
    assert meta["records"] == 1
    assert (target / "vulns" / "demo-pkg" / "PYSEC-5.json").is_file()
    _, vulns = OsvDirService(target).query(Dep("demo.pkg", "1.0"))
    assert [v.id for v in vulns] == ["PYSEC-5"]
    assert OsvDirService(target).provenance()["zip_sha256"] == meta["zip_sha256"]
    update_db(target, served(osv_zip()))  # idempotent rerun replaces in place


def test_update_db_offline_is_exit_3_and_keeps_the_old_database(tmp_path: Path) -> None:
    target = tmp_path / "db"
    update_db(target, served(osv_zip()))

    with pytest.raises(AuditError, match="cannot download the advisory database") as info:
        update_db(target, FakeFetcher())  # serves nothing: the download fails
    assert info.value.exit_code == ExitCode.FAILURE
    with pytest.raises(AuditError, match="not a zip"):
        update_db(target, served(b"<html>"))
    assert (target / "vulns" / "demo-pkg" / "PYSEC-5.json").is_file()


def fake_engine(info: ImageInfo | None, stdout: str, exit_code: int = 0) -> FakeEngine:
    """An engine holding ``info`` (when given) whose runs print ``stdout``."""
    engine = FakeEngine(default_run=RunResult(exit_code, stdout, "boom" if exit_code else ""))
    if info is not None:
        engine.user = info.user
        engine.add_image(info.tags[0] if info.tags else "t:1", info.id, info.labels)
    return engine


def request(service: FakeVulnService) -> AuditRequest:
    return AuditRequest(service=service, catalog=load_catalog(), today=date(2026, 1, 1))


def test_image_target_uses_pip_list_inside_the_container() -> None:
    info = ImageInfo(id="sha256:1", tags=("t:1",), labels={}, user="", size=1)
    engine = fake_engine(
        info, json.dumps([{"name": "Pillow", "version": "9.2.0"}, {"name": "pip", "version": "24.0"}])
    )
    service = FakeVulnService({("pillow", "9.2.0"): [Vuln("PYSEC-1", "bad", fixed_in=("9.3.0",))]})
    report = audit_image(engine, "t:1", request(service))
    assert list(engine.runs[0].argv[:3]) == ["python", "-m", "pip"]
    assert sorted(f.id for f in report.findings) == ["PYSEC-1", "image-user-root"]
    assert report.checked == 2
    assert any("pip-visible" in n.reason for n in report.not_covered)


def test_image_target_errors() -> None:
    with pytest.raises(UsageError):
        audit_image(fake_engine(None, "[]"), "nope:1", request(FakeVulnService()))
    info = ImageInfo(id="sha256:1", tags=(), labels={}, user="app", size=1)
    with pytest.raises(AuditError, match="boom"):
        audit_image(fake_engine(info, "", exit_code=127), "t:1", request(FakeVulnService()))


def test_cli_file_target_sarif_output_and_exit_codes(
    osv_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    freeze = tmp_path / "freeze.txt"
    freeze.write_text("demo==1.4\nzstd==1.0\nok==1.0\n", "utf-8")
    out = tmp_path / "report.sarif"
    code = main(["audit", str(freeze), "--db", str(osv_db), "--format", "sarif", "-o", str(out)])
    assert code == ExitCode.FINDINGS
    sarif = json.loads(out.read_text("utf-8"))
    validate_sarif(sarif)
    assert sorted(r["ruleId"] for r in sarif["runs"][0]["results"]) == ["PYSEC-0001", "PYSEC-0006"]
    assert "wrote" in capsys.readouterr().out
    assert main(["audit", str(freeze), "--db", str(osv_db), "--fail-on", "high"]) == ExitCode.OK
    capsys.readouterr()
    assert main(["audit", str(freeze), "--db", str(osv_db), "--json"]) == ExitCode.FINDINGS
    envelope = json.loads(capsys.readouterr().out)
    assert envelope["command"] == "audit" and envelope["result"]["checked"] == 3


def test_cli_corrupted_database_exits_3(
    osv_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (osv_db / "vulns" / "demo" / "PYSEC-0001.yaml").write_text("id: [\n", "utf-8")
    freeze = tmp_path / "freeze.txt"
    freeze.write_text("demo==1.4\n", "utf-8")
    assert main(["audit", str(freeze), "--db", str(osv_db)]) == ExitCode.FAILURE
    assert "PYSEC-0001.yaml" in capsys.readouterr().err


def test_cli_usage_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path))
    freeze = tmp_path / "f.txt"
    freeze.write_text("a==1\n", "utf-8")
    assert main(["audit", str(freeze)]) == ExitCode.USAGE  # no database anywhere
    assert main(["audit", "--db", str(tmp_path)]) == ExitCode.USAGE  # nothing to audit
    assert main(["audit", "no-such-env", "--db", str(tmp_path)]) == ExitCode.USAGE


def test_update_db_downloads_through_the_services_fetcher(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from envkit.cli._services import Services

    fetcher = FakeFetcher({OSV_PYPI_URL: osv_zip()})
    services = Services(fetcher_factory=lambda: fetcher)
    target = tmp_path / "db"
    assert main(["audit", "--update-db", str(target), "--json"], services=services) == 0
    assert fetcher.requests == [OSV_PYPI_URL]
    assert json.loads(capsys.readouterr().out)["result"]["records"] == 1
    assert (target / "vulns" / "demo-pkg" / "PYSEC-5.json").is_file()
    empty = Services(fetcher_factory=lambda: FakeFetcher())
    assert main(["audit", "--update-db", str(target), "--json"], services=empty) == 3  # kept, exit 3
    (error,) = json.loads(capsys.readouterr().out)["errors"]
    assert error["message"].startswith("cannot download the advisory database from https://")
    assert "--db DIR" in error["hint"] and (target / "vulns" / "demo-pkg" / "PYSEC-5.json").is_file()
