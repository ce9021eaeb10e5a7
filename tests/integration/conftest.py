"""Images that several integration tests share: built once per test session, removed after it.

``cuda_paddle_image`` is the flagship ``cuda11.8-paddle2.6`` as shipped (environments/ and its
committed lock under images/, copied into a temporary project), built with ``--frozen`` from NVIDIA's
PyPI CUDA wheels on the debootstrapped Debian (``cuda_runtime: pypi``): no GPU, no registry, no conda
channel; ~25 min on 2 busy cores. Its wheelhouse (~2.4 GB) is shared with the checkout's own cache
(``.envkit/wheelhouse``, hard links both ways), so it is downloaded once per machine. The build is
the shipped one, byte for byte, so an image of the same context that is already there (an
``envkit build cuda11.8-paddle2.6`` of this checkout, another session's) is used as it is and kept;
an image this session built is removed after it.

``demo_torch_image`` is the CPU demo image of ``make demo`` (:data:`envkit.demo.DEMO_SPEC`: CPU
torch 2.13.0 on the debootstrapped Debian, built offline from a local wheel directory, probed at
build time). It is the expensive one (~165 s here: a wheelhouse of torch and its dependencies, then
a ~700 MB install), so every test that needs real torch inside an image takes it from here.
"""

from __future__ import annotations

import contextlib
import hashlib
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
from tests.integration.machine_lock import machine_lock

BASE = "envkit/debian-python:bookworm"
TORCH_WHEELS = Path(os.environ.get("ENVKIT_TORCH_WHEELS", "/opt/wheels"))
DEMO_NAME = f"itest{os.getpid()}-demo-cpu"  # unique per test run: one dockerd serves every checkout
REPO = Path(__file__).resolve().parents[2]
FLAGSHIP = "cuda11.8-paddle2.6"
# the modules on the flagship CUDA image and the real CUDA wheels: .ci/run makes both in the background
# (tests/integration/prebuild.py) while the rest of the suite runs, so these run last
PREBUILT_MODULES = (
    "test_cuda_images.py",
    "test_readiness_extensions.py",
    "test_readiness_images.py",
    "test_readiness_lock_real_torch.py",
    "test_readiness_real_wheels.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests of PREBUILT_MODULES after all others, each group in its collected order."""

    def late(item: pytest.Item) -> bool:
        return item.path.parent == Path(__file__).parent and item.path.name in PREBUILT_MODULES

    items[:] = [i for i in items if not late(i)] + [i for i in items if late(i)]


def debian_base(engine: DockerEngine) -> str:
    """BASE's tag, debootstrapped by envkit itself when missing (root and debootstrap), else a skip.
    Made once per machine: a second caller (``.ci/run``'s prebuild, another session) waits for it."""
    with machine_lock("debian-base"):
        if engine.inspect(BASE) is None and (shutil.which("debootstrap") is None or os.geteuid() != 0):
            pytest.skip(f"{BASE} is missing and debootstrap (as root) is not available to make it")
        return bootstrap_image(engine, BASE).image.tags[0]


def remove_images_of(engine: DockerEngine, name: str, prefix: str = "") -> None:
    """Every image of the spec ``name`` a test built: the tags of the images labelled with it (those
    starting with ``prefix`` when given), the engine's original kept as the build cache
    (``envkit/NAME:build-cache``, a separate image) and the kept layer stages. Without the last two a
    long local session piled up one original and its stages per test run (issue 47)."""
    for info in engine.images(f"io.envkit.name={name}"):
        for tag in info.tags:
            if tag.startswith(prefix):
                engine.remove(tag)
    engine.remove(f"envkit/{name}:build-cache")  # absent: nothing to do
    engine.prune_builder_images(name)


def _link_tree(source: Path, target: Path) -> None:
    """Copy the wheelhouse entries of ``source`` missing in ``target`` as hard links (copies across
    file systems); entries being filled (``.KEY.tmp``) are skipped."""
    if not source.is_dir():
        return
    for entry in sorted(source.iterdir()):
        if entry.name.startswith(".") or not entry.is_dir() or (target / entry.name).exists():
            continue
        work = target / f".{entry.name}.link"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        for file in sorted(entry.iterdir()):
            _link_or_copy(file, work / file.name)
        work.rename(target / entry.name)


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system
        shutil.copy2(source, target)


def shipped_project(root: Path, spec: str, name: str | None = None) -> Path:
    """``root`` as a project holding the shipped ``spec`` (and its committed lock), renamed ``name``."""
    name = name or spec
    text = (REPO / "environments" / f"{spec}.yaml").read_text("utf-8")
    renamed = text.replace(f"\nname: {spec}\n", f"\nname: {name}\n")
    assert f"\nname: {spec}\n" in text, f"environments/{spec}.yaml has no `name: {spec}` line"
    (root / "environments").mkdir(parents=True, exist_ok=True)
    (root / "environments" / f"{name}.yaml").write_text(renamed, "utf-8")
    shutil.copytree(REPO / "images" / spec, root / "images" / name)
    _link_tree(REPO / ".envkit" / "wheelhouse", root / ".envkit" / "wheelhouse")
    return root


def build_shipped(root: Path, name: str, *args: str) -> dict[str, Any]:
    """``envkit build NAME --frozen --json`` in ``root``; the result, its wheelhouse kept in the checkout."""
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out):
        mp.setenv("ENVKIT_ROOT", str(root))
        code = main(["build", name, "--frozen", "--json", *args])
    built = json.loads(out.getvalue())
    assert code == 0, built
    _link_tree(root / ".envkit" / "wheelhouse", REPO / ".envkit" / "wheelhouse")
    return dict(built["result"])


