"""Images that several integration tests share: built once per test session, removed after it.

``demo_torch_image`` is the CPU demo image of ``make demo`` (:data:`envkit.demo.DEMO_SPEC`: CPU
torch 2.13.0 on the debootstrapped Debian, built offline from a local wheel directory, probed at
build time). It is the expensive one (~165 s here: a wheelhouse of torch and its dependencies, then
a ~700 MB install), so every test that needs real torch inside an image takes it from here.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from envkit import demo
from envkit.build.bootstrap import bootstrap_image
from envkit.cli import main
from envkit.engine.docker_api import DockerEngine
from tests.conftest import docker_available

BASE = "envkit/debian-python:bookworm"
TORCH_WHEELS = Path(os.environ.get("ENVKIT_TORCH_WHEELS", "/opt/wheels"))
DEMO_NAME = f"itest{os.getpid()}-demo-cpu"  # unique per test run: one dockerd serves every checkout


def debian_base(engine: DockerEngine) -> str:
    """BASE's tag, debootstrapped by envkit itself when missing (root and debootstrap), else a skip."""
    if engine.inspect(BASE) is None and (shutil.which("debootstrap") is None or os.geteuid() != 0):
        pytest.skip(f"{BASE} is missing and debootstrap (as root) is not available to make it")
    return bootstrap_image(engine, BASE).image.tags[0]


def torch_wheel_dir(tmp: Path) -> Path:
    """torch from TORCH_WHEELS plus its dependencies (from PyPI): the lock's and the build's only source."""
    folder = tmp / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--dest", str(folder), "--only-binary=:all:",
         "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64", "--find-links", str(TORCH_WHEELS),
         "torch==2.13.0+cpu", "numpy>=1.26,<3", "--disable-pip-version-check", "--progress-bar", "off"],
        check=True, capture_output=True,
    )  # fmt: skip
    return folder


@pytest.fixture(scope="session")
def demo_torch_image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """``envkit build --offline --probe`` of the demo's spec: the build's result (``tag``, ``probe``, ...),
    the project's ``root`` and the wheel directory (``find_links``)."""
    if not docker_available():
        pytest.skip("no Docker engine reachable (start dockerd or set DOCKER_HOST)")
    if not list(TORCH_WHEELS.glob("torch-2.13.0+cpu-cp311-*.whl")):
        pytest.skip(f"no torch 2.13.0 CPU wheel in {TORCH_WHEELS}")
    engine = DockerEngine()
    debian_base(engine)
    root = tmp_path_factory.mktemp("demo-project")
    wheels = torch_wheel_dir(root)
    spec = demo.DEMO_SPEC.format(wheels=wheels.as_uri()).replace("name: demo-cpu\n", f"name: {DEMO_NAME}\n")
    assert f"name: {DEMO_NAME}\n" in spec  # the demo's spec, under this run's name
    (root / "environments").mkdir()
    (root / "environments" / f"{DEMO_NAME}.yaml").write_text(spec)
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out):
        mp.setenv("ENVKIT_ROOT", str(root))
        mp.setenv("ENVKIT_FIND_LINKS", str(wheels))
        code = main(["build", DEMO_NAME, "--offline", "--probe", "--json"])
    built = json.loads(out.getvalue())
    assert code == 0, built
    try:
        # where it was built, for tests that build more from the same project (the debug image)
        yield {**built["result"], "root": str(root), "find_links": str(wheels)}
    finally:
        for info in engine.images(f"io.envkit.name={DEMO_NAME}"):
            for tag in info.tags:
                engine.remove(tag)
