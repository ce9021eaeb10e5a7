"""The probe with real CPU torch and paddle: the verdicts of the issue, measured, not assumed.

Each configuration runs once per session (both frameworks, both workloads, 3 steps) and the
tests compare the reports. Real subprocesses with different environments, as on two hosts.
"""

from __future__ import annotations

import copy
import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envkit.cli import main
from envkit.comparison.pairwise import compare_reports
from envkit.probe.model import ProbeReport, parse_report
from envkit.probe.report import dump_report
from envkit.probe.runner import ProbeOptions, run_on_host

pytestmark = [
    pytest.mark.frameworks,
    pytest.mark.skipif(
        importlib.util.find_spec("torch") is None or importlib.util.find_spec("paddle") is None,
        reason="needs torch and paddle (pip install -e '.[torch,paddle]')",
    ),
]

STEPS = 3


@pytest.fixture(scope="session")
def probe() -> Callable[..., ProbeReport]:
    cache: dict[str, ProbeReport] = {}

    def run(name: str, *, omp: str = "1", **kw: Any) -> ProbeReport:
        if name not in cache:
            opts = ProbeOptions(steps=STEPS, env={"OMP_NUM_THREADS": omp, "MKL_NUM_THREADS": omp}, **kw)
            cache[name] = run_on_host(opts, label=name)
        return cache[name]  # frozen: shared safely

    return run


def by_workload(result: Any, workload: str) -> set[str]:
    return {c.verdict for c in result.comparisons if c.workload == workload}


def test_rerun_is_identical(probe: Callable[..., ProbeReport]) -> None:
    a, b = probe("base"), probe("rerun")
    assert all(e.ok for e in a.frameworks.values())
    result = compare_reports(a, b)
    assert result.verdict == "identical", [c for c in result.comparisons if c.verdict != "identical"]


def test_omp_threads_1_vs_2_on_bert_is_equivalent(probe: Callable[..., ProbeReport]) -> None:
    result = compare_reports(probe("base"), probe("omp2", omp="2"))
    bert = [c for c in result.comparisons if c.workload == "bert"]
    assert {c.verdict for c in bert} <= {"identical", "equivalent"}
    assert "equivalent" in {c.verdict for c in bert}, "1 vs 2 threads should reorder fp32 sums"
    assert any(c.kind == "threads" and "OMP_NUM_THREADS 1 vs 2" in c.message for c in result.causes)


def test_float64_is_not_identical(probe: Callable[..., ProbeReport]) -> None:
    result = compare_reports(probe("base"), probe("fp64", dtype="float64"))
    assert result.verdict not in ("identical", "equivalent")
    assert result.causes[0].kind == "dtype"


def test_changed_framework_implementation_is_not_identical(probe: Callable[..., ProbeReport]) -> None:
    # One torch is installed here; paddle's numbers, labelled as another torch version, stand in for
    # "the same math in a different framework build" (same weights and inputs, other kernels).
    base = copy.deepcopy(probe("base").to_json())
    other = copy.deepcopy(base)
    other["fingerprint"]["host"] = "other"  # type: ignore[index]
    other["frameworks"] = {"torch": other["frameworks"]["paddle"]}  # type: ignore[index]
    other["frameworks"]["torch"]["info"]["version"] = "9.9.9"  # type: ignore[index]
    base["frameworks"] = {"torch": base["frameworks"]["torch"]}  # type: ignore[index]
    result = compare_reports(parse_report(base, "base"), parse_report(other, "other"))
    assert result.verdict not in ("identical", "equivalent") or any(
        c.verdict != "identical" for c in result.comparisons
    )
    assert any(c.message.startswith("torch ") and "9.9.9" in c.message for c in result.causes)


def test_torch_and_paddle_start_from_the_same_numbers(probe: Callable[..., ProbeReport]) -> None:
    fw = probe("base").frameworks
    for wl in ("rnn", "bert"):
        t, p = (
            fw["torch"].workloads[wl].steps[0].loss,
            fw["paddle"].workloads[wl].steps[0].loss,
        )
        assert abs(t - p) / abs(t) < 1e-5, (wl, t, p)


def test_planted_nan_is_invalid_with_the_parameter_named(probe: Callable[..., ProbeReport]) -> None:
    poisoned = probe("poison", poison="input", poison_step=2)
    for fw in ("torch", "paddle"):
        for wl in ("rnn", "bert"):
            bad = poisoned.frameworks[fw].workloads[wl].nonfinite
            assert bad is not None and bad.step == 2 and bad.parameter, (fw, wl, bad)
    result = compare_reports(probe("base"), poisoned)
    assert result.verdict == "invalid"
    rnn = next(c for c in result.comparisons if c.workload == "rnn" and c.framework == "torch")
    assert "first offending parameter: rnn.weight_ih" in (rnn.detail or "")


def test_nan_check_names_the_op() -> None:
    report = run_on_host(
        ProbeOptions(steps=2, workloads=("rnn",), poison="input", poison_step=2, nan_check=True), label="nan"
    )
    torch_bad = report.frameworks["torch"].workloads["rnn"].nonfinite
    paddle_bad = report.frameworks["paddle"].workloads["rnn"].nonfinite
    assert torch_bad is not None and torch_bad.what == "op" and "Backward" in str(torch_bad.op_error)
    assert paddle_bad is not None and paddle_bad.what == "op" and "op=" in str(paddle_bad.op_error)


def test_cli_end_to_end(
    tmp_path: Path, probe: Callable[..., ProbeReport], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(dump_report(probe("base")))
    b.write_text(dump_report(probe("poison", poison="input", poison_step=2)))
    html = tmp_path / "c.html"
    assert main(["probe", "--compare", str(a), str(b), "--json", "--html", str(html)]) == 1
    out = json.loads(capsys.readouterr().out)["result"]
    assert out["verdict"] == "invalid" and "<svg" in html.read_text()
    # Running the probe itself through the CLI writes the store layout.
    store = tmp_path / "store"
    code = main(
        ["probe", "--frameworks", "torch", "--workloads", "rnn", "--steps", "1", "--store", str(store)]
    )
    assert code == 0
    assert len(list(store.glob("*/latest.json"))) == 1
