"""Issue 16, item 2: an image built from a spec with non-ASCII, tabs, `$` and `${HOME}` in env values
and the description carries exactly the spec's values (read back through the engine), and a spec
PATH is prepended to the environment's own (marker ``docker``; reuses the offline venv build)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest
import yaml

from envkit.cli import main
from envkit.engine.docker_api import DockerEngine
from envkit.engine.protocol import ImageInfo
from tests.integration.conftest import remove_images_of

pytestmark = pytest.mark.docker

BASE = "envkit/debian-python:bookworm"
NAME = f"itest{os.getpid()}-values"
ENV = {
    "GREETING": "café naïve 日本語 🚀",
    "WITH_TAB": "a\tb",
    "LITERAL_HOME": "$HOME",
    "BRACED": "${HOME}/x $$ end",
    "QUOTES": "say \"hi\" and 'bye' \\ back\\slash",
    "INJECT": 'x" LD_PRELOAD="/tmp/evil.so',
    "PATH": "/opt/tools/bin:/opt/$HOME/bin",
}
DESCRIPTION = 'Café $HOME ${PATH} «ü» "quoted" back\\slash'


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DockerEngine, ImageInfo]]:
    engine = DockerEngine()
    if engine.inspect(BASE) is None:
        pytest.skip(f"{BASE} is missing (tests/integration/test_build_docker.py makes it)")
    root = tmp_path_factory.mktemp("values")
    (root / "environments").mkdir()
    spec = {
        "name": NAME,
        "description": DESCRIPTION,
        "python": "3.11",
        "cuda": "cpu",
        "installer": "venv",
        "base_image": BASE,
        "pip": ["six==1.16.0"],
        "env": ENV,
    }
    (root / "environments" / f"{NAME}.yaml").write_text(yaml.safe_dump(spec, allow_unicode=True), "utf-8")
    old = os.environ.get("ENVKIT_ROOT")
    os.environ["ENVKIT_ROOT"] = str(root)
    try:
        code = main(["build", NAME, "--offline"])
    finally:
        if old is None:
            os.environ.pop("ENVKIT_ROOT")
        else:
            os.environ["ENVKIT_ROOT"] = old
    assert code == 0
    info = engine.inspect(f"envkit/{NAME}:latest")
    assert info is not None
    yield engine, info
    remove_images_of(engine, NAME)


def test_labels_carry_the_spec_values(built: tuple[DockerEngine, ImageInfo]) -> None:
    _, info = built
    assert info.labels["org.opencontainers.image.description"] == DESCRIPTION
    assert info.labels["org.opencontainers.image.title"] == NAME


def test_environment_carries_the_spec_values(built: tuple[DockerEngine, ImageInfo]) -> None:
    engine, info = built
    script = "import json, os; print(json.dumps(dict(os.environ)))"
    result = engine.run(info.tags[0], ["python", "-c", script])
    assert result.exit_code == 0, result
    env = json.loads(result.stdout.strip().splitlines()[-1])
    for key, value in ENV.items():
        if key != "PATH":
            assert env[key] == value, key
    assert "LD_PRELOAD" not in env
    entries = env["PATH"].split(":")
    assert entries[:3] == ["/opt/tools/bin", "/opt/$HOME/bin", "/opt/env/bin"]
    assert "/usr/bin" in entries and "" not in entries
