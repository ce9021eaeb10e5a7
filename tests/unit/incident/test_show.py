"""``envkit guard show``: summary, --json, exit codes, and unreadable runs (no framework needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envkit.cli import main


def report(incidents: list[dict[str, Any]]) -> dict[str, Any]:
    steps = [
        {"step": i + 1, "loss": 1.0, "grad_norm": 2.0, "finite": {"loss": True, "grads": True}}
        for i in range(3)
    ]
    return {
        "schema": 1,
        "kind": "envkit-probe-report",
        "label": "train",
        "config": {"seed": 0, "steps": 3, "workloads": ["train"], "mode": "guard", "dtype": "float32"},
        "fingerprint": {"host": "h"},
        "frameworks": {
            "torch": {"status": "ok", "info": {}, "workloads": {"train": {"status": "ok", "steps": steps}}}
        },
        "guard": {
            "schema": 1,
            "steps": [
                {"step": i, "loss": 1.0, "grad_norm": 2.0, "clipped_norm": 1.0, "skipped": None}
                for i in range(3)
            ],
            "skips": [{"step": 1, "reason": "nonfinite-loss: the loss is nan"}] if incidents else [],
            "incidents": incidents,
            "clipped_steps": 3,
        },
    }


def write(tmp_path: Path, doc: Any) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "report.json").write_text(json.dumps(doc))
    return run


def test_a_clean_run_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["guard", "show", str(write(tmp_path, report([])))]) == 0
    out = capsys.readouterr().out
    assert "3 steps, 0 skipped" in out and "3 clipped (100.0 %)" in out and "no incidents" in out


def test_an_incident_exits_1_with_its_localization(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    incident = {
        "step": 1,
        "kind": "nonfinite-loss",
        "message": "the loss is nan",
        "action": "skipped",
        "dump": "incidents/step-1",
        "ranks": [0],
        "localization": {"first_nonfinite_module": {"module": "head", "type": "LogSoftmaxHead"}},
    }
    run = write(tmp_path, report([incident]))
    assert main(["guard", "show", str(run), "--json"]) == 1
    result = json.loads(capsys.readouterr().out)["result"]
    assert (
        result["skipped"] == 1
        and result["incidents"][0]["localization"]["first_nonfinite_module"]["module"] == "head"
    )
    assert main(["guard", "show", str(run)]) == 1
    assert "first non-finite output: head (LogSoftmaxHead)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ("{not json", "truncated or corrupted"),
        ({**report([]), "guard": None}, "without a 'guard' part"),
        ({**report([]), "guard": {"steps": [], "incidents": "x", "skips": []}}, "guard.incidents"),
        ({**report([]), "kind": "other"}, "not a valid probe report"),
    ],
)
def test_unreadable_runs_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: Any, message: str
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "report.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))
    assert main(["guard", "show", str(run)]) == 2
    assert message in capsys.readouterr().err


def test_a_missing_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["guard", "show", str(tmp_path / "nope")]) == 2
    assert "no such report" in capsys.readouterr().err


def test_html_writes_the_page_where_asked_not_into_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write(tmp_path, report([]))
    rows = [{"step": i, "loss": 1.0 + i, "grad_norm": 2.0, "lr": 0.1} for i in range(3)]
    (run / "steps.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "pages" / "exp1.html"
    assert main(["guard", "show", str(run), "--html", str(out), "--json"]) == 0
    envelope = json.loads(capsys.readouterr().out)
    assert envelope["result"]["html"] == str(out)
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") or "<html" in page
    assert "<svg" in page and "envkit guard" in page
    assert not (run / "guard.html").exists()  # the run folder is the guard's record, not an output folder


def test_html_refuses_a_folder_and_a_missing_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write(tmp_path, report([]))
    (run / "steps.jsonl").write_text("")
    assert main(["guard", "show", str(run), "--html", str(tmp_path)]) == 2  # a folder: usage
    assert main(["guard", "show", str(run), "--html"]) == 2  # the value is a path, not a switch
    capsys.readouterr()
