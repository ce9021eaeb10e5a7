from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envkit.errors import ExitCode, ReportError
from envkit.probe.report import default_store, dump_report, load_report, resolve_report, save_to_store
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


def test_store_layout_and_resolution(tmp_path: Path) -> None:
    store = tmp_path / "store"
    path = save_to_store(typed_report(host="gpu-a"), store, "latest")
    assert path == store / "gpu-a" / "latest.json"
    assert dump_report(typed_report(host="gpu-a")) == path.read_text()
    assert resolve_report("gpu-a", store) == path
    assert resolve_report("gpu-a/latest", store) == path
    other = save_to_store(typed_report(host="gpu-b"), store, "tf32")
    assert resolve_report("gpu-b", store) == other  # the only report of that host
    save_to_store(typed_report(host="gpu-b"), store, "strict")
    with pytest.raises(ReportError, match="several reports"):
        resolve_report("gpu-b", store)
    with pytest.raises(ReportError, match="neither a report file nor a host"):
        resolve_report("nowhere", store)


def test_default_store_honours_env(tmp_path: Path) -> None:
    assert default_store(tmp_path, {}) == tmp_path / ".envkit" / "reports"
    assert default_store(tmp_path, {"ENVKIT_STORE": "/shared/r"}) == Path("/shared/r")


def test_dump_is_byte_stable() -> None:
    assert dump_report(typed_report()) == dump_report(parsed(json.loads(dump_report(typed_report()))))