@contextlib.contextmanager
def shipped_image(tmp: Path, spec: str) -> Iterator[dict[str, Any]]:
    """The shipped ``spec`` built with ``--frozen`` in a project under ``tmp`` (the build's result).

    The build is the shipped one, byte for byte: an image of the same context already on the engine
    is used as it is and kept; an image built here is removed afterwards (its tag and ``latest``).
    """
    engine = DockerEngine()
    with machine_lock(f"image-{spec}"):  # built once per machine: .ci/run's prebuild may be at it
        debian_base(engine)  # the runtime base of the pypi-CUDA specs: made here when missing
        built = build_shipped(shipped_project(tmp, spec), spec)
    try:
        yield built
    finally:
        if built["status"] == "built":  # what this session alone made; a found image stays
            for tag in (str(built["latest"]), str(built["tag"])):
                found = engine.inspect(tag)
                if found is not None and found.id == built["image_id"]:
                    engine.remove(tag)


@pytest.fixture(scope="session")
def cuda_paddle_image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The flagship Paddle CUDA image (``envkit build cuda11.8-paddle2.6 --frozen``): its tag."""
    if not docker_available():
        pytest.skip("no Docker engine reachable (start dockerd or set DOCKER_HOST)")
    with shipped_image(tmp_path_factory.mktemp("cuda-paddle"), FLAGSHIP) as built:
        yield str(built["tag"])


WHEEL_FOLDERS = Path.home() / ".cache" / "envkit-tests" / "wheels"


def downloaded_wheels(name: str, *pip_args: str) -> Path:
    """A folder of ``pip download --only-binary=:all: PIP_ARGS``, filled once per machine.

    The folder keeps one path (``~/.cache/envkit-tests/wheels/NAME-KEY``, KEY a hash of the arguments),
    because uv caches every wheel of a ``--find-links`` folder unpacked, under that folder's path: a
    fresh folder per test session left ~0.7 GB of torch (and ~0.7 GB of Paddle) in ``~/.cache/uv`` at
    every lock, ~5 GB a suite, until the disk was full (stop 40's CI).
    """
    key = hashlib.sha256(json.dumps(pip_args).encode()).hexdigest()[:12]
    folder = WHEEL_FOLDERS / f"{name}-{key}"
    with machine_lock(f"wheels-{folder.name}"):
        if not folder.is_dir():
            work = folder.with_name(f".{folder.name}.tmp")
            shutil.rmtree(work, ignore_errors=True)
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--dest", str(work), "--only-binary=:all:",
                 *pip_args, "--disable-pip-version-check", "--progress-bar", "off"],
                check=True, capture_output=True,
            )  # fmt: skip
            work.rename(folder)
    return folder


def torch_wheel_dir() -> Path:
    """torch from TORCH_WHEELS plus its dependencies (from PyPI): the lock's and the build's only source."""
    return downloaded_wheels(
        "torch-2.13.0-cpu", "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64",
        "--find-links", str(TORCH_WHEELS), "torch==2.13.0+cpu", "numpy>=1.26,<3",
    )  # fmt: skip


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
    wheels = torch_wheel_dir()
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
        remove_images_of(engine, DEMO_NAME)
