"""Shared fixtures and capability checks.

Markers skip themselves when the capability is missing: ``docker`` without a
reachable engine, ``frameworks`` without torch/paddle, ``gpu`` without an
NVIDIA GPU. Real data beside the project (``../shared``) is read in place.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_path() -> Path:
    return Path(os.environ.get("ENVKIT_SHARED", REPO.parent / "shared"))


@pytest.fixture(scope="session", autouse=True)
def _private_advisory_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """`envkit audit` keeps its advisory index in the user's cache: tests keep theirs in a temporary one.
    The advisory snapshots tests read are fixed (2024): no stale-data warning unless a test asks for one
    (``--max-db-age DAYS``, tests/unit/audit/test_data_age.py)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ENVKIT_ADVISORY_INDEX", str(tmp_path_factory.mktemp("advisory-index")))
        mp.setenv("ENVKIT_MAX_DB_AGE", "-1")
        yield


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    path = shared_path()
    if not path.is_dir():
        pytest.skip(f"{path} is absent (real test data lives beside the project)")
    return path


@pytest.fixture(scope="session")
def condas() -> dict[str, Any]:
    """Real conda 23.5.2 / 24.3.0 / 26.7.1 (``tests.conda_bundle.RealConda`` by version), installed
    from ../shared/conda-bundle once per bundle content into the test cache."""
    from tests.conda_bundle import bundle_available, bundle_missing_reason, installed_condas

    if not bundle_available():
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the real-conda tests: {bundle_missing_reason()}")
        pytest.skip(bundle_missing_reason())
    return dict(installed_condas())


@functools.cache
def docker_available() -> bool:
    """A Docker engine answers, connected to as envkit connects (``docker.from_env``'s failed connect
    to a missing unix socket left its socket to the garbage collector: a ResourceWarning, an error
    here, in whichever test ran next)."""
    try:
        from envkit.engine.docker_api import DockerEngine

        engine = DockerEngine(timeout=5)
        try:
            engine.api.ping()
        finally:
            engine.api.close()
    except Exception:  # noqa: BLE001 - any failure means "no engine"
        return False
    return True


@functools.cache
def slurm_available() -> bool:
    """A Slurm controller answers and has a node (``.ci/slurm.sh start`` makes one here)."""
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        return False
    try:
        done = subprocess.run(["sinfo", "-h", "-N", "-o", "%N"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and bool(done.stdout.strip())


def registry_answers(address: str, timeout: float = 3) -> bool:
    """Whether a Docker registry answers its API root (``/v2/``) at ``address``."""
    try:
        with urllib.request.urlopen(f"http://{address}/v2/", timeout=timeout):
            return True
    except OSError:
        return False


@functools.cache
def registry_address() -> str | None:
    """A Docker registry on the loopback (``.ci/registry.sh start``), or None."""
    address = os.environ.get("ENVKIT_REGISTRY", "127.0.0.1:5000")
    return address if registry_answers(address) else None


@functools.cache
def gpu_available() -> bool:
    return shutil.which("nvidia-smi") is not None and importlib.util.find_spec("torch") is not None


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("docker") and not docker_available():
        if os.environ.get("CI"):
            pytest.fail("CI must run the docker tests: no Docker engine is reachable")
        pytest.skip("no Docker engine reachable (start dockerd or set DOCKER_HOST)")
    services: tuple[tuple[str, Callable[[], bool], str], ...] = (
        ("slurm", slurm_available, ".ci/slurm.sh start"),
        ("registry", lambda: registry_address() is not None, ".ci/registry.sh start"),
    )
    for marker, available, start in services:
        if item.get_closest_marker(marker) and not available():
            if os.environ.get("CI"):
                pytest.fail(f"CI must run the {marker} tests: start it with {start}")
            pytest.skip(f"no {marker} here (start one: {start})")
    if item.get_closest_marker("conda"):
        from tests.conda_bundle import bundle_available, bundle_missing_reason

        if not bundle_available():
            if os.environ.get("CI"):
                pytest.fail(f"CI must run the real-conda tests: {bundle_missing_reason()}")
            pytest.skip(bundle_missing_reason())
    if item.get_closest_marker("gpu") and not gpu_available():
        pytest.skip("no NVIDIA GPU")
