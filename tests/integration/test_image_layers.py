"""Image layers that follow the lock, on a real engine (issue 47; marker ``docker``).

An offline venv spec with a compiled package (numpy: the ``native`` layer) and pure-Python ones
(six, idna: the ``python`` layer) is built, one pure-Python pin changed, relocked and rebuilt:
every layer but the ``python`` one and the SBOM's keeps its diff_id, the ``native`` group's pip
install comes from Docker's cache (its layer stage was kept), and the image runs the new pin with
its files where they belong (``/opt/env``, .pyc compiled for that path).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from envkit.cli import main
from envkit.engine.docker_api import DockerEngine
from tests.integration.conftest import debian_base

pytestmark = pytest.mark.docker
NAME = f"layers-it-{os.getpid()}"


@pytest.fixture(scope="module")
def engine() -> DockerEngine:
    return DockerEngine()


def _spec(root: Path, base: str, idna: str) -> None:
    path = root / "environments" / f"{NAME}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'name: {NAME}\npython: "3.11"\ncuda: cpu\ninstaller: venv\nbase_image: {base}\noffline: true\n'
        f"pip:\n  - numpy==1.26.4\n  - six==1.16.0\n  - idna=={idna}\n"
    )


def _build(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], root: Path) -> dict[str, Any]:
    monkeypatch.setenv("ENVKIT_ROOT", str(root))
    code = main(["build", NAME, "--json"])
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
        native = re.search(r"Step \d+/\d+ : RUN [^\n]*layers/native\.lock[^\n]*\n( ---> Using cache)?", log)
        assert native is not None and native.group(1), "the native group's install was not cached"
        show = "import idna, idna.core, numpy; print(idna.__version__, idna.core.encode.__code__.co_filename)"
        run = engine.run(second["tag"], ["python", "-c", show])
        assert run.exit_code == 0, run.stderr
        assert run.stdout.split() == ["3.8", "/opt/env/lib/python3.11/site-packages/idna/core.py"]
    finally:
        for info in engine.images(f"io.envkit.name={NAME}"):
            for tag in info.tags:
                engine.remove(tag)
        engine.prune_builder_images(NAME)
