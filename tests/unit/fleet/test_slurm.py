"""The Slurm adapter's argv, batch script and state parsing, on a recording runner (no Slurm needed).

The real cluster is exercised by tests/integration/test_fleet_slurm.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from envkit._proc import ProcResult
from envkit.errors import FleetError
from envkit.fleet.scheduler import JobRequest, JobState
from envkit.fleet.slurm import SlurmScheduler, batch_script, expand_hostlist, parse_state, sbatch_argv


class Recorder:
    def __init__(self, answers: dict[str, tuple[int, str, str]]) -> None:
        self.answers = answers
        self.calls: list[list[str]] = []

    def __call__(self, argv: list[str], **_: Any) -> ProcResult:
        self.calls.append(list(argv))
        code, out, err = self.answers.get(argv[0], (0, "", ""))
        return ProcResult(tuple(argv), code, out, err)


def _request(tmp_path: Path, **kw: Any) -> JobRequest:
    return JobRequest(name="envkit-run-1", argv=("/usr/bin/python3", "-m", "envkit.fleet.task", "/s/r"),
                      workdir=tmp_path, **kw)  # fmt: skip


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("node[1-3]", ("node1", "node2", "node3")),
        ("gpu[07-09,12],cpu-a", ("gpu07", "gpu08", "gpu09", "gpu12", "cpu-a")),
        ("n1", ("n1",)),
        ("", ()),
        ("(null)", ()),
    ],
)
def test_expand_hostlist(text: str, names: tuple[str, ...]) -> None:
    assert expand_hostlist(text) == names


@pytest.mark.parametrize(
    ("text", "state"),
    [
        ("PENDING", JobState.PENDING),
        ("RUNNING", JobState.RUNNING),
        ("COMPLETED", JobState.COMPLETED),
        ("CANCELLED by 0", JobState.CANCELLED),
        ("NODE_FAIL", JobState.NODE_FAIL),
        ("OUT_OF_MEMORY", JobState.FAILED),
        ("TIMEOUT", JobState.TIMEOUT),
        ("WEIRD", JobState.UNKNOWN),
    ],
)
def test_parse_state(text: str, state: JobState) -> None:
    assert parse_state(text) is state


def test_sbatch_argv_carries_every_option(tmp_path: Path) -> None:
    request = _request(tmp_path, nodelist=("n1", "n2"), partition="gpu", account="ml", time_limit="30",
                       extra_args=("--gres=gpu:8",), tasks_per_node=8)  # fmt: skip
    argv = sbatch_argv(request, tmp_path / "job.sbatch")
    assert argv[:2] == ["sbatch", "--parsable"]
    for expected in ("--nodes=2", "--nodelist=n1,n2", "--partition=gpu", "--account=ml", "--time=30",
                     "--ntasks-per-node=8", "--exclusive", "--gres=gpu:8"):  # fmt: skip
        assert expected in argv
    assert argv[-1] == str(tmp_path / "job.sbatch")


@pytest.mark.parametrize(
    "bad", [{"partition": "gpu;rm -rf /"}, {"nodelist": ("n1 n2",)}, {"time_limit": "1h"}]
)
def test_unsafe_values_are_refused(tmp_path: Path, bad: dict[str, Any]) -> None:
    with pytest.raises(FleetError):
        sbatch_argv(_request(tmp_path, **bad), tmp_path / "job.sbatch")


def test_batch_script_quotes_and_uses_pyxis(tmp_path: Path) -> None:
    script = batch_script(_request(tmp_path, env={"A": "x y'z"}, container_image="reg/img@sha256:ab",
                                   container_mounts=("/s:/s",)))  # fmt: skip
    assert "export A='x y'\"'\"'z'" in script
    last = script.strip().splitlines()[-1]
    assert last.startswith(
        "exec srun --kill-on-bad-exit=0 --ntasks-per-node=1 --container-image=reg/img@sha256:ab"
    )
    assert "--container-mounts=/s:/s" in last and last.endswith("envkit.fleet.task /s/r")


def test_submit_returns_the_parsable_job_id(tmp_path: Path) -> None:
    run = Recorder({"sbatch": (0, "4242;cluster\n", "")})
    job = SlurmScheduler(run).submit(_request(tmp_path))
    assert job == "4242"
    assert (tmp_path / "envkit-run-1.sbatch").read_text().startswith("#!/bin/sh")


def test_submit_refused_says_why(tmp_path: Path) -> None:
    run = Recorder({"sbatch": (1, "", "sbatch: error: invalid partition specified: nope\n")})
    with pytest.raises(FleetError, match="invalid partition"):
        SlurmScheduler(run).submit(_request(tmp_path))


def test_status_from_squeue_then_sacct() -> None:
    run = Recorder({"squeue": (0, "RUNNING|node[1-2]|None\n", "")})
    status = SlurmScheduler(run).status("7")
    assert (status.state, status.nodes, status.reason) == (JobState.RUNNING, ("node1", "node2"), None)
    gone = Recorder({"squeue": (1, "", "slurm_load_jobs error: Invalid job id specified"),
                     "sacct": (0, "CANCELLED by 0|node3|0:15|None\n", "")})  # fmt: skip
    status = SlurmScheduler(gone).status("7")
    assert (status.state, status.nodes, status.exit_code) == (JobState.CANCELLED, ("node3",), 0)
    assert [c[0] for c in gone.calls] == ["squeue", "sacct"]


def test_status_unknown_when_accounting_is_off() -> None:
    run = Recorder(
        {"squeue": (1, "", "Invalid job id"), "sacct": (1, "", "Slurm accounting storage is disabled")}
    )
    status = SlurmScheduler(run).status("7")
    assert status.state is JobState.UNKNOWN and "accounting" in (status.reason or "")


def test_cancel_tolerates_finished_jobs() -> None:
    SlurmScheduler(Recorder({"scancel": (1, "", "Job/step already completing or completed")})).cancel("7")
    with pytest.raises(FleetError):
        SlurmScheduler(Recorder({"scancel": (1, "", "Access/permission denied")})).cancel("7")
