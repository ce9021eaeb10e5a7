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
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_path() -> Path:
    return Path(os.environ.get("ENVKIT_SHARED", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    path = shared_path()
    if not path.is_dir():
        pytest.skip(f"{path} is absent (real test data lives beside the project)")
    return path


@functools.cache
def docker_available() -> bool:
    try:
        import docker

        client = docker.from_env(timeout=5)
        client.ping()
        client.close()
    except Exception:  # noqa: BLE001 - any failure means "no engine"
        return False
    return True


@functools.cache
def gpu_available() -> bool:
    return shutil.which("nvidia-smi") is not None and importlib.util.find_spec("torch") is not None


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("docker") and not docker_available():
        if os.environ.get("CI"):
            pytest.fail("CI must run the docker tests: no Docker engine is reachable")
        pytest.skip("no Docker engine reachable (start dockerd or set DOCKER_HOST)")
    if item.get_closest_marker("gpu") and not gpu_available():
        pytest.skip("no NVIDIA GPU")
