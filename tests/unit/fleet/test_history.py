"""The fleet's numerical history on synthetic stores: each device's verdict over many runs."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from envkit.cli import main
from envkit.fleet.history import judge, node_verdicts, read_history
from envkit.fleet.numbers import Entry, summarize_run
from envkit.store import layout
from tests.unit.probe.conftest import make_report

NODES = ("n1", "n2", "n3", "n4", "n5")


def flip(value: float) -> float:
    (bits,) = struct.unpack("<q", struct.pack("<d", value))
    return float(struct.unpack("<d", struct.pack("<q", bits ^ 1))[0])


def write_run(store: Path, run: str, created: float, reports: dict[str, dict[str, Any]],
              failed: dict[str, str] | None = None) -> Path:  # fmt: skip
    run_dir = store / run
    (run_dir / layout.TASKS).mkdir(parents=True)
    tasks = [{"task": n, "node": n, "state": "ok", "report": f"{n}.json"} for n in reports]
    for node, why in (failed or {}).items():
        tasks.append({"task": node, "node": node, "state": "failed", "error": why})
        record = {"task": node, "node": node, "state": "failed", "error": why}
        (run_dir / layout.TASKS / f"{node}.json").write_text(json.dumps(record))
    manifest = {"run": run, "scheduler": "slurm", "options": {}, "tasks_per_node": 1, "created": created,
                "result": {"tasks": tasks}}  # fmt: skip
    (run_dir / layout.MANIFEST).write_text(json.dumps(manifest))
    for node, report in reports.items():
        report = {**report, "fleet": {"run": run, "task": node, "node": node, "job": "1", "repeat": None}}
        report["fingerprint"] = {**report["fingerprint"], "machine_id": f"id-{node}"}
        (run_dir / f"{node}.json").write_text(json.dumps(report))
    return run_dir


def node_report(node: str, *, flipped: bool = False, threads: int | None = None, **kw: Any) -> dict[str, Any]:
    report = make_report(node, config={"threads": threads}, scale=1.0 + (1e-7 if threads else 0.0), **kw)
    if flipped:
        steps = report["frameworks"]["torch"]["workloads"]["bert"]["steps"]
        steps[1]["loss"] = flip(steps[1]["loss"])
    return report


def fleet_store(tmp_path: Path, runs: int = 10, mercurial_runs: tuple[int, ...] = (2, 5, 8)) -> Path:
    """n2 flips a bit on some runs, n3 runs with 2 threads, n4 fails in the last run."""
    for i in range(runs):
        reports = {
            n: node_report(n, flipped=n == "n2" and i in mercurial_runs, threads=2 if n == "n3" else None)
            for n in NODES
            if not (n == "n4" and i == runs - 1)
        }
        failed = {"n4": "the task ended without a result (killed? job completed)"} if i == runs - 1 else None
        write_run(tmp_path, f"run-{i:03d}", 1000.0 + i, reports, failed)
    return tmp_path


def test_each_device_gets_its_verdict(tmp_path: Path) -> None:
    history = read_history(fleet_store(tmp_path))
    verdicts = {d.node: d.verdict for d in history.devices}
    assert verdicts == {"n1": "stable", "n2": "mercurial", "n3": "explained drift", "n4": "failed",
                        "n5": "stable"}  # fmt: skip
    n2 = next(d for d in history.devices if d.node == "n2")
    assert (n2.first_suspect, n2.last_suspect) == ("run-002", "run-008")
    assert [s for _, s in n2.states].count("suspect") == 3 and len(n2.states) == 10
    assert n2.device == "n2:id-n2"
    n3 = next(d for d in history.devices if d.node == "n3")
    assert "threads" in n3.reason and n3.first_suspect is None
    assert history.devices[0].verdict == "mercurial" and not history.ok


def test_a_device_that_always_differs_under_the_same_setup_is_suspect_not_mercurial(tmp_path: Path) -> None:
    store = fleet_store(tmp_path, runs=4, mercurial_runs=(0, 1, 2, 3))
    n2 = next(d for d in read_history(store).devices if d.node == "n2")
    assert n2.verdict == "suspect" and n2.reason.startswith("4 of 4 runs")


def test_new_setups_with_new_numbers_are_not_mercurial(tmp_path: Path) -> None:
    """A library upgrade between runs changes every node's bits: each setup is its own, none is mercurial."""
    for i in range(6):
        dists = {"numpy": "1.26.4" if i < 3 else "2.1.0"}
        scale = 1.0 if i < 3 else 1.0 + 3e-7
        write_run(
            tmp_path, f"run-{i}", float(i), {n: make_report(n, dists=dists, scale=scale) for n in NODES}
        )
    history = read_history(tmp_path)
    assert {d.verdict for d in history.devices} == {"stable"} and all(d.setups == 2 for d in history.devices)


def test_clean_runs_give_no_false_verdict(tmp_path: Path) -> None:
    for i in range(30):
        write_run(tmp_path, f"run-{i:02d}", float(i), {n: make_report(n) for n in NODES})
    history = read_history(tmp_path)
    assert history.ok and {d.verdict for d in history.devices} == {"stable"}
    assert len(history.runs) == 30


