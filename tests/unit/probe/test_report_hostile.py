"""Hostile probe reports: verdicts come from the raw numbers (16.12); the loader is strict (16.15).

A report whose numbers hold NaN/Inf compares ``invalid`` whatever its ``nonfinite`` marker says;
equal parameter digests with different norms never compare ``identical``. A report with a wrong
type, a wrong length, an unmarked non-number, a huge integer or absurd nesting is refused with
exit 2 and the field named, never a traceback.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envkit.cli import main
from envkit.comparison.pairwise import compare_reports
from envkit.errors import ExitCode, ReportError
from envkit.probe import report as report_module
from envkit.probe.model import CompareVerdict
from envkit.probe.report import load_report, read_report
from tests.unit.probe.conftest import make_report, parsed, typed_report

REPO = Path(__file__).resolve().parents[3]
Mutation = Callable[[dict[str, Any]], object]


def _rnn(r: dict[str, Any]) -> dict[str, Any]:
    wl: dict[str, Any] = r["frameworks"]["torch"]["workloads"]["rnn"]
    return wl


# -- 16.12: every verdict from the raw per-step values -------------------------------------------

NONFINITE: dict[str, Mutation] = {
    "NaN literal in a loss": lambda r: _rnn(r)["steps"][1].update(loss=float("nan")),
    "Infinity literal in a grad norm": lambda r: _rnn(r)["steps"][2].update(grad_norm=float("inf")),
    "'nan' string in a loss, flags true": lambda r: _rnn(r)["steps"][0].update(loss="nan"),
    "'-inf' in a final norm": lambda r: _rnn(r)["final_param_norms"].update(w="-inf"),
    "'NaN' in a last-step grad norm": lambda r: _rnn(r)["param_grad_norms"]["last"].update(b="NaN"),
    "1e999 (read as inf)": lambda r: _rnn(r)["steps"][0].update(loss=1e999),
    "a false finite flag": lambda r: _rnn(r)["steps"][1]["finite"].update(grads=False),
    "a marker on finite numbers": lambda r: _rnn(r).update(nonfinite={"step": 2, "what": "param"}),
}


@pytest.mark.parametrize("case", sorted(NONFINITE))
def test_nonfinite_numbers_compare_invalid_whatever_the_marker(tmp_path: Path, case: str) -> None:
    bad = make_report(host="host-b")
    NONFINITE[case](bad)
    assert _rnn(bad)["nonfinite"] is None or case == "a marker on finite numbers"
    text = json.dumps(bad)  # allow_nan: NaN/Infinity literals as a careless writer emits them
    result = compare_reports(typed_report(), read_report(text, "b.json"))
    assert result.verdict is CompareVerdict.INVALID
    rnn = [c for c in result.comparisons if c.workload == "rnn"]
    assert rnn and all(c.verdict is CompareVerdict.INVALID and "host-b" in (c.detail or "") for c in rnn)
    assert main(["probe", "--compare", *_write(tmp_path, make_report(), text)]) == ExitCode.FINDINGS


def _write(tmp_path: Path, a: dict[str, Any], b_text: str) -> list[str]:
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps(a), "utf-8")
    pb.write_text(b_text, "utf-8")
    return [str(pa), str(pb)]


@pytest.mark.parametrize("factor", [1000.0, 1.0 + 1e-3, 1.0 + 1e-9])
def test_same_params_digest_with_different_norms_is_never_identical(factor: float) -> None:
    a, b = make_report(), make_report(host="host-b")
    _rnn(b)["final_param_norms"] = {k: v * factor for k, v in _rnn(b)["final_param_norms"].items()}
    assert _rnn(a)["final_params_sha256"] == _rnn(b)["final_params_sha256"]
    final = next(
        c
        for c in compare_reports(parsed(a), parsed(b)).comparisons
        if c.workload == "rnn" and c.metric == "final_params"
    )
    assert final.verdict is not CompareVerdict.IDENTICAL
    assert "inconsistent" in (final.detail or "")
    if factor == 1000.0:
        assert final.verdict is CompareVerdict.DIVERGED


def test_one_changed_loss_bit_is_not_identical() -> None:
    a, b = make_report(), make_report(host="host-b")
    _rnn(b)["steps"][2]["loss"] = 0.8000000000000002
    assert compare_reports(parsed(a), parsed(b)).verdict is CompareVerdict.EQUIVALENT


# -- 16.15 (reports): strict validation, exit 2 naming the field --------------------------------

REFUSED: dict[str, tuple[Mutation, str]] = {
    "schema as a string": (lambda r: r.update(schema="1"), "schema has the wrong type: the string '1'"),
    "schema as a float": (lambda r: r.update(schema=1.0), "schema has the wrong type"),
    "schema as a boolean": (lambda r: r.update(schema=True), "schema has the wrong type: the boolean"),
    "an empty object": (lambda r: r.clear(), "kind"),
    "loss a list": (lambda r: _rnn(r)["steps"][0].update(loss=[1]), "rnn.steps[0].loss: expected a number"),
    "loss an unmarked word": (lambda r: _rnn(r)["steps"][0].update(loss="abc"), "steps[0].loss"),
    "loss a boolean": (lambda r: _rnn(r)["steps"][0].update(loss=True), "steps[0].loss"),
    "loss a huge integer": (lambda r: _rnn(r)["steps"][0].update(loss=10**400), "too large for a float"),
    "grad_norm missing": (lambda r: _rnn(r)["steps"][1].pop("grad_norm"), "steps[1].grad_norm: missing"),
    "steps an object": (lambda r: _rnn(r).update(steps={}), "rnn.steps: expected a list"),
    "steps too short": (lambda r: _rnn(r)["steps"].pop(), "rnn.steps: 2 steps, config.steps is 3"),
    "steps renumbered": (lambda r: _rnn(r)["steps"][0].update(step=5), "steps[0].step"),
    "config.steps a string": (lambda r: r["config"].update(steps="3"), "config.steps: expected an integer"),
    "config.seed huge": (lambda r: r["config"].update(seed=10**30), "config.seed"),
    "config.workloads empty": (lambda r: r["config"].update(workloads=[]), "config.workloads"),
    "status unknown": (lambda r: r["frameworks"]["torch"].update(status="maybe"), "frameworks.torch.status"),
    "fingerprint.cpu a string": (lambda r: r["fingerprint"].update(cpu="x"), "fingerprint.cpu"),
    "gpus a string": (lambda r: r["frameworks"]["torch"]["info"].update(gpus="a100"), "info.gpus"),
    "final norms of other params": (
        lambda r: _rnn(r).update(final_param_norms={"zz": 1.0}),
        "final_param_norms: its names are not the workload's params",
    ),
    "marker step out of range": (
        lambda r: _rnn(r).update(nonfinite={"step": 99, "what": "loss"}),
        "rnn.nonfinite.step",
    ),
    "finite flag a string": (lambda r: _rnn(r)["steps"][0]["finite"].update(loss="yes"), "finite.loss"),
    "fleet.repeat.n a word": (lambda r: r.update(fleet={"repeat": {"n": "two"}}), "fleet.repeat.n"),
    "deep nesting": (lambda r: r["fingerprint"]["env"].update(x=_nest(40)), "nested deeper than 32"),
}


def _nest(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_invalid_reports_are_refused_naming_the_field(tmp_path: Path, case: str) -> None:
    mutate, words = REFUSED[case]
    bad = make_report(host="host-b")
    mutate(bad)
    path = tmp_path / "b.json"
    path.write_text(json.dumps(bad), "utf-8")
    with pytest.raises(ReportError) as info:
        load_report(path)
    assert words in info.value.message and str(path) in info.value.message
    assert info.value.exit_code == ExitCode.USAGE
    assert main(["probe", "--compare", *_write(tmp_path, make_report(), json.dumps(bad))]) == ExitCode.USAGE


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[" * 100_000 + "]" * 100_000, "nests too deeply"),
        ('{"loss": ' + "9" * 5000 + "}", "corrupted"),  # more digits than Python converts
        ('{"schema": 1, "kind": "envkit-probe-report"', "truncated"),
        ("\x00\x01 not json", "corrupted"),
    ],
)
def test_unparseable_documents_are_refused(text: str, words: str) -> None:
    with pytest.raises(ReportError, match=words) as info:
        read_report(text, "x.json")
    assert info.value.exit_code == ExitCode.USAGE


def test_oversized_reports_are_refused_before_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report_module, "MAX_BYTES", 1000)
    with pytest.raises(ReportError, match="too large"):
        read_report(json.dumps(make_report()), "big.json")


def test_a_valid_report_survives_and_keeps_its_document(tmp_path: Path) -> None:
    original = make_report()
    path = tmp_path / "ok.json"
    path.write_text(json.dumps(original), "utf-8")
    loaded = load_report(path)
    assert loaded.document == copy.deepcopy(original)
    assert loaded.frameworks["torch"].workloads["rnn"].steps[2].loss == pytest.approx(0.8)


# -- make gpu-check: the report and compare path imports nothing but the standard library --------


def test_gpu_check_path_imports_only_the_standard_library() -> None:
    code = (
        "import sys; sys.path[:] = [p for p in sys.path if 'site-packages' not in p]; "
        f"sys.path.insert(0, {str(REPO)!r}); "
        "import envkit.probe.model, envkit.probe.report, envkit.comparison.pairwise, envkit.probe.runner; "
        "loaded = {m.split('.')[0] for m in sys.modules}; "
        "print(sorted(m for m in loaded - set(sys.stdlib_module_names) if m not in ('envkit', '__main__')))"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
