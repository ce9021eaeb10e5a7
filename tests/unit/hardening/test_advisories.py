"""Classes: audit lies through alias de-duplication (item 10), withdrawn that is not a date
(item 13) and hostile advisory records (item 15): bounded, validated, exit 3 naming the file."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import Run


def record(rid: str, *, aliases: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": rid,
        "summary": f"{rid} summary",
        "aliases": aliases or [],
        "affected": [{"package": {"name": "demo", "ecosystem": "PyPI"}, "versions": ["1.0"]}],
        **extra,
    }


def critical(rid: str, aliases: list[str]) -> dict[str, Any]:
    return record(
        rid,
        aliases=aliases,
        database_specific={"severity": "CRITICAL"},
        references=[{"type": "WEB", "url": f"https://example.invalid/{rid}"}],
    )


def audit(tmp_path: Path, envkit: Callable[..., Run], files: dict[str, str], *extra: str) -> Run:
    db = tmp_path / "db" / "vulns" / "demo"
    db.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (db / name).write_text(text)
    freeze = tmp_path / "freeze.txt"
    freeze.write_text("demo==1.0\n")
    return envkit("audit", str(freeze), "--db", str(tmp_path / "db"), "--json", *extra)


ALIAS_CASES = {
    "pysec without severity + ghsa critical": [
        record("PYSEC-2024-1", aliases=["CVE-2024-1"]),
        critical("GHSA-aaaa-bbbb-cccc", ["CVE-2024-1"]),
    ],
    "ghsa listed first": [
        critical("GHSA-aaaa-bbbb-cccc", ["PYSEC-2024-1"]),
        record("PYSEC-2024-1", aliases=["GHSA-aaaa-bbbb-cccc"]),
    ],
    "chain through a third record": [
        record("PYSEC-2024-1", aliases=["CVE-2024-1"]),
        record("OSV-2024-1", aliases=["CVE-2024-1", "GHSA-aaaa-bbbb-cccc"]),
        critical("GHSA-aaaa-bbbb-cccc", []),
    ],
    "low pysec, critical ghsa": [
        record("PYSEC-2024-1", aliases=["CVE-2024-1"], database_specific={"severity": "LOW"}),
        critical("GHSA-aaaa-bbbb-cccc", ["CVE-2024-1"]),
    ],
}


@pytest.mark.parametrize("records", ALIAS_CASES.values(), ids=ALIAS_CASES.keys())
def test_alias_merge_keeps_the_highest_severity_and_all_data(
    tmp_path: Path, envkit: Callable[..., Run], records: list[dict[str, Any]]
) -> None:
    run = audit(tmp_path, envkit, {f"{r['id']}.json": json.dumps(r) for r in records}, "--fail-on", "high")
    assert run.code == 1, "a critical advisory must fail --fail-on high"
    findings = [f for f in run.envelope()["result"]["findings"] if f["kind"] == "vulnerability"]
    assert len(findings) == 1
    (finding,) = findings
    assert finding["severity"] == "critical"
    ids = {finding["id"], *finding["aliases"]}
    assert {r["id"] for r in records} <= ids
    assert "https://example.invalid/GHSA-aaaa-bbbb-cccc" in finding["references"]


def test_unrelated_advisories_stay_separate(tmp_path: Path, envkit: Callable[..., Run]) -> None:
    records = [record("PYSEC-2024-1"), record("PYSEC-2024-2")]
    run = audit(tmp_path, envkit, {f"{r['id']}.json": json.dumps(r) for r in records})
    assert len(run.envelope()["result"]["findings"]) == 2


CORRUPT = {
    "withdrawn true": json.dumps(record("PYSEC-1", withdrawn=True)),
    "withdrawn word": json.dumps(record("PYSEC-1", withdrawn="yesterday")),
    "withdrawn number": json.dumps(record("PYSEC-1", withdrawn=20240101)),
    "withdrawn empty": json.dumps(record("PYSEC-1", withdrawn="")),
    "huge integer": '{"id": "PYSEC-1", "affected": [], "x": ' + "9" * 5000 + "}",
    "deep nesting": '{"id": "PYSEC-1", "affected": [], "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "aliases a string": json.dumps(record("PYSEC-1") | {"aliases": "CVE-1"}),
    "summary a number": json.dumps(record("PYSEC-1") | {"summary": 5}),
    "affected a mapping": json.dumps(record("PYSEC-1") | {"affected": {"a": 1}}),
    "severity a string": json.dumps(record("PYSEC-1") | {"severity": "HIGH"}),
    "references a string": json.dumps(record("PYSEC-1") | {"references": "x"}),
    "versions with a list": json.dumps(
        record("PYSEC-1")
        | {"affected": [{"package": {"name": "demo", "ecosystem": "PyPI"}, "versions": [[1]]}]}
    ),
    "empty id": json.dumps(record("")),
    "not a mapping": "[1, 2, 3]",
    "NaN literal": '{"id": "PYSEC-1", "affected": NaN}',
    "invalid utf-8": b"\xff\xfe{".decode("latin-1"),
}


@pytest.mark.parametrize("text", CORRUPT.values(), ids=CORRUPT.keys())
def test_corrupt_records_stop_the_audit_naming_the_file(
    tmp_path: Path, envkit: Callable[..., Run], text: str
) -> None:
    run = audit(tmp_path, envkit, {"PYSEC-1.json": text})
    assert run.code == 3, run.err
    error = run.envelope()["errors"][0]
    assert "PYSEC-1.json" in error["message"] and "corrupted advisory record" in error["message"]


YAML_CORRUPT = {
    "alias bomb": "id: PYSEC-1\naffected: []\na: &a [x, x, x, x, x, x, x, x]\n"
    + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 8) + "]\n" for i in range(8)
    ),
    "withdrawn yes": "id: PYSEC-1\nwithdrawn: yes\naffected: []\n",
    "python tag": "id: PYSEC-1\naffected: !!python/object/apply:os.system ['id']\n",
    "deep flow nesting": "id: PYSEC-1\naffected: []\nx: " + "[" * 3000 + "]" * 3000 + "\n",
    "bad int tag": "id: PYSEC-1\naffected: []\nx: !!int abc\n",
}


@pytest.mark.parametrize("text", YAML_CORRUPT.values(), ids=YAML_CORRUPT.keys())
def test_corrupt_yaml_records(tmp_path: Path, envkit: Callable[..., Run], text: str) -> None:
    run = audit(tmp_path, envkit, {"PYSEC-1.yaml": text})
    assert run.code == 3, run.err
    assert "PYSEC-1.yaml" in run.envelope()["errors"][0]["message"]


def test_a_real_withdrawn_time_still_withdraws(tmp_path: Path, envkit: Callable[..., Run]) -> None:
    for value in ("2023-01-01T00:00:00Z", "2023-01-01T00:00:00.123+02:00"):
        run = audit(tmp_path, envkit, {"PYSEC-1.json": json.dumps(record("PYSEC-1", withdrawn=value))})
        assert run.code == 0 and run.envelope()["result"]["findings"] == []
