"""The image reaches every node by digest (markers ``docker``, ``registry``, ``slurm``).

``envkit build NAME --push`` to the loopback registry (``.ci/registry.sh start``), then a Slurm
fan-out with ``--image NAME``: every node's engine pulls ``REGISTRY/envkit/NAME@sha256:…`` (the
registry tag is removed here first, so the pull really happens). Without a registry: the image is
saved once into the store, removed, and each node loads it and checks its id. The image has no
framework: the probe runs there and reports torch as skipped, which is enough to prove the path.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from envkit.build.bootstrap import bootstrap_image
from envkit.cli import main
from envkit.engine.docker_api import DockerEngine
from envkit.engine.docker_store import DockerImageStore
from envkit.fleet.fanout import FleetOptions, fan_out
from envkit.fleet.images import image_for_fleet
from envkit.fleet.slurm import SlurmScheduler
from envkit.probe.runner import ProbeOptions
from tests.conftest import registry_address

pytestmark = [pytest.mark.docker, pytest.mark.registry, pytest.mark.slurm]

BASE = "envkit/debian-python:bookworm"
NAME = f"itest{os.getpid()}-fleet"


@pytest.fixture(scope="module")
def engine() -> DockerEngine:
    return DockerEngine()


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, engine: DockerEngine) -> Iterator[Path]:
    if engine.inspect(BASE) is None:
        bootstrap_image(engine, BASE)
    root = tmp_path_factory.mktemp("fleet-project")
    (root / "environments").mkdir()
    spec = f'name: {NAME}\npython: "3.11"\ncuda: cpu\ninstaller: venv\nbase_image: {BASE}\n'
    spec += "pip:\n  - six==1.16.0\n"
    (root / "environments" / f"{NAME}.yaml").write_text(spec)
    yield root
    for info in engine.images(f"io.envkit.name={NAME}"):
        engine.remove(info.id)


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def _nodes() -> tuple[int, int]:
    from tests.integration.test_fleet_slurm import _layout

    return _layout()


def test_push_then_every_node_pulls_by_digest(
    engine: DockerEngine, project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    registry = registry_address()
    assert registry is not None
    monkeypatch.setenv("ENVKIT_ROOT", str(project))
    code, built = _json(capsys, "build", NAME, "--offline", "--push", registry)
    assert code == 0, built
    pushed = built["result"]["pushed"]
    assert pushed["ref"].startswith(f"{registry}/envkit/{NAME}@sha256:")
    record = json.loads((project / ".envkit" / "pushed" / f"{NAME}.json").read_text())
    assert record["digest"] == pushed["digest"] and record["image_id"] == built["result"]["image_id"]
    engine.remove(f"{record['repository']}:{record['tag']}")  # the nodes must pull it from the registry
    assert engine.inspect(pushed["ref"]) is None

    nodes, per_node = _nodes()
    store = project / "store"
    code, out = _json(capsys, "probe", "--slurm", "--nodes", str(nodes), "--tasks-per-node", str(per_node),
                      "--image", NAME, "--store", str(store), "--run-id", "pushed", "--frameworks", "torch",
                      "--steps", "2", "--time", "10")  # fmt: skip
    assert code == 0, out
    assert [t["state"] for t in out["result"]["tasks"]] == ["ok"] * 3
    manifest = json.loads((store / "pushed" / "run.json").read_text())
    assert manifest["image"]["ref"] == pushed["ref"]
    for task in out["result"]["tasks"]:
        report = json.loads((store / "pushed" / task["report"]).read_text())
        container = report["fingerprint"]["container"]
        assert container["image"] == pushed["ref"] and container["image_id"] == record["image_id"]
        assert report["frameworks"]["torch"]["status"] == "skipped"
    assert engine.inspect(pushed["ref"]) is not None  # pulled by digest


def test_without_a_registry_the_store_carries_the_image(engine: DockerEngine, project: Path) -> None:
    info = engine.inspect(f"envkit/{NAME}:latest")
    if info is None:
        pytest.skip("the push test builds the image")
    store = project / "store"
    image = image_for_fleet(engine, DockerImageStore(engine), info.id, store, project)
    assert image["id"] == info.id and Path(image["tar"]).is_file()
    for tag in info.tags:
        engine.remove(tag)
    engine.remove(info.id)
    assert engine.inspect(info.id) is None
    nodes, per_node = _nodes()
    opts = FleetOptions(store=store, run_id="tar", nodes=nodes, tasks_per_node=per_node, image=image,
                        poll_s=0.5, time_limit="10")  # fmt: skip
    run = fan_out(SlurmScheduler(), opts, ProbeOptions(frameworks=("torch",), steps=2))
    assert run.ok, run.tasks
    for path in run.reports:
        report = json.loads(path.read_text())
        assert report["fingerprint"]["container"]["image_id"] == info.id
    assert engine.inspect(info.id) is not None  # loaded from the store's tar
