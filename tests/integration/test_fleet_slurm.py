"""``envkit probe --slurm`` on a real Slurm cluster (marker ``slurm``; ``.ci/slurm.sh start`` makes one).

CI runs three ``slurmd`` on the loopback (node1..node3), so each test gets one report per node. On a
one-node cluster the tests ask for three tasks on that node instead (reports NODE-0..2).
CPU torch, the bert workload, a few steps: each task takes a few seconds.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from envkit.cli import main
from envkit.fleet.fanout import FleetOptions, FleetRun, fan_out
from envkit.fleet.slurm import SlurmScheduler
from envkit.probe.report import dump_report
from envkit.probe.runner import ProbeOptions, run_on_host
from envkit.store import layout as store_layout
from envkit.store import runs
from tests.unit.hardening.hostile import OTHER_UID, evil_site, make_foreign

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
        running = [r for r in runs.read_tasks(run_dir).values() if r.state == "running" and r.pid]
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


# -- issue 24: the shared store is hostile ground (real sbatch/srun on every node) -------------


def _hostile_run(tmp_path: Path, run_id: str, **fields: Any) -> Path:
    """A run directory made the way envkit makes it, with a manifest others could have edited."""
    from envkit.fleet.run_plan import options_to_json

    nodes, per_node = _layout()
    run_dir = runs.create_run_dir(tmp_path, run_id)
    manifest = {"run": run_id, "scheduler": "slurm", "tasks_per_node": per_node,
                "requested": {"nodes": nodes, "nodelist": []},
                "options": options_to_json(ProbeOptions(frameworks=("torch",), workloads=("bert",), steps=2)),
                **fields}  # fmt: skip
    runs.write_json(run_dir / store_layout.MANIFEST, manifest)
    return run_dir


def _submit(run_dir: Path) -> tuple[SlurmScheduler, str]:
    from envkit.fleet.scheduler import JobRequest

    nodes, per_node = _layout()
    scheduler = SlurmScheduler()
    argv = (sys.executable, "-m", "envkit.fleet.task", str(run_dir))
    request = JobRequest(name=f"envkit-{run_dir.name}", argv=argv, workdir=run_dir / store_layout.SCHED,
                         nodes=nodes, tasks_per_node=per_node, time_limit="10")  # fmt: skip
    return scheduler, scheduler.submit(request)


def _wait(scheduler: SlurmScheduler, job_id: str) -> None:
    deadline = time.monotonic() + 300
    while not scheduler.status(job_id).state.finished and time.monotonic() < deadline:
        time.sleep(0.5)
    assert scheduler.status(job_id).state.finished, "the job did not end"


def test_an_environment_in_run_json_runs_no_code_on_the_nodes(tmp_path: Path) -> None:
    """The PoC of issue 24: PYTHONPATH (sitecustomize.py) and LD_PRELOAD in run.json's options."""
    from envkit.fleet.fanout import follow
    from envkit.fleet.run_plan import options_to_json

    site, marker = evil_site(tmp_path)
    options = options_to_json(ProbeOptions(frameworks=("torch",), workloads=("bert",), steps=2))
    options["env"] = {"PYTHONPATH": str(site), "LD_PRELOAD": str(site / "libevil.so")}
    run_dir = _hostile_run(tmp_path, "envpoc", options=options)
    scheduler, job_id = _submit(run_dir)
    run = follow(scheduler, run_dir, job_id, poll_s=0.5, timeout_s=300)
    assert [t.state for t in run.tasks] == ["failed"] * 3, run.tasks
    assert all(
        "options.env" in str(t.error) and "never taken from the store" in str(t.error) for t in run.tasks
    )
    assert not marker.exists(), marker.read_text()
    assert list(run_dir.glob("*.json")) == [run_dir / "run.json"]  # no report says "ok"


@pytest.mark.parametrize("how", ["another user's manifest", "a group-writable run directory"])
def test_a_run_another_user_could_write_runs_nothing_on_the_nodes(tmp_path: Path, how: str) -> None:
    _, marker = evil_site(tmp_path)
    run_dir = _hostile_run(tmp_path, "foreign")
    if how == "another user's manifest":
        make_foreign(run_dir / store_layout.MANIFEST, "other user")
    else:
        make_foreign(run_dir, "group-writable")
    scheduler, job_id = _submit(run_dir)
    _wait(scheduler, job_id)
    out = "".join(p.read_text() for p in (run_dir / store_layout.SCHED).glob("slurm-*.out"))
    assert out.count("envkit task:") == 3 and "Traceback" not in out, out
    assert (f"user id {OTHER_UID}" if how.startswith("another") else "writable by others") in out
    assert list((run_dir / store_layout.TASKS).iterdir()) == [] and not marker.exists()
    assert list(run_dir.glob("*.json")) == [run_dir / "run.json"]


