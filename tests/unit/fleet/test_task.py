"""The node side of a fleet run: naming, records, the report and --repeat, with a stub probe."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from envkit.errors import ProbeError
from envkit.fleet.repeat import repeat_summary
from envkit.fleet.run_plan import FleetImage, options_from_json
from envkit.fleet.task import Probe, run_task, task_identity
from envkit.probe.additions import RepeatSummary
from envkit.probe.runner import ProbeOptions
from envkit.store import runs
from tests.unit.probe.conftest import typed_report


def _run_dir(tmp_path: Path, **extra: Any) -> Path:
    run_dir = tmp_path / "r1"
    manifest = {"run": "r1", "options": asdict(ProbeOptions(frameworks=("torch",))), "tasks_per_node": 1,
                "image": {"ref": "reg/x@sha256:" + "a" * 64}, **extra}  # fmt: skip
    runs.write_json(run_dir / "run.json", manifest)
    return run_dir


def test_identity_from_slurm_or_local_environment() -> None:
    assert task_identity({"SLURMD_NODENAME": "gpu7", "SLURM_LOCALID": "3"}, 8) == ("gpu7-3", "gpu7")
    assert task_identity({"ENVKIT_NODE": "local2", "SLURMD_NODENAME": "x"}, 1) == ("local2", "local2")
    assert options_from_json(json.loads(json.dumps(asdict(ProbeOptions()))), "run.json") == ProbeOptions()


def test_task_writes_its_report_and_record(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path, repeat=2)
    seen: list[FleetImage] = []

    def make_probe(image: FleetImage, node: str) -> Probe:
        seen.append(image)
        return lambda opts, label: typed_report(host="container-id", label=label)

    code = run_task(run_dir, {"SLURMD_NODENAME": "node2", "SLURM_JOB_ID": "12"}, make_probe=make_probe)
    assert code == 0
    report = json.loads((run_dir / "node2.json").read_text())
    assert report["fingerprint"]["host"] == "node2" and report["label"] == "r1"
    assert report["fleet"] == {"run": "r1", "task": "node2", "node": "node2", "job": "12",
                               "repeat": {"n": 2, "identical": True, "differing": []}}  # fmt: skip
    assert runs.read_tasks(run_dir)["node2"].state == "ok"
    assert str(seen[0].ref).startswith("reg/x@sha256:")


def test_task_failure_is_recorded_with_its_error(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path)

    def make_probe(image: FleetImage, node: str) -> Probe:
        raise ProbeError("the registry has no reg/x@sha256:aaa", hint="push it")

    assert run_task(run_dir, {"ENVKIT_NODE": "n1"}, make_probe=make_probe) == 3
    record = runs.read_tasks(run_dir)["n1"]
    assert record.state == "failed" and "registry has no" in str(record.error)
    assert not (run_dir / "n1.json").exists()


def test_repeat_names_the_workloads_that_differ() -> None:
    a, b = typed_report(), typed_report(scale=1.0 + 1e-7)
    assert repeat_summary([a, a]) == RepeatSummary(2, True, ())
    assert repeat_summary([a, a, b]) == RepeatSummary(3, False, ("torch/bert", "torch/rnn"))
