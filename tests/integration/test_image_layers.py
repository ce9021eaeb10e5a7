"""Image layers that follow the lock, on a real engine (issue 47; marker ``docker``).

An offline venv spec with a compiled package (numpy: the ``native`` layer) and pure-Python ones
(six, idna: the ``python`` layer) is built, one pure-Python pin changed, relocked and rebuilt:
every layer but the ``python`` one and the SBOM's keeps its diff_id, the ``native`` group's pip
install comes from Docker's cache (its layer stage was kept), the rebuilt image is assembled from
those two layers alone (not saved whole) and is the image a build without any cache makes, and it
runs the new pin with its files where they belong (``/opt/env``, .pyc compiled for that path).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from envkit.cli import main
from envkit.engine.docker_api import DockerEngine
from tests.conftest import registry_answers
from tests.integration.conftest import debian_base, remove_images_of

pytestmark = pytest.mark.docker
NAME = f"layers-it-{os.getpid()}"


@pytest.fixture(scope="module")
def engine() -> DockerEngine:
    return DockerEngine()


@pytest.fixture
def empty_registry(tmp_path: Path) -> Iterator[str]:
    """A registry of its own on a free loopback port, empty (the shared one of ``.ci/registry.sh`` keeps
    every layer an earlier test or run pushed, which would make the first push send nothing)."""
    binary = shutil.which("docker-registry")
    if binary is None:
        pytest.skip("no docker-registry (.ci/registry.sh start installs it)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    config = tmp_path / "registry.yml"
    config.write_text(
        f"version: 0.1\nlog:\n  level: warn\n"
        f"storage:\n  filesystem:\n    rootdirectory: {tmp_path / 'blobs'}\n"
        f"http:\n  addr: {address}\n"
    )
    server = subprocess.Popen(
        [binary, "serve", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        for _ in range(60):
            if registry_answers(address, timeout=2):
                break
            time.sleep(0.25)
        else:
            pytest.fail(f"docker-registry did not answer on {address}")
        yield address
    finally:
        server.terminate()
        server.wait(timeout=30)


def _spec(root: Path, base: str, idna: str) -> None:
    path = root / "environments" / f"{NAME}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'name: {NAME}\npython: "3.11"\ncuda: cpu\ninstaller: venv\nbase_image: {base}\noffline: true\n'
        f"pip:\n  - numpy==1.26.4\n  - six==1.16.0\n  - idna=={idna}\n"
    )


def _build(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], root: Path, *extra: str
) -> dict[str, Any]:
    monkeypatch.setenv("ENVKIT_ROOT", str(root))
    code = main(["build", NAME, "--json", *extra])
    out = capsys.readouterr().out
    assert code == 0, out[-2000:]
    return dict(json.loads(out)["result"])


def test_a_pure_python_pin_changes_its_layer_only(
    engine: DockerEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    base = debian_base(engine)
    try:
        _spec(tmp_path, base, "3.7")
        first = _build(monkeypatch, capsys, tmp_path)
        _spec(tmp_path, base, "3.8")
        second = _build(monkeypatch, capsys, tmp_path)
        before, after = first["normalized"]["diff_ids"], second["normalized"]["diff_ids"]
        own = first["normalized"]["own_layers"]
        assert own == second["normalized"]["own_layers"] == 5  # user, venv, native, python, SBOM
        # the base's, the user's, the venv's and numpy's layers: the same bytes
        assert before[:-2] == after[:-2]
        assert before[-2] != after[-2] and before[-1] != after[-1]  # six + idna; the SBOM
        sizes = second["normalized"]["layer_sizes"]
        assert sizes[-2] < 2_000_000 < sizes[-3]  # the new layer is the small pure-Python one
        log = Path(second["log_path"]).read_text()
        # the native group's kept stage starts its stage: no install, none of its wheels sent
        assert re.search(r"Step \d+/\d+ : FROM sha256:[0-9a-f]{64} AS layer-native\n", log), log[-3000:]
        assert "layers/native.lock" not in log
        assert second["context_bytes"] < 1_000_000  # numpy's 18 MB wheel stayed home
        assert second["normalized"]["layers_reused"] >= 3  # user, venv, native: not rewritten
        show = "import idna, idna.core, numpy; print(idna.__version__, idna.core.encode.__code__.co_filename)"
        run = engine.run(second["tag"], ["python", "-c", show])
        assert run.exit_code == 0, run.stderr
        assert run.stdout.split() == ["3.8", "/opt/env/lib/python3.11/site-packages/idna/core.py"]
        # the rebuild was not saved whole: described, and its two new layers made again alone; the
        # image is the one a build that reuses nothing makes (the whole image saved and normalized)
        assert "assemble" in second["normalized"]["stages"] and "save" not in second["normalized"]["stages"]
        third = _build(monkeypatch, capsys, tmp_path, "--no-cache")
        assert "save" in third["normalized"]["stages"]
        assert third["image_id"] == second["image_id"]
    finally:
        remove_images_of(engine, NAME)


@pytest.mark.registry
def test_a_second_push_after_one_pin_uploads_the_changed_layers_only(
    engine: DockerEngine,
    empty_registry: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The registry receives a layer once: after a one-pin change the push sends the ``python``
    layer and the SBOM's (and the image config), as the engine's push stream counts them."""
    registry = empty_registry
    base = debian_base(engine)
    try:
        _spec(tmp_path, base, "3.7")
        first = _build(monkeypatch, capsys, tmp_path, "--push", registry)["pushed"]
        _spec(tmp_path, base, "3.8")
        built = _build(monkeypatch, capsys, tmp_path, "--push", registry)
        second = built["pushed"]
        sizes = built["normalized"]["layer_sizes"]
        print(f"push 1: {first['layers_sent']} layers, {first['bytes_sent']:,} bytes; push 2: "
              f"{second['layers_sent']} layers, {second['bytes_sent']:,} bytes, "
              f"{second['layers_present']} already there")  # fmt: skip
        assert first["layers_present"] == 0  # an empty registry: every layer uploaded once
        assert first["bytes_sent"] > 10_000_000  # numpy's layer among them
        assert first["layers_sent"] == second["layers_sent"] + second["layers_present"]
        assert second["layers_sent"] == 2  # six + idna's layer and the SBOM's
        assert second["layers_present"] >= 3  # the base's, the venv's, numpy's: not sent again
        assert 0 < second["bytes_sent"] <= sizes[-2] + sizes[-1] < 2_000_000
    finally:
        remove_images_of(engine, NAME)
