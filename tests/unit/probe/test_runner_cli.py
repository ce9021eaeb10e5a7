from __future__ import annotations

import json
import socket
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from envkit import _proc
from envkit.cli import Services, main
from envkit.comparison.html import render_html
from envkit.comparison.pairwise import compare_reports
from envkit.engine.protocol import RunResult
from envkit.engine.testing import FakeEngine, FakeRun
from envkit.errors import ProbeError
from envkit.payload import CONTAINER_PAYLOAD
from envkit.probe.report import load_report
from envkit.probe.runner import ProbeOptions, payload_argv, run_in_image, run_on_host
from envkit.store.layout import safe_name
from tests.unit.probe.conftest import make_report, parsed


def payload_output(argv: Sequence[str]) -> str:
    fw = argv[argv.index("--frameworks") + 1]
    report = make_report(host="box")
    report["frameworks"] = {fw: report["frameworks"]["torch"]}
    return json.dumps(report)


def test_payload_argv_carries_every_option() -> None:
    argv = payload_argv(ProbeOptions(steps=3, tf32=True, nan_check=True, poison="input"), ["torch"])
    assert argv[:2] == ["--frameworks", "torch"]
    assert {"--tf32", "--nan-check"} <= set(argv) and argv[argv.index("--poison") + 1] == "input"


def test_run_on_host_runs_one_process_per_framework() -> None:
    calls: list[tuple[list[str], Mapping[str, str]]] = []

    def fake_run(argv: Sequence[str], *, env: Mapping[str, str], **kw: Any) -> _proc.ProcResult:
        calls.append((list(argv), env))
        return _proc.ProcResult(tuple(argv), 0, payload_output(argv), "")

    report = run_on_host(ProbeOptions(threads=1), label="x", run=fake_run)
    assert sorted(report.frameworks) == ["paddle", "torch"]
    assert sorted(report.to_json()["frameworks"]) == ["paddle", "torch"]  # type: ignore[call-overload]
    assert len(calls) == 2 and all(env["OMP_NUM_THREADS"] == "1" for _, env in calls)
    assert report.label == "x" and report.fingerprint["envkit_version"]


def test_run_on_host_reports_payload_failure() -> None:
    def failing(argv: Sequence[str], **kw: Any) -> _proc.ProcResult:
        return _proc.ProcResult(tuple(argv), 1, "", "Traceback\nSyntaxError: bad")

    with pytest.raises(ProbeError, match="SyntaxError"):
        run_on_host(ProbeOptions(frameworks=("torch",)), label="x", run=failing)


def test_run_in_image_mounts_the_payload_read_only() -> None:
    engine = FakeEngine(handler=lambda run: RunResult(0, payload_output(run.argv), ""))
    engine.add_image("envkit/cuda-paddle:latest", "sha256:abc")
    report = run_in_image(
        engine, "envkit/cuda-paddle:latest", ProbeOptions(), label="img", host="host-a", gpus=False
    )
    run: FakeRun = engine.runs[0]
    assert run.mounts[0].target == CONTAINER_PAYLOAD and run.mounts[0].read_only
    assert run.env is not None and run.env["ENVKIT_IMAGE_ID"] == "sha256:abc"
    assert report.host == "host-a"
    assert report.fact("container")["image_id"] == "sha256:abc"


def test_run_in_image_missing_image() -> None:
    with pytest.raises(ProbeError, match="does not exist"):
        run_in_image(FakeEngine(), "nope", ProbeOptions(), label="x", host="h")


def test_html_is_self_contained() -> None:
    a, b = make_report(), make_report(host="b", scale=1.01, nonfinite_step=None)
    page = render_html(parsed(a), parsed(b), compare_reports(parsed(a), parsed(b)))
    assert page.count("<svg") >= 6 and "<script" not in page and "http" not in page


def test_cli_compare_exit_codes_json_and_html(
    tmp_path: Path, write_report: Callable[[dict[str, Any], str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_report(make_report(), "a.json")
    same = write_report(make_report(host="b"), "same.json")
    drift = write_report(make_report(host="b", scale=1.0001), "drift.json")
    assert main(["probe", "--compare", str(a), str(same)]) == 0
    capsys.readouterr()
    html = tmp_path / "out.html"
    assert main(["probe", "--compare", str(a), str(drift), "--json", "--html", str(html)]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["result"]["verdict"] == "precision-drift" and html.read_text().startswith("<!DOCTYPE html>")


def test_cli_compare_by_host_in_store(
    tmp_path: Path, write_report: Callable[[dict[str, Any], str], Path]
) -> None:
    store = tmp_path / "store"
    for host in ("a", "b"):
        (store / host).mkdir(parents=True)
        (store / host / "latest.json").write_text(json.dumps(make_report(host=host)))
    assert main(["probe", "--store", str(store), "--compare", "a", "b"]) == 0


def test_cli_truncated_report_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": 1, "kind": "envkit-probe-re')
    good = tmp_path / "good.json"
    good.write_text(json.dumps(make_report()))
    assert main(["probe", "--compare", str(bad), str(good)]) == 2
    assert "bad.json" in capsys.readouterr().err


def test_cli_image_through_the_engine_interface(tmp_path: Path) -> None:
    # An engine without that image: the run fails as an engine/probe failure (exit 3).
    services = Services(engine_factory=FakeEngine)
    assert main(["probe", "--image", "missing", "--store", str(tmp_path)], services=services) == 3
    assert main(["probe", "--engine", "fake", "--image", "missing"]) == 2  # no test-only option


def test_cli_html_without_compare_is_a_usage_error() -> None:
    assert main(["probe", "--html", "x.html"]) == 2


def test_cli_probe_in_image_writes_summarises_and_flags_nan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def answer(run: FakeRun) -> RunResult:
        fw = run.argv[run.argv.index("--frameworks") + 1]
        report = make_report(host="box", nonfinite_step=2)
        skipped = {"status": "skipped", "reason": f"{fw} is not installed"}
        report["frameworks"] = {fw: report["frameworks"]["torch"] if fw == "torch" else skipped}
        return RunResult(0, json.dumps(report), "")

    engine = FakeEngine(handler=answer)
    engine.add_image("envkit/demo:latest", "sha256:abc")
    services = Services(engine_factory=lambda: engine)
    out, store = tmp_path / "out.json", tmp_path / "store"
    argv = ["probe", "--image", "demo", "--store", str(store), "-o", str(out)]
    assert main([*argv, "--json"], services=services) == 1  # NaN/Inf is a finding
    data = json.loads(capsys.readouterr().out)
    result = data["result"]
    assert result["label"] == "image-envkit_demo_latest"
    stored = store / safe_name(socket.gethostname()) / "image-envkit_demo_latest.json"
    assert result["written"] == [str(out), str(stored)]
    assert load_report(out).document == load_report(stored).document == result["report"]
    assert data["errors"] == [{"level": "warning", "message": "paddle: skipped: paddle is not installed"}]
    assert [(r["framework"], r["workload"], r["status"]) for r in result["summary"]] == [
        ("torch", "bert", "nan/inf"),
        ("torch", "rnn", "nan/inf"),
    ]
    assert result["summary"][0]["note"] == "NaN/Inf at step 2 (loss, first parameter w)"
    assert main(argv, services=services) == 1
    captured = capsys.readouterr()
    assert "torch  bert  nan/inf loss 1.0 -> nan  NaN/Inf at step 2" in captured.out
    assert f"report: {stored}" in captured.out
    assert "paddle: skipped" in captured.err
