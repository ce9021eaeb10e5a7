"""Fan-out, following and per-node outcomes on the local scheduler (real subprocesses, stub tasks).

The stub "python" plays a task the way ``envkit.fleet.task`` does (records, report) with a
behaviour per node: ok, failed with an error, or killed before it could say anything.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from envkit.errors import UsageError
from envkit.fleet.fanout import FleetOptions, Progress, fan_out, follow, outcomes
from envkit.fleet.local import LocalScheduler
from envkit.fleet.scheduler import JobState, JobStatus
from envkit.probe.runner import ProbeOptions
from envkit.store import runs

STUB = r"""#!/bin/sh
# called as: python -m envkit.fleet.task RUN_DIR
run=$3
mkdir -p "$run/.tasks"
rec="$run/.tasks/$ENVKIT_NODE.json"
printf '{"task": "%s", "node": "%s", "state": "running", "pid": %s}' "$ENVKIT_NODE" "$ENVKIT_NODE" $$ > "$rec"
case "$ENVKIT_NODE" in
  bad) printf '{"task": "bad", "state": "failed", "error": "no torch here"}' > "$rec"; exit 3 ;;
  dies) kill -9 $$ ;;
  slow) sleep 30 ;;
esac
echo '{}' > "$run/$ENVKIT_NODE.json"
n=$ENVKIT_NODE
printf '{"task": "%s", "node": "%s", "state": "ok", "report": "%s.json"}' "$n" "$n" "$n" > "$rec"
"""


@pytest.fixture
def stub_python(tmp_path: Path) -> str:
    path = tmp_path / "python"
    path.write_text(STUB)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def _opts(tmp_path: Path, python: str, **kw: object) -> FleetOptions:
    return FleetOptions(store=tmp_path / "store", python=python, poll_s=0.05, **kw)  # type: ignore[arg-type]


def test_every_node_reports_and_the_manifest_records_the_run(tmp_path: Path, stub_python: str) -> None:
    seen: list[Progress] = []
    run = fan_out(LocalScheduler(), _opts(tmp_path, stub_python, nodes=3, run_id="r1"), ProbeOptions(),
                  on_progress=seen.append)  # fmt: skip
    assert run.ok and run.job_state is JobState.COMPLETED
    assert [t.task for t in run.tasks] == ["local1", "local2", "local3"]
    assert [p.name for p in run.reports] == ["local1.json", "local2.json", "local3.json"]
    manifest = json.loads((run.run_dir / "run.json").read_text())
    assert manifest["run"] == "r1" and manifest["job"] == run.job_id
    assert manifest["options"]["device"] == "auto"
    assert manifest["result"]["tasks"][0]["state"] == "ok"
    assert seen[-1].counts == {"ok": 3} and "completed" in seen[-1].line()


def test_failed_and_killed_tasks_are_reported_per_node(tmp_path: Path, stub_python: str) -> None:
    opts = _opts(tmp_path, stub_python, nodelist=("good", "bad", "dies"), nodes=3)
    run = fan_out(LocalScheduler(), opts, ProbeOptions())
    states = {t.task: (t.state, t.error) for t in run.tasks}
    assert states["good"] == ("ok", None)
    assert states["bad"] == ("failed", "no torch here")
    assert states["dies"][0] == "failed" and "without a result" in str(states["dies"][1])
    assert not run.ok


def test_timeout_cancels_the_job(tmp_path: Path, stub_python: str) -> None:
    opts = _opts(tmp_path, stub_python, nodelist=("slow",), nodes=1, timeout_s=1.0)
    run = fan_out(LocalScheduler(), opts, ProbeOptions())
    assert run.job_state is JobState.CANCELLED
    assert "wait-timeout" in str(run.reason)
    assert run.tasks[0].state == "failed"


def test_a_run_id_is_not_reused(tmp_path: Path, stub_python: str) -> None:
    opts = _opts(tmp_path, stub_python, run_id="same")
    fan_out(LocalScheduler(), opts, ProbeOptions())
    with pytest.raises(UsageError, match="exists"):
        fan_out(LocalScheduler(), opts, ProbeOptions())
    with pytest.raises(UsageError, match="invalid run id"):
        fan_out(LocalScheduler(), _opts(tmp_path, stub_python, run_id="../x"), ProbeOptions())


class Forgetful:
    """A scheduler whose job was never allocated, then forgotten (cancelled while pending)."""

    name = "fake"

    def status(self, job_id: str) -> JobStatus:
        return JobStatus(job_id, JobState.CANCELLED, (), "cancelled while pending")

    def submit(self, request: object) -> str:
        return "1"

    def cancel(self, job_id: str) -> None:
        return None


def test_nodes_that_never_ran_are_named(tmp_path: Path) -> None:
    run_dir = tmp_path / "r"
    runs.write_json(run_dir / "run.json", {"run": "r", "requested": {"nodes": 2, "nodelist": []}})
    run = follow(Forgetful(), run_dir, "1", sleep=lambda _: None)
    assert [(t.task, t.state) for t in run.tasks] == [
        ("unallocated-1", "never-ran"),
        ("unallocated-2", "never-ran"),
    ]
    assert "cancelled while pending" in str(run.tasks[0].error)
    status = JobStatus("1", JobState.FAILED, ("n1", "n2"), "NodeFail")
    names = [(t.task, t.state) for t in outcomes(run_dir, status, ("n1", "n2"), 2, True)]
    assert names == [
        ("n1-0", "never-ran"),
        ("n1-1", "never-ran"),
        ("n2-0", "never-ran"),
        ("n2-1", "never-ran"),
    ]


def test_stub_is_executable_here() -> None:
    assert os.access("/bin/sh", os.X_OK)


class Interrupted(Forgetful):
    def __init__(self) -> None:
        self.cancelled: list[str] = []

    def status(self, job_id: str) -> JobStatus:
        raise KeyboardInterrupt

    def cancel(self, job_id: str) -> None:
        self.cancelled.append(job_id)


def test_ctrl_c_cancels_the_job(tmp_path: Path) -> None:
    scheduler = Interrupted()
    with pytest.raises(KeyboardInterrupt):
        fan_out(scheduler, FleetOptions(store=tmp_path), ProbeOptions())
    assert scheduler.cancelled == ["1"]


def test_tasks_the_engine_lost_are_failed_with_its_reason(tmp_path: Path) -> None:
    """Ray: a node died under two tasks (one had started, one had not); the others' states stand."""
    run_dir = tmp_path / "r"
    (run_dir / ".tasks").mkdir(parents=True)
    for task, state in [("a-0", "ok"), ("b-0", "running")]:
        record = {
            "task": task,
            "node": task[0],
            "state": state,
            "report": f"{task}.json" if state == "ok" else None,
        }
        runs.write_json(run_dir / ".tasks" / f"{task}.json", {k: v for k, v in record.items() if v})
    (run_dir / "a-0.json").write_text("{}")
    lost = {"b-0": "NodeDiedError: the node died", "b-1": "NodeDiedError: the node died"}
    for finished in (False, True):
        status = JobStatus(
            "1", JobState.FAILED if finished else JobState.RUNNING, ("a", "b"), task_errors=lost
        )
        got = {t.task: (t.state, t.error) for t in outcomes(run_dir, status, ("a", "b"), 2, finished)}
        assert got["a-0"] == ("ok", None)
        assert got["b-0"] == ("failed", "lost: NodeDiedError: the node died")
        assert got["b-1"] == ("failed", "lost before it started: NodeDiedError: the node died")
        assert got["a-1"][0] == ("never-ran" if finished else "pending")
