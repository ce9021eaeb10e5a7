"""``envkit guard replay DUMP --slurm``: an incident's step replayed on other nodes as fleet tasks.

On the real Slurm cluster (marker ``slurm``; CI runs three ``slurmd`` on the loopback) one task
per node replays the demo's guarded training's inf-loss step with real torch and gets its own
verdict; the same through the local scheduler (tasks as processes, no cluster needed). The node
side refuses a run manifest that is not a guard replay's, not in its shape, or not this user's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("safetensors")

from envkit.cli import main
from envkit.fleet.guard_replay import KIND, run_replay_task
from envkit.guard import example
from envkit.store import layout as store_layout
from envkit.store import runs
from tests.unit.hardening.hostile import make_foreign

pytestmark = [pytest.mark.frameworks, pytest.mark.filterwarnings("ignore::UserWarning")]

ENTRY = "envkit.guard.example:build"


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("guard") / "run"
    example.train(run, bad_at=3)
    return run / "incidents" / "step-3"


def _replay(capsys: pytest.CaptureFixture[str], dump: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    code = main(["guard", "replay", str(dump), "--entry", ENTRY, *extra, "--json"])
    return code, json.loads(capsys.readouterr().out)


def _nodes() -> list[str]:
    """Three nodes where the cluster has them (CI), else one."""
    from tests.integration.test_fleet_slurm import _layout

    nodes, _ = _layout()
    return ["--nodes", str(nodes if nodes > 1 else 1)]


@pytest.mark.slurm
def test_every_slurm_node_replays_the_step_reproducible(
    dump: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    layout = _nodes()
    code, out = _replay(
        capsys, dump, "--slurm", *layout, "--time", "10", "--store", str(tmp_path), "--run-id", "itest"
    )
    assert code == 0 and out["ok"], out
    result = out["result"]
    fleet = result["fleet"]
    assert fleet["scheduler"] == "slurm" and fleet["job_state"] == "completed"
    tasks = fleet["tasks"]
    assert len(tasks) == int(layout[1]) and all(t["state"] == "ok" for t in tasks), tasks
    assert result["verdict"] == "reproducible"
    for task in tasks:
        verdict = result["verdicts"][task["task"]]
        assert verdict["verdict"] == "reproducible"
        assert verdict["replays"] == [{"loss": "inf", "grad_norm": "nan", "error": None}] * 2
        assert verdict["localization"]["first_nonfinite_module"]["module"] == "head"
        assert f"replayed on {task['node']} ({task['task']}.json)" in verdict["notes"]
        written = json.loads((tmp_path / "itest" / f"{task['task']}.json").read_text())
        assert written["kind"] == "envkit-guard-image-replay"  # the node's own fingerprint came back
        assert written["fingerprint"]["host"]  # the node's fingerprint, judged on this side
    staged = tmp_path / "itest" / "dump" / "batch.safetensors"
    assert staged.read_bytes() == (dump / "batch.safetensors").read_bytes()


@pytest.mark.slurm
def test_a_node_that_does_not_reproduce_the_outcome_gets_the_causes(
    dump: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The recorded outcome rewritten as a 64-thread host's: each node says environment, threads first."""
    import shutil

    from envkit.guard.dump import write_manifest

    edited = tmp_path / "edited"
    shutil.copytree(dump, edited)
    manifest = json.loads((edited / "manifest.json").read_text())
    manifest.pop("files")
    manifest["outcome"]["loss"] = 1.25
    env = json.loads((edited / "env.json").read_text())
    env["info"]["switches"]["num_threads"] = 64
    (edited / "env.json").write_text(json.dumps(env))
    write_manifest(edited, manifest)
    code, out = _replay(
        capsys, edited, "--slurm", "--nodes", "1", "--time", "10", "--store", str(tmp_path / "s")
    )
    assert code == 1 and not out["errors"], out
    (verdict,) = out["result"]["verdicts"].values()
    assert out["result"]["verdict"] == verdict["verdict"] == "environment"
    assert any(c["kind"] == "threads" for c in verdict["causes"]), verdict["causes"]


