"""Class 11 and 12 for the advisory database: every file envkit reads from it is shape-checked
(SOURCE.json: named in the provenance, records: an error naming the file), and versions beyond
what a parser takes are an error naming the file."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import Run
from .test_advisories import audit, record

SOURCE_CASES = {
    "a list": "[1, 2]",
    "a string": '"https://osv-vulnerabilities.storage.googleapis.com/PyPI/all.zip"',
    "a number": "3",
    "null": "null",
    "nested value": '{"url": {"a": 1}}',
    "a list value": '{"records": [1]}',
    "not JSON": "{url:",
    "not UTF-8": "\udcff",
    "deep": "[" * 100_000 + "]" * 100_000,
    "huge integer": '{"records": ' + "9" * 5000 + "}",
    "too large": '{"url": "' + "a" * (2 << 20) + '"}',
}


@pytest.mark.parametrize("text", SOURCE_CASES.values(), ids=SOURCE_CASES.keys())
def test_a_source_json_that_is_not_envkits_is_named_and_does_not_stop_the_audit(
    tmp_path: Path, envkit: Callable[..., Run], text: str
) -> None:
    """SOURCE.json only says where the data came from: the audit runs, the provenance names the file."""
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "SOURCE.json").write_text(text, "utf-8", errors="surrogateescape")
    run = audit(tmp_path, envkit, {"PYSEC-1.json": json.dumps(record("PYSEC-1"))})
    assert run.code == 1, run.err  # the advisory is still found
    provenance = run.envelope()["result"]["provenance"]
    assert "SOURCE.json" in provenance["source_note"] and len(provenance["source_note"]) < 400
    assert all(isinstance(v, str) and len(v) <= 500 for v in provenance.values())


def test_envkits_own_source_json_is_shown(tmp_path: Path, envkit: Callable[..., Run]) -> None:
    (tmp_path / "db").mkdir()
    stamp = {"url": "https://osv-vulnerabilities.storage.googleapis.com/PyPI/all.zip", "records": 3}
    (tmp_path / "db" / "SOURCE.json").write_text(json.dumps(stamp), "utf-8")
    run = audit(tmp_path, envkit, {"PYSEC-1.json": json.dumps(record("PYSEC-1"))})
    assert run.code == 1, run.err
    assert run.envelope()["result"]["provenance"]["records"] == "3"


BIG = "1." + "9" * 5000
VERSION_CASES = {
    "fixed": record("PYSEC-1")
    | {
        "affected": [
            {
                "package": {"name": "demo", "ecosystem": "PyPI"},
                "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": BIG}]}],
            }
        ]
    },
    "introduced": record("PYSEC-1")
    | {
        "affected": [
            {
                "package": {"name": "demo", "ecosystem": "PyPI"},
                "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": BIG}]}],
            }
        ]
    },
    "versions list": record("PYSEC-1")
    | {"affected": [{"package": {"name": "demo", "ecosystem": "PyPI"}, "versions": [BIG]}]},
}


@pytest.mark.parametrize("data", VERSION_CASES.values(), ids=VERSION_CASES.keys())
def test_a_record_with_a_thousands_of_digits_version_is_corrupt(
    tmp_path: Path, envkit: Callable[..., Run], data: dict[str, object]
) -> None:
    run = audit(tmp_path, envkit, {"PYSEC-1.json": json.dumps(data)})
    assert run.code == 3, run.err
    message = run.envelope()["errors"][0]["message"]
    assert "PYSEC-1.json" in message and "characters" in message and len(message) < 400