def test_the_summary_is_cached_once_the_run_has_ended(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, "run-a", 1.0, {n: make_report(n) for n in NODES[:2]})
    first = summarize_run(run_dir)
    cache = run_dir / layout.HISTORY / "numbers.json"
    assert cache.is_file()
    (run_dir / "n1.json").unlink()  # the cache answers now
    assert summarize_run(run_dir) == first
    cache.write_text("[1, 2]")  # a damaged cache is recomputed from the reports
    assert [e.task for e in summarize_run(run_dir).entries] == ["n2"]


def test_a_cache_someone_else_could_write_is_not_trusted(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, "run-a", 1.0, {n: make_report(n) for n in NODES[:2]})
    summarize_run(run_dir)
    cache = run_dir / layout.HISTORY / "numbers.json"
    forged = json.loads(cache.read_text())
    forged["entries"][0]["state"] = "suspect"
    cache.write_text(json.dumps(forged))
    cache.chmod(0o666)
    assert {e.state for e in summarize_run(run_dir).entries} == {"majority"}


def test_judge_orders_the_verdicts() -> None:
    def e(state: str, numbers: str = "a", setup: str = "s") -> tuple[str, Entry]:
        return "r", Entry("t", "n", "d", setup, None, numbers, state)

    assert judge([e("majority"), e("suspect", "b")])[0] == "mercurial"
    assert judge([e("majority"), e("failed", None)])[0] == "failed"  # type: ignore[arg-type]
    assert judge([e("failed", None), e("majority")])[0] == "stable"  # type: ignore[arg-type]
    assert judge([e("explained", "b", "s2"), e("majority", "a", "s1")])[0] == "explained drift"
    assert judge([e("alone"), e("alone")])[0] == "stable"


def test_cli_history_text_json_html_and_health_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = fleet_store(tmp_path / "store")
    html = tmp_path / "history.html"
    code = main(["fleet", "history", str(store), "--html", str(html), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["command"] == "fleet history"
    assert out["result"]["counts"]["mercurial"] == 1 and out["result"]["devices"][0]["device"] == "n2:id-n2"
    page = html.read_text()
    assert page.count("<tr>") == 1 + 5 and "mercurial" in page
    health = json.loads((store / layout.HEALTH / layout.HEALTH_FILE).read_text())["nodes"]["n2"]
    assert health["verdict"] == "mercurial" and health["reason"].startswith("n2:id-n2: 2 different sets")
    assert main(["fleet", "history", str(store), "--last", "1"]) == 1  # n4 failed in the last run
    text = capsys.readouterr().out
    assert "failed" in text and "1 run(s)" in text
    assert set(node_verdicts(read_history(store))) == set(NODES)


def test_cli_history_on_a_store_that_is_not_there(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fleet", "history", str(tmp_path / "nope")]) == 2


STUB_TASK = r"""#!/bin/sh
# called as: python -m envkit.fleet.task RUN_DIR; files the report prepared for this node
run=$3
name=$(basename "$run")
mkdir -p "$run/.tasks"
sed "s/@RUN@/$name/g" "$ENVKIT_TEST_REPORTS/$ENVKIT_NODE.json" > "$run/$ENVKIT_NODE.json"
n=$ENVKIT_NODE
printf '{"task": "%s", "node": "%s", "state": "ok", "report": "%s.json"}' "$n" "$n" "$n" \
  > "$run/.tasks/$n.json"
"""


def test_a_fleet_run_refreshes_the_node_verdicts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`envkit health` reads STORE/.health/verdicts.json: a fleet run rewrites it with its own run in,
    without a `fleet history` of its own (local scheduler, a stub task filing real-shaped reports)."""
    import sys

    store = tmp_path / "store"
    nodes = ("local1", "local2", "local3")
    for i in range(6):  # local2 flipped a bit in runs 1 and 4
        reports = {n: node_report(n, flipped=n == "local2" and i in (1, 4)) for n in nodes}
        write_run(store, f"run-{i:03d}", 1000.0 + i, reports)
    prepared = tmp_path / "prepared"
    prepared.mkdir()
    for n in nodes:
        report = {
            **node_report(n),
            "fleet": {"run": "@RUN@", "task": n, "node": n, "job": None, "repeat": None},
        }
        report["fingerprint"] = {**report["fingerprint"], "machine_id": f"id-{n}"}
        (prepared / f"{n}.json").write_text(json.dumps(report))
    stub = tmp_path / "python"
    stub.write_text(STUB_TASK)
    stub.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(stub))  # the task command the fan-out runs
    monkeypatch.setenv("ENVKIT_TEST_REPORTS", str(prepared))
    verdicts = store / layout.HEALTH / layout.HEALTH_FILE
    assert not verdicts.exists()

    code = main(["probe", "--scheduler", "local", "--nodes", "3", "--store", str(store), "--run-id", "new",
                 "--frameworks", "torch", "--json"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    health = out["result"]["health"]
    assert health["error"] is None and health["file"] == str(verdicts)
    assert health["verdicts"] == {"local1": "stable", "local2": "mercurial", "local3": "stable"}
    written = json.loads(verdicts.read_text())
    assert written["runs"] == 7 and written["nodes"]["local2"]["last_run"] == "new"
