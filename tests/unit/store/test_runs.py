"""A run in the store: its manifest as a typed value, its reports and failed tasks, hostile files."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from envkit.errors import FleetError, UsageError
from envkit.store.manifest import RunManifest, TaskResult, read_manifest, result_tasks
from envkit.store.runs import find_run, load_run


def _run(tmp_path: Path, manifest: Any, reports: tuple[str, ...] = ("n1", "n2")) -> Path:
    run_dir = tmp_path / "store" / "r1"
    (run_dir / ".tasks").mkdir(parents=True)
    (run_dir / "run.json").write_text(manifest if isinstance(manifest, str) else json.dumps(manifest))
    for name in reports:
        (run_dir / f"{name}.json").write_text("{}")
    return run_dir


def test_the_manifest_is_a_frozen_typed_value(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, {"run": "r1", "tasks_per_node": 4, "options": {"steps": 3}})
    manifest = read_manifest(run_dir)
    assert (manifest.run, manifest.tasks_per_node, manifest.result) == ("r1", 4, ())
    assert manifest.document["options"] == {"steps": 3}
    with pytest.raises(TypeError):
        manifest.document["run"] = "other"  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        manifest.run = "other"  # type: ignore[misc]


@pytest.mark.parametrize("per_node", ["4", 2.5, None, True, [4]])
def test_tasks_per_node_that_is_not_an_integer_reads_as_one(tmp_path: Path, per_node: Any) -> None:
    assert read_manifest(_run(tmp_path, {"run": "r1", "tasks_per_node": per_node})).tasks_per_node == 1


@pytest.mark.parametrize(
    ("content", "error", "says"),
    [
        ('{"scheduler": "slurm"}', FleetError, "no run id"),
        ("[1, 2]", FleetError, "not an object"),
        ('{"run": ', FleetError, "not a run manifest"),
        ("[" * 100 + "]" * 100, FleetError, "run manifest"),
    ],
)
def test_a_damaged_manifest_is_an_error_naming_it(
    tmp_path: Path, content: str, error: type[Exception], says: str
) -> None:
    run_dir = _run(tmp_path, content)
    with pytest.raises(error, match=says):
        read_manifest(run_dir)


def test_no_manifest_is_not_a_run(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a fleet run"):
        read_manifest(tmp_path)
    assert find_run(str(tmp_path), tmp_path) is None


def test_result_tasks_keep_task_shapes_only_and_on_one_line() -> None:
    data = {
        "result": {
            "tasks": [
                {"task": "a\nb", "state": "failed", "error": "x\x1b[31mred"},
                {"task": "ok1", "state": "ok"},
                {"task": 5, "state": "failed"},
                "junk",
                None,
                {"task": "c", "error": ""},
                {"task": "d", "state": "failed", "error": "e" * 5000},
            ]
        }
    }
    got = result_tasks(data)
    assert [t.task for t in got] == ["a\\nb", "ok1", "c", "d"]
    assert "\x1b" not in (got[0].error or "") and got[1].ok and not got[0].ok
    assert got[2] == TaskResult("c", "None", None)
    assert len(got[3].error or "") == 2000
    shapes: list[dict[str, object]] = [
        {},
        {"result": []},
        {"result": {"tasks": {}}},
        {"result": {"tasks": "x"}},
    ]
    for shape in shapes:
        assert result_tasks(shape) == ()


def test_a_run_lists_its_reports_by_name_and_its_failed_tasks(tmp_path: Path) -> None:
    manifest = {
        "run": "r1",
        "result": {"tasks": [{"task": "n3", "state": "never-ran"}, {"task": "n1", "state": "failed"}]},
    }
    run_dir = _run(tmp_path, manifest, ("n2", "n1", "n10"))
    (run_dir / ".tasks" / "n4.json").write_text(json.dumps({"task": "n4", "state": "failed", "error": "oom"}))
    (run_dir / ".tasks" / "n5.json").write_text(json.dumps({"task": "other", "state": "failed"}))
    assert find_run("r1", tmp_path / "store") == run_dir
    named, failed = load_run(run_dir, lambda p: p.stat().st_size)
    assert [n for n, _ in named] == ["n1", "n10", "n2"]  # by name; n1 has a report: not failed
    assert failed == [("n3", "never-ran: no report"), ("n4", "failed: oom")]


def test_a_manifest_damaged_beyond_reading_still_lists_the_tasks_records(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, "{not json", ())
    (run_dir / ".tasks" / "n4.json").write_text(json.dumps({"task": "n4", "state": "failed", "error": "oom"}))
    assert load_run(run_dir, str) == ([], [("n4", "failed: oom")])


def test_from_json_keeps_a_copy(tmp_path: Path) -> None:
    data: dict[str, object] = {"run": "r1"}
    manifest = RunManifest.from_json(data, tmp_path / "run.json")
    data["run"] = "changed"
    assert manifest.document["run"] == "r1"
