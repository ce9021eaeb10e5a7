"""`envkit init --from image:REF` (the snapshot script run in a real container) and `--from host`."""

from __future__ import annotations

import json
import platform
from importlib import metadata
from pathlib import Path

import pytest

from envkit.build.bootstrap import bootstrap_image
from envkit.cli import main
from envkit.engine.docker_api import DockerEngine
from envkit.spec.load import load_spec

BASE = "envkit/debian-python:bookworm"


@pytest.mark.docker
def test_from_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = DockerEngine()
    if engine.inspect(BASE) is None:
        pytest.skip(f"{BASE} is absent (tests/integration/test_build_docker.py bootstraps it)")
    image = bootstrap_image(engine, BASE).image.tags[0]
    run = engine.run(image, ["python3", "-c", "import platform; print(platform.python_version())"])
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path))
    assert main(["init", "--from", f"image:{image}", "--name", "from-image", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["result"]
    assert result["kind"] == "snapshot"
    assert result["detected"]["python"] == ".".join(run.stdout.strip().split(".")[:2])
    spec = load_spec(tmp_path / "environments" / "from-image.yaml").spec
    assert spec.pip == tuple(result["pip"]) and all("==" in p for p in spec.pip)


def test_from_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path))
    monkeypatch.delenv("CONDA_PREFIX", raising=False)  # pip's view of this interpreter
    assert main(["init", "--from", "host", "--cuda", "cpu", "--name", "here", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["result"]
    assert result["detected"]["python"] == ".".join(platform.python_version_tuple()[:2])
    spec = load_spec(tmp_path / "environments" / "here.yaml").spec
    pinned = {p.split("==")[0].lower() for p in spec.pip}
    assert "packaging" in pinned and f"packaging=={metadata.version('packaging')}" in spec.pip
    direct = metadata.distribution("envkit-dl").read_text("direct_url.json") if _has("envkit-dl") else None
    if direct and "dir_info" in direct:  # this checkout, installed from its directory: reported, not pinned
        assert "envkit-dl" not in pinned
        assert any("envkit-dl" in x["item"] and "PEP 610" in x["why"] for x in result["not_carried"])


def _has(name: str) -> bool:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True
