"""Issue 34, class 20: every audit result says how old its advisory data is, from the data's own source
record, and warns past ``--max-db-age`` days (trivy and grype warn on a stale database the same way)."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import date
from pathlib import Path

import pytest

from envkit.audit.data_age import age_line, age_warning, data_date_of, newest_date
from envkit.audit.osv_dir import OsvDirService
from envkit.audit.update_db import OSV_PYPI_URL, update_db
from envkit.cli import main
from envkit.offline.testing import FakeFetcher

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "inventory"
FREEZE = "pip-freeze/0-unknown-version-git-egg-bladder-snSeq-pip_freeze.txt"

RECORD = """\
id: PYSEC-1
modified: "{modified}"
details: d
affected:
- package: {{name: demo, ecosystem: PyPI}}
  ranges: [{{type: ECOSYSTEM, events: [{{introduced: "0"}}, {{fixed: "2.0"}}]}}]
"""


def _db(root: Path, *modified: str) -> Path:
    for i, when in enumerate(modified):
        path = root / "vulns" / "demo" / f"PYSEC-{i}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(RECORD.format(modified=when), "utf-8")
    return root


def _audit(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    main(["audit", *args, "--json"])
    envelope: dict[str, object] = json.loads(capsys.readouterr().out)
    return envelope


def test_the_shipped_snapshot_is_dated_from_its_readme_in_every_format(
    shared_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(shared_dir / "advisory-db")
    freeze = str(CORPUS / FREEZE)
    envelope = _audit(capsys, freeze, "--db", db, "--max-db-age", "30")
    result = envelope["result"]
    assert isinstance(result, dict)
    assert result["provenance"]["data_date"] == "2024-10-10"
    assert result["provenance"]["data_date_source"] == "README"
    assert result["data_age"].startswith("advisory data as of 2024-10-10 (")
    warnings = [e["message"] for e in envelope["errors"] if e["level"] == "warning"]  # type: ignore[attr-defined]
    assert any("the advisory data is" in w and "more than --max-db-age 30" in w for w in warnings)
    for fmt, key in (("table", "advisory data as of 2024-10-10"), ("markdown", "advisory data as of 2024")):
        main(["audit", freeze, "--db", db, "--format", fmt, "--max-db-age", "30"])
        out = capsys.readouterr().out
        assert key in out, fmt
    main(["audit", freeze, "--db", db, "--format", "sarif"])
    sarif = json.loads(capsys.readouterr().out)
    assert sarif["runs"][0]["properties"]["dataAge"].startswith("advisory data as of 2024-10-10")


def test_the_age_is_configurable_and_off_with_minus_one(
    shared_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(shared_dir / "advisory-db")
    freeze = str(CORPUS / FREEZE)
    for age, warned in (("100000", False), ("-1", False), ("0", True)):
        envelope = _audit(capsys, freeze, "--db", db, "--max-db-age", age)
        messages = [e["message"] for e in envelope["errors"]]  # type: ignore[attr-defined]
        assert any("the advisory data is" in m for m in messages) is warned, age


def test_source_json_data_date_wins_and_update_db_writes_it(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for i, when in enumerate(("2025-01-02T00:00:00Z", "2026-03-04T05:06:07.1Z", "not a date")):
            record = {
                "id": f"PYSEC-{i}",
                "modified": when,
                "details": "d",
                "affected": [
                    {
                        "package": {"name": "demo", "ecosystem": "PyPI"},
                        "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}]}],
                    }
                ],
            }
            archive.writestr(f"PYSEC-{i}.json", json.dumps(record))
    meta = update_db(tmp_path / "db", FakeFetcher({OSV_PYPI_URL: buffer.getvalue()}))
    assert meta["data_date"] == "2026-03-04"
    info = OsvDirService(tmp_path / "db").provenance()
    assert (info["data_date"], info["data_date_source"]) == ("2026-03-04", "SOURCE.json data_date")


def test_a_plain_checkout_is_dated_by_its_newest_record(tmp_path: Path) -> None:
    root = _db(tmp_path / "db", "2023-01-01T00:00:00Z", "2025-06-30T12:00:00Z", "2024-12-31")
    assert data_date_of(root, root / "vulns", {}) == ("2025-06-30", "newest record's modified")
    (root / "README.md").write_text("# mirror\n\nA snapshot taken on 2025-07-01.\n", "utf-8")
    assert data_date_of(root, root / "vulns", {}) == ("2025-07-01", "README")


def test_hostile_dates(tmp_path: Path) -> None:
    assert newest_date(["2024-02-31", "99999-01-01", 7, None, "2024-13-01", "x" * 10_000]) is None
    assert newest_date(["2021-01-01", "2022-02-02T00:00:00Z"]) == "2022-02-02"
    root = _db(tmp_path / "db", "yesterday")
    assert data_date_of(root, root / "vulns", {"data_date": "soon"}) is None
    undated = {"service": "osv-dir", "database": str(root)}
    assert age_line(undated, date(2026, 1, 1)).startswith("advisory data: date unknown")
    warning = age_warning(undated, date(2026, 1, 1), 30)
    assert warning is not None and "date is unknown" in warning
    assert age_warning(undated, date(2026, 1, 1), None) is None


def test_a_future_or_fresh_date_is_no_warning_and_online_is_said() -> None:
    today = date(2026, 12, 1)
    fresh = {"service": "osv-dir", "data_date": "2026-11-30"}
    assert age_warning(fresh, today, 30) is None
    assert "(1 day(s) old" in age_line(fresh, today)
    assert age_warning({"service": "osv-dir", "data_date": "2026-10-01"}, today, 30) is not None
    online = {"service": "pip-audit:osv"}
    assert age_line(online, today) == "advisory data: pip-audit:osv, queried online now"
    assert age_warning(online, today, 30) is None