@pytest.mark.parametrize("planted", ["a .sched link", "a link for the run directory"])
def test_a_run_directory_someone_else_made_is_refused_before_submitting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], planted: str
) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    store_dir = tmp_path / "store"
    store_dir.mkdir()
    if planted == "a .sched link":
        (store_dir / "nightly").mkdir()
        (store_dir / "nightly" / ".sched").symlink_to(victim)
    else:
        (store_dir / "nightly").symlink_to(victim)
    jobs_before = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True).stdout.split()
    code, out = _probe(capsys, "--slurm", "--store", str(store_dir), "--run-id", "nightly", *PROBE)
    assert code == 2 and "run nightly exists" in out["errors"][0]["message"]
    assert list(victim.iterdir()) == []
    jobs_after = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True).stdout.split()
    assert set(jobs_after) <= set(jobs_before)  # nothing was submitted


def test_the_follow_loop_survives_hostile_task_records(tmp_path: Path) -> None:
    """Junk planted in .tasks while the real job runs: the run still ends, ok, and is recorded."""
    nodes, per_node = _layout()
    opts = FleetOptions(store=tmp_path, run_id="junk", nodes=nodes, tasks_per_node=per_node, poll_s=0.3,
                        time_limit="10")  # fmt: skip

    def plant(run_id: str, run_dir: Path, job_id: str) -> None:
        tasks = run_dir / store_layout.TASKS
        (tasks / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
        (tasks / "list.json").write_text("[1, 2]")
        (tasks / "shape.json").write_text('{"task": {"a": 1}, "state": ["ok"]}')
        (tasks / "escape.json").write_text('{"task": "escape", "state": "ok", "report": "../../x.json"}')
        os.mkfifo(tasks / "fifo.json")
        (tasks / "link.json").symlink_to("/etc/passwd")

    probe = ProbeOptions(frameworks=("torch",), workloads=("bert",), steps=2, threads=1)
    run = fan_out(SlurmScheduler(), opts, probe, on_submit=plant)
    assert run.ok and [t.state for t in run.tasks] == ["ok"] * 3, run.tasks
    assert json.loads((tmp_path / "junk" / "run.json").read_text())["result"]["job_state"] == "completed"


@pytest.mark.docker
def test_a_store_tar_carrying_a_tagged_second_image_changes_no_tag_on_the_nodes(tmp_path: Path) -> None:
    """Two images in the tar, the second tagged like the node's own application image: refused unloaded."""
    from envkit.engine.docker_api import DockerEngine
    from envkit.fleet.run_plan import image_tar_path

    engine = DockerEngine()
    tag = f"itest24-app-{os.getpid()}:latest"
    ids = {}
    for name in ("run", "app", "evil"):
        root = tmp_path / f"rootfs-{name}"
        root.mkdir()
        (root / "who").write_text(name)
        tarball = tmp_path / f"{name}.tar"
        subprocess.run(["tar", "-C", str(root), "-cf", str(tarball), "."], check=True)
        ids[name] = subprocess.run(["docker", "import", str(tarball)], capture_output=True, text=True,
                                   check=True).stdout.strip()  # fmt: skip
    clean = tmp_path / "clean.tar"
    try:
        subprocess.run(["docker", "save", "-o", str(clean), ids["run"]], check=True)  # as envkit saves it
        subprocess.run(["docker", "tag", ids["evil"], tag], check=True)
        tar = image_tar_path(tmp_path.resolve(), ids["run"])
        tar.parent.mkdir(parents=True)
        subprocess.run(["docker", "save", "-o", str(tar), ids["run"], tag], check=True)  # the hostile tar
        subprocess.run(["docker", "tag", ids["app"], tag], check=True)  # the node's own application image
        subprocess.run(["docker", "rmi", ids["run"], ids["evil"]], check=True, capture_output=True)
        nodes, per_node = _layout()
        opts = FleetOptions(store=tmp_path, run_id="retag", nodes=nodes, tasks_per_node=per_node,
                            image={"id": ids["run"], "tar": str(tar), "name": "itest24"}, poll_s=0.5,
                            time_limit="10")  # fmt: skip
        run = fan_out(SlurmScheduler(), opts, ProbeOptions(frameworks=("torch",), steps=1))
        assert [t.state for t in run.tasks] == ["failed"] * 3, run.tasks
        assert all("lists 2 images, not exactly one" in str(t.error) for t in run.tasks), run.tasks
        info = engine.inspect(tag)
        assert info is not None and info.id == ids["app"]  # the node's tag still names its own image
        assert engine.inspect(ids["run"]) is None and engine.inspect(ids["evil"]) is None  # nothing loaded

        subprocess.run(["docker", "rmi", tag], check=True, capture_output=True)
        tar.unlink()  # now the tar as envkit saves it: one image, by id, no tag: it loads on the nodes
        shutil.copyfile(clean, tar)
        run = fan_out(
            SlurmScheduler(), replace(opts, run_id="clean"), ProbeOptions(frameworks=("torch",), steps=1)
        )
        assert engine.inspect(ids["run"]) is not None  # loaded from the checked tar
        assert all("refusing" not in str(t.error) for t in run.tasks), (
            run.tasks
        )  # (no python in it: fails later)
    finally:
        for ref in (tag, *ids.values()):
            subprocess.run(["docker", "rmi", "-f", ref], capture_output=True)