def test_the_local_scheduler_replays_on_each_pretend_node(
    dump: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _replay(capsys, dump, "--scheduler", "local", "--nodelist", "a,b", "--store", str(tmp_path))
    assert code == 0, out
    assert sorted(out["result"]["verdicts"]) == ["a", "b"]
    assert {v["verdict"] for v in out["result"]["verdicts"].values()} == {"reproducible"}


def test_one_damaged_result_loses_that_nodes_verdict_only(
    dump: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from envkit.errors import FleetError
    from envkit.fleet import guard_replay
    from envkit.store.reads import read_store_json as real

    def damaged_on_a(path: Path, **kw: Any) -> Any:
        if path.name.startswith("a"):
            raise FleetError(f"{path}: not JSON", hint="the node's result was damaged")
        return real(path, **kw)

    monkeypatch.setattr(guard_replay, "read_store_json", damaged_on_a)
    code, out = _replay(capsys, dump, "--scheduler", "local", "--nodelist", "a,b", "--store", str(tmp_path))
    assert code == 1, out
    assert (
        list(out["result"]["verdicts"]) == ["b"]
        and out["result"]["verdicts"]["b"]["verdict"] == "reproducible"
    )
    assert list(out["result"]["unreadable"]) == ["a"] and "not JSON" in out["result"]["unreadable"]["a"]


def test_tasks_that_cannot_replay_say_why_and_give_no_verdict(
    dump: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = "envkit.guard.example:no_such"
    code = main(
        ["guard", "replay", str(dump), "--entry", entry, "--scheduler", "local", "--store", str(tmp_path)]
    )
    captured = capsys.readouterr()
    assert code == 1, captured.err
    assert "local1: failed: --entry envkit.guard.example:no_such: envkit.guard.example has no function" in (
        captured.out
    )
    assert captured.out.rstrip().endswith("verdict: none")


def test_a_changed_batch_is_refused_before_anything_is_submitted(
    dump: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    from safetensors.torch import load_file, save_file

    changed = tmp_path / "changed"
    shutil.copytree(dump, changed)
    batch = load_file(str(changed / "batch.safetensors"))
    batch["b0"][0, 0] = 0.0
    save_file(batch, str(changed / "batch.safetensors"))
    code, out = _replay(capsys, changed, "--scheduler", "local", "--store", str(tmp_path / "store"))
    assert code == 2 and out["errors"][0]["type"] == "DumpError", out
    assert "sha256" in out["errors"][0]["message"]
    assert not (tmp_path / "store").exists()  # no run was created, nothing was submitted


def test_image_and_a_scheduler_are_one_or_the_other(dump: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _replay(capsys, dump, "--slurm", "--image", "envkit/demo-cpu")
    assert code == 2 and "choose one" in out["errors"][0]["message"]


def _run_dir(tmp_path: Path, dump: Path, **fields: Any) -> Path:
    import shutil

    run_dir = runs.create_run_dir(tmp_path, "r1")
    shutil.copytree(dump, run_dir / "dump")
    manifest = {"run": "r1", "kind": KIND, "entry": ENTRY, "code": str(tmp_path), "tasks_per_node": 1,
                "requested": {"nodes": 1, "nodelist": []}, **fields}  # fmt: skip
    runs.write_json(run_dir / store_layout.MANIFEST, manifest, within=run_dir)
    return run_dir


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"kind": "envkit-probe"}, "not a guard replay run"),
        ({"entry": "os.system('id'):x"}, "entry must be module:function"),
        ({"entry": ["envkit.guard.example", "build"]}, "entry must be module:function"),
        ({"code": "relative/dir"}, "code must be an absolute directory"),
        ({"entry": "envkit.guard.example:no_such"}, "has no function no_such"),
    ],
)
def test_the_node_side_refuses_a_manifest_not_in_its_shape(
    dump: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], fields: dict[str, Any], expected: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)  # the task changes into the code directory: restored after the test
    run_dir = _run_dir(tmp_path, dump, **fields)
    assert run_replay_task(run_dir, {"ENVKIT_NODE": "n1"}) == 3
    record = json.loads((run_dir / store_layout.TASKS / "n1.json").read_text())
    assert record["state"] == "failed" and expected in record["error"], record
    assert expected in capsys.readouterr().err
    assert not (run_dir / "n1.json").exists()


@pytest.mark.parametrize("how", ["other user", "group-writable", "world-writable"])
def test_the_node_side_runs_nothing_another_user_could_have_written(
    dump: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    from envkit.fleet.guard_replay import main as task_main

    run_dir = _run_dir(tmp_path, dump)
    make_foreign(run_dir / store_layout.MANIFEST, how)
    assert task_main([str(run_dir)]) == 3
    assert "envkit runs nothing another user could have written" in capsys.readouterr().err
    assert not list((run_dir / store_layout.TASKS).iterdir())  # not even a record
