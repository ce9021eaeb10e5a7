from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envkit.errors import ExitCode, ReportError
from envkit.probe.report import dump_report, load_report
from envkit.store.layout import save_to_store
from tests.unit.probe.conftest import make_report, parsed, typed_report


def test_roundtrip(write_report: Callable[[dict[str, Any], str], Path]) -> None:
    report = make_report()
    loaded = load_report(write_report(report, "a.json"))
    assert loaded.document == report and loaded.config.steps == 3 and loaded.host == "host-a"


def test_truncated_report_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "half.json"
    path.write_text(dump_report(typed_report())[:200])
    with pytest.raises(ReportError) as info:
        load_report(path)
    assert str(path) in info.value.message and "truncated" in info.value.message
    assert info.value.exit_code == ExitCode.USAGE


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r.update(schema=99), "schema 99"),
        (lambda r: r.pop("fingerprint"), "fingerprint: expected an object, got null"),
        (lambda r: r["frameworks"]["torch"]["workloads"]["rnn"]["steps"].pop(), "rnn.steps: 2 steps"),
        (lambda r: r.update(kind="other"), "kind: expected 'envkit-probe-report'"),
    ],
)
def test_corrupted_reports(tmp_path: Path, mutate: Callable[[dict[str, Any]], object], message: str) -> None:
    report = make_report()
    mutate(report)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(report))
    with pytest.raises(ReportError, match=message) as info:
        load_report(path)
    assert str(path) in info.value.message


def test_dump_is_byte_stable() -> None:
    assert dump_report(typed_report()) == dump_report(parsed(json.loads(dump_report(typed_report()))))


def test_host_additions_are_typed_copies_that_round_trip(tmp_path: Path) -> None:
    from envkit.probe.additions import DriverCheck, FleetInfo, RepeatSummary

    payload = typed_report(host="container-id")
    driver = DriverCheck("12.4", "550.54.14", "525.60.13", "470.82.01", "too-old")
    fleet = FleetInfo("r1", "node2", "node2", "12", RepeatSummary(3, False, ("torch/bert",)))
    filed = payload.with_host_facts("r1", {"envkit_version": "x"}).with_driver(driver).with_fleet(fleet)
    assert payload.host == "container-id" and payload.driver is None and payload.fleet is None  # unchanged
    assert (filed.host, filed.label, filed.fingerprint["envkit_version"]) == ("node2", "r1", "x")
    path = save_to_store(dump_report(filed), tmp_path, filed.host, "r1")
    loaded = load_report(path)
    assert (loaded.driver, loaded.fleet, loaded.repeat) == (driver, fleet, fleet.repeat)
    assert dump_report(loaded) == path.read_text()  # parsed once, written back byte for byte
