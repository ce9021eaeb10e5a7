"""N-way comparison on synthetic reports: bitwise groups, the majority, outliers, suspects."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from envkit.cli import main
from envkit.comparison.nway import compare_many, numbers_key
from envkit.errors import ReportError
from envkit.probe.model import CompareVerdict, ProbeReport
from envkit.store import runs
from tests.unit.probe.conftest import make_report, parsed

LOSSES = [1.0, 0.9, 0.8, 0.7, 0.6]


def flip_low_bit(value: float) -> float:
    (bits,) = struct.unpack("<q", struct.pack("<d", value))
    (flipped,) = struct.unpack("<d", struct.pack("<q", bits ^ 1))
    return float(flipped)


def node(name: str, **kw: Any) -> tuple[str, ProbeReport]:
    return name, parsed(node_data(name, **kw), name)


def node_data(name: str, **kw: Any) -> dict[str, Any]:
    return make_report(host=name, losses=kw.pop("losses", LOSSES), **kw)


def test_identical_reports_form_one_group() -> None:
    result = compare_many([node("n1"), node("n2"), node("n3")])
    assert [g.members for g in result.groups] == [("n1", "n2", "n3")]
    assert result.majority == 1 and result.outliers == () and result.ok


def test_a_thread_count_outlier_is_named_with_its_cause() -> None:
    odd = node("n3", scale=1 + 1e-7, config={"threads": 2}, env={"OMP_NUM_THREADS": "2"})
    result = compare_many([node("n1"), node("n2"), odd, node("n4")])
    assert [len(g.members) for g in result.groups] == [3, 1]
    (outlier,) = result.outliers
    assert (outlier.name, outlier.band, outlier.suspect, outlier.group) == (
        "n3",
        CompareVerdict.EQUIVALENT,
        False,
        2,
    )
    assert outlier.causes[0].kind == "threads"
    assert result.ok  # within equivalent: exit 0, the outlier still named


def test_a_flipped_low_bit_with_the_same_fingerprint_is_suspect_and_first() -> None:
    bad = make_report(host="n4", losses=LOSSES)
    steps = bad["frameworks"]["torch"]["workloads"]["bert"]["steps"]
    steps[3]["loss"] = flip_low_bit(steps[3]["loss"])
    drift = node("n5", scale=1 + 1e-4, config={"autocast": "bf16"})
    result = compare_many([node("n1"), node("n2"), node("n3"), ("n4", parsed(bad)), drift])
    assert [o.name for o in result.outliers] == ["n4", "n5"]
    suspect = result.outliers[0]
    assert suspect.suspect and suspect.band is CompareVerdict.EQUIVALENT and suspect.first_diff_step == 4
    assert suspect.to_json()["verdict"] == "suspect" and suspect.to_json()["band"] == "equivalent"
    assert suspect.causes == () and "same fingerprint" in str(suspect.reason)
    assert result.outliers[1].band is CompareVerdict.PRECISION_DRIFT and not result.outliers[1].suspect
    assert not result.ok


def test_same_numbers_different_mode_is_not_suspect() -> None:
    result = compare_many([node("n1"), node("n2"), node("n3", scale=1 + 1e-7, config={"mode": "default"})])
    assert result.outliers[0].tag == "equivalent"


def test_a_node_whose_reruns_differ_is_suspect_on_its_own() -> None:
    report = node_data("n2")
    report["fleet"] = {"repeat": {"n": 3, "identical": False, "differing": ["torch/bert"]}}
    result = compare_many([node("n1"), ("n2", parsed(report)), node("n3")])
    assert [(o.name, o.tag, o.group) for o in result.outliers] == [("n2", "suspect", 1)]
    assert "3 strict reruns" in str(result.outliers[0].reason)
    assert not result.ok


def test_tie_has_no_majority_and_failed_tasks_fail() -> None:
    tie = compare_many([node("n1"), node("n2", scale=2.0)])
    assert tie.majority is None and not tie.ok
    failed = compare_many([node("n1"), node("n2")], failed=[("n3", "failed: killed")])
    assert not failed.ok and failed.to_json()["failed"] == [{"name": "n3", "error": "failed: killed"}]


def test_incomparable_reports_are_refused() -> None:
    with pytest.raises(ReportError, match="different steps"):
        compare_many([node("n1"), node("n2", losses=[1.0, 0.9])])
    with pytest.raises(ReportError, match="1 report"):
        compare_many([node("n1")])


def test_numbers_key_sees_the_last_bit() -> None:
    a = make_report()
    b = make_report()
    b["frameworks"]["torch"]["workloads"]["rnn"]["steps"][0]["grad_norm"] = flip_low_bit(2.0)
    assert numbers_key(parsed(a)) != numbers_key(parsed(b))


def _run(tmp_path: Path) -> Path:
    run_dir = tmp_path / "r1"
    runs.write_json(run_dir / "run.json", {"run": "r1", "result": {"tasks": [
        {"task": "n4", "state": "never-ran", "error": "job cancelled"}]}})  # fmt: skip
    for name, report in [node("n1"), node("n2"), node("n3", scale=1 + 1e-7, config={"threads": 2})]:
        runs.write_json(run_dir / f"{name}.json", report.to_json())
    return run_dir


def test_cli_compares_a_run_with_text_json_and_html(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = _run(tmp_path)
    html = tmp_path / "fleet.html"
    assert main(["probe", "--compare", str(run_dir), "--html", str(html)]) == 1  # n4 never ran
    text = capsys.readouterr().out
    assert "3 reports, 2 bitwise group(s), majority: group 1 (2)" in text
    assert "n3: equivalent" in text and "threads" in text and "n4: never-ran: job cancelled" in text
    page = html.read_text()
    assert page.count("<svg") == 6 and "group 2 (1)" in page  # per workload: vs group 1, loss, grad norm
    assert page.count("<title>relative difference of the loss from group 1") == 2
    assert main(["probe", "--compare", "n1.json", "--store", str(run_dir), "--json"]) == 2
    capsys.readouterr()
    assert main(["probe", "--store", str(tmp_path), "--compare", "r1", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)["result"]
    assert data["majority"] == 1 and data["outliers"][0]["name"] == "n3"
    assert data["pairs"][0]["verdict"] == "equivalent"
