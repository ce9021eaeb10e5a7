"""Issue 24, classes 1, 2 and 6: the fleet's shared store is written by others.

Whoever can write ``STORE/RUN`` must not be able to run code in someone's probe task (an
environment in ``run.json``, an unknown option, a path), to make the submitter reuse their
directory, or to crash the task, the follow loop or ``probe --compare`` with a hostile file.
The node task runs for real here (``python -m envkit.fleet.task``, a subprocess).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from envkit.errors import EnvkitError, FleetError, UsageError
from envkit.fleet.fanout import FleetOptions, fan_out, follow
from envkit.fleet.local import LocalScheduler
from envkit.fleet.run_plan import options_from_json, options_to_json, parse_manifest
from envkit.fleet.scheduler import JobState, JobStatus
from envkit.probe.runner import ProbeOptions
from envkit.store import layout, runs
from envkit.store.manifest import RunManifest, read_manifest
from envkit.store.reads import read_store_json
from tests.unit.hardening.hostile import evil_site, make_foreign

REPO = Path(__file__).resolve().parents[3]


def _run_dir(tmp_path: Path, **fields: Any) -> Path:
    run_dir = runs.create_run_dir(tmp_path / "store", "r1")
    manifest = {
        "run": "r1",
        "options": options_to_json(ProbeOptions(frameworks=("torch",), steps=1)),
        **fields,
    }
    runs.write_json(run_dir / layout.MANIFEST, manifest)
    return run_dir


def _task(run_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO), "ENVKIT_NODE": "n1", **env}
    argv = [sys.executable, "-m", "envkit.fleet.task", str(run_dir)]
    return subprocess.run(argv, env=environ, capture_output=True, text=True, timeout=120, check=False)


def _record(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / layout.TASKS / "n1.json").read_text())
    return data


@pytest.mark.parametrize(
    "env",
    [
        {"PYTHONPATH": "{site}"},
        {"LD_PRELOAD": "{site}/libevil.so"},
        {"PYTHONSTARTUP": "{site}/sitecustomize.py", "PYTHONINSPECT": "1"},
        {"BASH_ENV": "{site}/sitecustomize.py"},
    ],
)
def test_an_environment_in_run_json_never_reaches_the_payload(tmp_path: Path, env: dict[str, str]) -> None:
    site, marker = evil_site(tmp_path)
    options = {**options_to_json(ProbeOptions(frameworks=("torch",), steps=1))}
    options["env"] = {k: v.format(site=site) for k, v in env.items()}
    run_dir = _run_dir(tmp_path, options=options)
    done = _task(run_dir)
    assert done.returncode == 3, done.stderr
    record = _record(run_dir)
    assert record["state"] == "failed" and "options.env" in record["error"]
    assert str(run_dir / "run.json") in record["error"]  # the message names the file
    assert not marker.exists(), "attacker code ran"
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("python", "/tmp/evil/python", "not a probe option"),
        ("payload", "/tmp/evil.py", "not a probe option"),
        ("steps", "3; touch /tmp/x", "integer"),
        ("steps", True, "integer"),
        ("steps", 10**12, "integer"),
        ("threads", -1, "integer"),
        ("frameworks", ["torch", "--help"], "list of torch, paddle"),
        ("frameworks", "torch", "list of torch, paddle"),
        ("frameworks", [], "list of torch, paddle"),
        ("mode", "strict\n--device=cuda", "one of strict, default"),
        ("tf32", "yes", "true or false"),
        ("nan_check", 1, "true or false"),
        ("readiness", "yes", "true, false or null"),
        ("readiness", 0, "true, false or null"),
        ("readiness", [], "true, false or null"),
    ],
)
def test_options_are_an_allow_list_of_typed_fields(key: str, value: Any, says: str) -> None:
    data = {**options_to_json(ProbeOptions()), key: value}
    with pytest.raises(FleetError, match=says) as caught:
        options_from_json(data, "STORE/r1/run.json")
    assert f"options.{key}" in caught.value.message and "STORE/r1/run.json" in caught.value.message


def test_options_round_trip_and_old_manifests_with_an_empty_env_still_read() -> None:
    opts = ProbeOptions(frameworks=("paddle",), workloads=("rnn",), steps=7, seed=3, threads=2, tf32=True)
    assert options_from_json(json.loads(json.dumps(options_to_json(opts))), "x") == opts
    assert "env" not in options_to_json(ProbeOptions(env={"OMP_NUM_THREADS": "1"}))
    old = {**options_to_json(opts), "env": {}}  # what envkit wrote before (asdict)
    assert options_from_json(old, "x") == opts
    for readiness in (None, True, False):  # a ProbeOptions field since issue 31 (asdict writes it)
        assert options_from_json({**old, "readiness": readiness}, "x") == replace(opts, readiness=readiness)


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("image", {"ref": "evil/app:latest"}, "REPO@sha256"),
        ("image", {"ref": "reg/x@sha256:" + "a" * 64 + "\n"}, "REPO@sha256"),
        ("image", {"id": "sha256:" + "b" * 64, "tar": "/etc/passwd"}, "STORE/images"),
        ("image", {"id": "sha256:" + "b" * 64, "tar": "{store}/images/../../victim.tar"}, "STORE/images"),
        ("image", {"id": "sha256:" + "b" * 64}, "a ref"),
        ("image", {"ref": "reg/x@sha256:" + "a" * 64, "cmd": "sh"}, "image.cmd"),
        ("image", "reg/x@sha256:" + "a" * 64, "object"),
        ("repeat", 10**9, "repeat"),
        ("tasks_per_node", "4", "tasks_per_node"),
        ("run", "other-run", "this run's id"),
        ("requested", {"nodes": 2, "nodelist": ["n1", 7]}, "nodelist"),
        ("options", ["steps", 3], "options must be an object"),
    ],
)
def test_every_manifest_field_is_shape_checked(tmp_path: Path, field: str, value: Any, says: str) -> None:
    run_dir = tmp_path / "store" / "r1"
    if isinstance(value, dict) and isinstance(value.get("tar"), str):
        value = {**value, "tar": value["tar"].format(store=tmp_path / "store")}
    data = {"run": "r1", "options": options_to_json(ProbeOptions()), field: value}
    with pytest.raises(FleetError, match=says):
        parse_manifest(RunManifest.from_json(data, run_dir / "run.json"), run_dir)


def test_the_store_tar_of_an_image_is_the_only_tar_a_run_loads(tmp_path: Path) -> None:
    run_dir = tmp_path / "store" / "r1"
    image_id = "sha256:" + "c" * 64
    tar = tmp_path / "store" / "images" / ("c" * 24 + ".tar")
    data = {"run": "r1", "options": {}, "image": {"id": image_id, "tar": str(tar)}}
    image = parse_manifest(RunManifest.from_json(data, Path("run.json")), run_dir).image
    assert image is not None and image.tar == tar and image.id == image_id


@pytest.mark.parametrize("how", ["other user", "group-writable", "world-writable", "symlink"])
def test_a_run_written_by_another_user_is_refused_by_the_task(tmp_path: Path, how: str) -> None:
    _, marker = evil_site(tmp_path)
    run_dir = _run_dir(tmp_path)
    make_foreign(run_dir if how == "world-writable" else run_dir / layout.MANIFEST, how)
    done = _task(run_dir, PYTHONPATH=f"{REPO}")
    assert done.returncode == 3
    assert "envkit task:" in done.stderr and "Traceback" not in done.stderr
    assert any(
        w in done.stderr for w in ("user id", "writable by others", "symbolic link", "not a run manifest")
    )
    assert not (run_dir / "n1.json").exists() and not marker.exists()
    assert not (run_dir / layout.TASKS / "n1.json").exists()  # nothing written into a run it does not trust


def test_the_follower_refuses_a_run_directory_someone_else_made(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path)
    (run_dir / layout.MANIFEST).chmod(0o666)
    with pytest.raises(FleetError, match="writable by others"):
        follow(LocalScheduler(), run_dir, "1", sleep=lambda _: None)


# -- class 2: run directories are created exclusively ---------------------------------------


STUB = """#!/bin/sh
run=$3 n=$ENVKIT_NODE
printf '{"task": "%s", "state": "ok", "report": "%s.json"}' "$n" "$n" > "$run/.tasks/$n.json"
echo '{}' > "$run/$n.json"
"""


def _stub(tmp_path: Path) -> str:
    path = tmp_path / "python"
    path.write_text(STUB)
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize("planted", ["empty dir", "sched symlink", "dir symlink", "file", "dangling symlink"])
def test_a_run_directory_someone_made_first_is_refused(tmp_path: Path, planted: str) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    root = tmp_path / "store"
    root.mkdir()
    target = root / "nightly"
    if planted == "empty dir":
        target.mkdir()
    elif planted == "sched symlink":
        target.mkdir()
        (target / ".sched").symlink_to(victim)
    elif planted == "dir symlink":
        target.symlink_to(victim)
    elif planted == "file":
        target.write_text("{}")
    else:
        target.symlink_to(tmp_path / "nowhere")
    opts = FleetOptions(store=root, run_id="nightly", python=_stub(tmp_path), poll_s=0.05)
    with pytest.raises(UsageError, match="run nightly exists") as caught:
        fan_out(LocalScheduler(), opts, ProbeOptions())
    assert caught.value.hint and "another --run-id" in caught.value.hint
    assert list(victim.iterdir()) == []  # nothing written through the planted links
    assert not (tmp_path / "nowhere").exists()


def test_a_fresh_run_directory_is_this_users_and_nobody_elses(tmp_path: Path) -> None:
    old = os.umask(0o000)  # even a permissive umask gives no group/other write
    try:
        run_dir = runs.create_run_dir(tmp_path / "store", "r2")
    finally:
        os.umask(old)
    for path in (run_dir, run_dir / layout.TASKS, run_dir / layout.SCHED):
        st = path.lstat()
        assert st.st_uid == os.geteuid() and not st.st_mode & 0o022, oct(st.st_mode)
    with pytest.raises(UsageError, match="exists"):
        runs.create_run_dir(tmp_path / "store", "r2")


# -- class 6: hostile store files give clear errors; the follow loop survives ---------------


def _deep(n: int) -> str:
    return "[" * n + "]" * n


@pytest.mark.parametrize(
    "content",
    [_deep(100_000), "[1, 2]", '"a string"', "null", "{not json", "\xff\xfe", "1" * 5000, ""],
)
def test_a_hostile_run_json_is_a_clear_error(tmp_path: Path, content: str) -> None:
    run_dir = tmp_path / "r1"
    run_dir.mkdir()
    (run_dir / "run.json").write_bytes(content.encode("utf-8", "surrogateescape"))
    with pytest.raises(EnvkitError) as caught:
        read_manifest(run_dir)
    assert str(run_dir / "run.json") in caught.value.message and caught.value.hint


def test_a_fifo_or_a_huge_run_json_does_not_hang_or_exhaust(tmp_path: Path) -> None:
    run_dir = tmp_path / "r1"
    run_dir.mkdir()
    os.mkfifo(run_dir / "run.json")
    with pytest.raises(FleetError, match="not a regular file"):
        read_manifest(run_dir)
    (run_dir / "run.json").unlink()
    (run_dir / "run.json").write_text('{"run": "r1", "pad": "' + "x" * (5 << 20) + '"}')
    with pytest.raises(FleetError, match="larger than"):
        read_store_json(run_dir / "run.json", limit=4 << 20, what="run manifest")


def test_the_follow_loop_survives_hostile_task_records(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path, requested={"nodes": 1, "nodelist": ["n1"]}, tasks_per_node=1)
    tasks = run_dir / layout.TASKS
    (tasks / "deep.json").write_text(_deep(100_000))
    (tasks / "list.json").write_text("[]")
    (tasks / "types.json").write_text('{"task": ["x"], "state": {}}')
    (tasks / "badstate.json").write_text('{"task": "badstate", "state": "ok\\nforged: ok"}')
    (tasks / "traversal.json").write_text(
        '{"task": "traversal", "state": "ok", "report": "../../etc/passwd"}'
    )
    (tasks / "renamed.json").write_text('{"task": "n1", "state": "ok", "report": "n1.json"}')
    os.mkfifo(tasks / "fifo.json")
    (tasks / "link.json").symlink_to("/etc/passwd")
    forged = "boom\nrun r1 (slurm job 1, completed): all ok\n  n1 ok n1.json"
    runs.write_json(tasks / "n1.json", {"task": "n1", "state": "failed", "error": forged})

    class Done:
        name = "fake"

        def status(self, job_id: str) -> JobStatus:
            return JobStatus(job_id, JobState.COMPLETED, ("n1",))

        def submit(self, request: object) -> str:
            return "1"

        def cancel(self, job_id: str) -> None:
            return None

    run = follow(Done(), run_dir, "1", sleep=lambda _: None)
    assert [(t.task, t.state) for t in run.tasks] == [("n1", "failed")]
    assert run.tasks[0].error is not None and "\n" not in run.tasks[0].error
    assert "\\nrun r1" in run.tasks[0].error  # escaped, visible, one line
    recorded = json.loads((run_dir / "run.json").read_text())["result"]  # the result was recorded
    assert recorded["tasks"][0]["state"] == "failed"


def test_probe_compare_of_a_hostile_run_is_a_clear_error_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from envkit.cli import main

    run_dir = tmp_path / "r1"
    run_dir.mkdir()
    (run_dir / "run.json").write_text(_deep(100_000))
    (run_dir / layout.TASKS).mkdir()
    (run_dir / layout.TASKS / "x.json").write_text("[[[[[[[[]]]]]]]]")
    (run_dir / "n1.json").write_text(_deep(100_000))
    code = main(["probe", "--compare", str(run_dir), "--json"])
    out = capsys.readouterr()
    assert code == 2 and "Traceback" not in out.err + out.out
    errors = json.loads(out.out)["errors"]
    assert "n1.json" in errors[0]["message"] and "nest" in errors[0]["message"]


def test_the_cli_refuses_a_planted_run_id_and_writes_nothing_through_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's PoC: `envkit probe --scheduler local --run-id nightly` into a pre-created STORE/nightly."""
    from envkit.cli import main

    victim = tmp_path / "victim"
    victim.mkdir()
    (tmp_path / "store" / "nightly").mkdir(parents=True)
    (tmp_path / "store" / "nightly" / ".sched").symlink_to(victim)
    code = main(["probe", "--scheduler", "local", "--store", str(tmp_path / "store"), "--run-id", "nightly",
                 "--frameworks", "torch", "--json"])  # fmt: skip
    out = capsys.readouterr()
    assert code == 2 and "Traceback" not in out.err
    error = json.loads(out.out)["errors"][0]
    assert "run nightly exists" in error["message"] and "another --run-id" in error["hint"]
    assert list(victim.iterdir()) == [] and not (tmp_path / "store" / "nightly" / "run.json").exists()
