"""``envkit probe --slurm`` on a real Slurm cluster (marker ``slurm``; ``.ci/slurm.sh start`` makes one).

CI runs three ``slurmd`` on the loopback (node1..node3), so each test gets one report per node. On a
one-node cluster the tests ask for three tasks on that node instead (reports NODE-0..2).
CPU torch, the bert workload, a few steps: each task takes a few seconds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from envkit.cli import main
from envkit.fleet import store
from envkit.fleet.fanout import FleetOptions, FleetRun, fan_out
from envkit.fleet.slurm import SlurmScheduler
from envkit.probe.report import dump_report
from envkit.probe.runner import ProbeOptions, run_on_host

pytestmark = [pytest.mark.slurm, pytest.mark.frameworks]

PROBE = ["--frameworks", "torch", "--workloads", "bert", "--threads", "1"]


def _layout() -> tuple[int, int]:
    """(nodes, tasks per node) giving three tasks on this cluster."""
    done = subprocess.run(["sinfo", "-h", "-N", "-t", "idle", "-o", "%N"], capture_output=True, text=True)
    nodes = len(set(done.stdout.split()))
    return (3, 1) if nodes >= 3 else (1, 3)


def _probe(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["probe", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_fleet_probe_writes_one_report_per_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes, per_node = _layout()
    layout = ["--nodes", str(nodes), "--tasks-per-node", str(per_node), "--time", "10"]
    code, out = _probe(
        capsys,
        "--slurm",
        *layout,
        "--store",
        str(tmp_path),
        "--run-id",
        "itest",
        "--steps",
        "3",
        "--repeat",
        "2",
        *PROBE,
    )
    assert code == 0, out
    run = out["result"]
    assert run["scheduler"] == "slurm" and run["job"].isdigit() and run["job_state"] == "completed"
    assert [t["state"] for t in run["tasks"]] == ["ok"] * 3
    reports = sorted((tmp_path / "itest").glob("*.json"))
    names = [p.name for p in reports if p.name != "run.json"]
    assert len(names) == 3, names
    seen_nodes = set()
    for name in names:
        report = json.loads((tmp_path / "itest" / name).read_text())
        assert report["fleet"]["run"] == "itest" and report["fleet"]["job"] == run["job"]
        assert report["fleet"]["repeat"] == {
            "n": 2,
            "identical": True,
            "differing": [],
        }  # strict reruns agree
        assert report["config"]["device"] == "cpu" and report["config"]["device_requested"] == "auto"
        seen_nodes.add(report["fleet"]["node"])
        assert report["frameworks"]["torch"]["workloads"]["bert"]["status"] == "ok"
    assert len(seen_nodes) == nodes
    losses = {
        json.dumps(
            json.loads((tmp_path / "itest" / n).read_text())["frameworks"]["torch"]["workloads"]["bert"][
                "steps"
            ]
        )
        for n in names
    }
    assert len(losses) == 1  # the same numbers on every node

    code, same = _probe(capsys, "--compare", str(tmp_path / "itest"))
    assert code == 0 and same["result"]["ok"] is True
    assert len(same["result"]["groups"]) == 1 and same["result"]["outliers"] == []

    # plant one divergent report: the last task's probe rerun with 2 threads instead of 1
    planted = tmp_path / "itest" / names[-1]
    original = json.loads(planted.read_text())
    odd = json.loads(dump_report(run_on_host(
        ProbeOptions(frameworks=("torch",), workloads=("bert",), steps=3, threads=2), label="itest"
    )))  # fmt: skip
    odd["fingerprint"]["host"], odd["fleet"] = original["fingerprint"]["host"], original["fleet"]
    planted.write_text(json.dumps(odd))
    code, diff = _probe(capsys, "--compare", str(tmp_path / "itest"))
    result = diff["result"]
    assert [len(g["members"]) for g in result["groups"]] == [2, 1]
    (outlier,) = result["outliers"]
    assert outlier["name"] == planted.stem and outlier["verdict"] == "equivalent"
    assert outlier["causes"][0]["kind"] == "threads", outlier["causes"][:3]
    assert code == 0  # 1 vs 2 threads is rounding noise: named, but within `equivalent`


def test_a_killed_task_is_reported_failed(tmp_path: Path) -> None:
    nodes, per_node = _layout()
    opts = FleetOptions(store=tmp_path, run_id="killed", nodes=nodes, tasks_per_node=per_node, poll_s=0.5,
                        time_limit="10")  # fmt: skip
    probe = ProbeOptions(frameworks=("torch",), workloads=("bert",), steps=30, threads=1)
    result: list[FleetRun] = []
    worker = threading.Thread(target=lambda: result.append(fan_out(SlurmScheduler(), opts, probe)))
    worker.start()
    run_dir = tmp_path / "killed"
    victim = None
    deadline = time.monotonic() + 120
    while victim is None and time.monotonic() < deadline:
        running = [r for r in store.read_tasks(run_dir).values() if r.state == "running" and r.pid]
        victim = running[0] if running else None
        time.sleep(0.2)
    assert victim is not None and victim.pid is not None, "no task started"
    os.kill(victim.pid, signal.SIGKILL)
    worker.join(timeout=300)
    assert result, "the fan-out did not end"
    outcome = {t.task: t for t in result[0].tasks}
    assert outcome[victim.task].state == "failed"
    assert "without a result" in str(outcome[victim.task].error)
    others = [t for name, t in outcome.items() if name != victim.task]
    assert len(others) == 2 and all(t.state == "ok" for t in others)
    assert not result[0].ok


def test_nodes_of_a_job_that_never_started_are_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The job waits for an hour (--begin); --wait-timeout cancels it: every node never ran, said per node."""
    node = subprocess.run(["sinfo", "-h", "-N", "-o", "%N"], capture_output=True, text=True).stdout.split()[0]
    late = ["--sbatch-arg=--begin=now+3600", "--wait-timeout", "3"]
    code, out = _probe(
        capsys, "--slurm", "--nodelist", node, *late, "--store", str(tmp_path), "--run-id", "late", *PROBE
    )
    assert code == 1, out
    run = out["result"]
    assert run["job_state"] == "cancelled" and "wait-timeout" in run["reason"]
    assert [(t["task"], t["state"]) for t in run["tasks"]] == [(node, "never-ran")]
    assert "job" in run["tasks"][0]["error"]
