"""Pyxis tasks: the enroot URI, the job's container options, and the task script run for real with sh.

No pyxis/enroot here: the script is what runs inside the container, so it is run directly, with
this repository's payload and the system's python3 (no framework: the payload reports them skipped).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from envkit.errors import UsageError
from envkit.fleet.fanout import FleetOptions, _request
from envkit.fleet.pyxis import TASK_SCRIPT, enroot_uri
from envkit.fleet.slurm import batch_script
from envkit.payload import PAYLOAD_DIR
from envkit.probe.model import parse_report
from envkit.probe.runner import ProbeOptions
from envkit.store import runs

DIGEST = "@sha256:" + "c" * 64


def test_enroot_uri() -> None:
    assert enroot_uri("127.0.0.1:5000/envkit/x" + DIGEST) == "docker://127.0.0.1:5000#envkit/x" + DIGEST
    assert enroot_uri("nvcr.io/nvidia/pytorch" + DIGEST) == "docker://nvcr.io#nvidia/pytorch" + DIGEST
    assert enroot_uri("library/python" + DIGEST) == "docker://library/python" + DIGEST
    with pytest.raises(UsageError, match="by digest"):
        enroot_uri("envkit/x:latest")


def test_the_job_runs_the_payload_in_the_container(tmp_path: Path) -> None:
    opts = FleetOptions(store=tmp_path, image={"ref": "reg.example.org/envkit/x" + DIGEST}, container="pyxis",
                        tasks_per_node=8)  # fmt: skip
    request = _request(opts, "r1", tmp_path / "r1", ProbeOptions(frameworks=("torch",), threads=4))
    assert request.container_image == "docker://reg.example.org#envkit/x" + DIGEST
    assert request.container_mounts == (
        f"{tmp_path / 'r1'}:{tmp_path / 'r1'}",
        f"{PAYLOAD_DIR}:/opt/envkit-probe:ro",
    )
    assert request.env["ENVKIT_TASKS_PER_NODE"] == "8" and request.env["OMP_NUM_THREADS"] == "4"
    script = batch_script(request)
    assert "--container-image=docker://reg.example.org#envkit/x" in script and "--frameworks torch" in script
    with pytest.raises(UsageError, match="by digest"):
        _request(replace(opts, image={"id": "sha256:1", "tar": "/s/x.tar"}), "r1", tmp_path, ProbeOptions())


@pytest.mark.skipif(shutil.which("python3") is None, reason="needs python3")
def test_the_task_script_records_and_writes_the_report(tmp_path: Path) -> None:
    run = tmp_path / "r1"
    run.mkdir()
    env = {**os.environ, "SLURMD_NODENAME": "gpu7", "SLURM_LOCALID": "3", "ENVKIT_TASKS_PER_NODE": "8",
           "ENVKIT_PAYLOAD": str(PAYLOAD_DIR), "PATH": "/usr/bin:/bin"}  # fmt: skip
    args = ["--frameworks", "paddle", "--workloads", "rnn", "--steps", "2"]
    done = subprocess.run(["sh", "-c", TASK_SCRIPT, "envkit-task", str(run), *args], env=env, timeout=120)
    assert done.returncode == 0
    assert runs.read_tasks(run)["gpu7-3"].state == "ok"
    report = parse_report(json.loads((run / "gpu7-3.json").read_text()), "gpu7-3.json")
    assert report.config.steps == 2
    bad = subprocess.run(
        ["sh", "-c", TASK_SCRIPT, "envkit-task", str(run), "--steps", "x"], env=env, timeout=120
    )
    assert bad.returncode == 3
    record = runs.read_tasks(run)["gpu7-3"]
    assert record.state == "failed" and "exited 2" in str(record.error)
