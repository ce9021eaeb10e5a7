from __future__ import annotations

import json
from typing import Any

import pytest

from envkit.comparison.bands import Bands
from envkit.comparison.pairwise import compare_reports
from envkit.errors import ExitCode, ReportError
from tests.unit.probe.conftest import make_report, parsed, typed_report


def verdict(b_kw: dict[str, Any], bands: Bands | None = None) -> str:
    return compare_reports(typed_report(), typed_report(host="host-b", **b_kw), bands).verdict


def test_same_numbers_are_identical() -> None:
    assert verdict({}) == "identical"


@pytest.mark.parametrize(
    ("rel", "expected"),
    [
        (2e-7, "equivalent"),
        (7e-7, "equivalent"),
        (1.4e-5, "precision-drift"),
        (7e-4, "precision-drift"),
        (2e-2, "diverged"),
    ],
)
def test_default_bands_separate_the_design_table_rows(rel: float, expected: str) -> None:
    assert verdict({"scale": 1.0 + rel}) == expected


def test_bands_are_configurable() -> None:
    assert verdict({"scale": 1.0 + 1e-5}, Bands(equivalent=1e-4, drift=1e-2)) == "equivalent"
    with pytest.raises(ValueError, match="band edges"):
        Bands(equivalent=1e-2, drift=1e-3)


def test_nan_on_one_side_is_invalid_and_names_the_parameter() -> None:
    result = compare_reports(typed_report(), typed_report(host="host-b", nonfinite_step=2))
    assert result.verdict == "invalid"
    bad = [c for c in result.comparisons if c.verdict == "invalid"]
    assert bad and all(
        "host-b at step 2" in (c.detail or "") and "parameter: w" in (c.detail or "") for c in bad
    )
    assert bad[0].first_diff_step == 2


def test_first_diff_step_and_max_rel_diff() -> None:
    result = compare_reports(typed_report(), typed_report(host="b", losses=[1.0, 0.9, 0.8 * (1 + 1e-3)]))
    loss = next(c for c in result.comparisons if c.metric == "loss" and c.workload == "rnn")
    assert loss.first_diff_step == 3
    assert loss.max_rel_diff == pytest.approx(1e-3, rel=1e-2)
    assert loss.verdict == "precision-drift"


def test_bitwise_different_parameters_with_equal_norms_are_equivalent() -> None:
    b = make_report(host="b")
    b["frameworks"]["torch"]["workloads"]["rnn"]["final_params_sha256"] = "other"
    result = compare_reports(typed_report(), parsed(b))
    final = next(c for c in result.comparisons if c.metric == "final_params" and c.workload == "rnn")
    assert (final.verdict, result.verdict) == ("equivalent", "equivalent")


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"config": {"seed": 1}}, "different seed"),
        ({"losses": [1.0, 0.9]}, "different steps"),
        ({"config": {"workloads": ["rnn"]}}, "different workloads"),
    ],
)
def test_incomparable_reports_say_why(change: dict[str, Any], why: str) -> None:
    with pytest.raises(ReportError, match=why) as info:
        compare_reports(typed_report(), typed_report(host="b", **change))
    assert info.value.exit_code == ExitCode.USAGE


def test_no_common_framework_is_an_error() -> None:
    b = make_report(host="b")
    b["frameworks"]["torch"] = {"status": "skipped", "reason": "torch is not installed"}
    with pytest.raises(ReportError, match="no framework ran on both sides"):
        compare_reports(typed_report(), parsed(b))


def test_failed_run_on_one_side_is_invalid() -> None:
    b = make_report(host="b")
    b["frameworks"]["torch"]["workloads"]["bert"] = {"status": "error", "reason": "RuntimeError: boom"}
    result = compare_reports(typed_report(), parsed(b))
    assert result.verdict == "invalid"
    assert any("boom" in (c.detail or "") for c in result.comparisons)


def test_causes_are_ranked_tf32_first() -> None:
    b = make_report(
        host="host-b",
        tf32=True,
        env={"OMP_NUM_THREADS": "2"},
        dists={"numpy": "1.21.6", "rich": "13"},
        torch="2.1.2+cu121",
    )
    causes = compare_reports(typed_report(env={"OMP_NUM_THREADS": "1"}), parsed(b)).causes
    messages = [c.message for c in causes]
    assert messages[0].startswith("TF32 on host-b only")
    assert "torch 2.13.0 vs 2.1.2+cu121" in messages
    assert "OMP_NUM_THREADS 1 vs 2" in messages
    assert "numpy 1.26.4 vs 1.21.6" in messages
    assert messages.index("numpy 1.26.4 vs 1.21.6") < messages.index("rich 13 on host-b only")
    weights = [c.weight for c in causes]
    assert weights == sorted(weights, reverse=True)


def test_json_shape() -> None:
    data = json.loads(
        json.dumps(compare_reports(typed_report(), typed_report(host="b", scale=1.001)).to_json())
    )
    assert set(data) >= {"verdict", "comparisons", "causes"}
    assert set(data["comparisons"][0]) >= {
        "framework",
        "workload",
        "mode",
        "metric",
        "verdict",
        "max_rel_diff",
        "first_diff_step",
    }
