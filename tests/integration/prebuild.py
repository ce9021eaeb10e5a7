"""Make the machine's expensive test inputs in the background, before the tests that need them.

``.ci/run`` starts this after ``make dev`` and goes on with ``make lint`` and ``make test``; the tests
on these inputs run last (``PREBUILT_MODULES`` in tests/integration/conftest.py), so the ~15-35 min
of the flagship build overlap lint and the rest of the suite instead of adding to them:

1. the Debian base image (``envkit base-image``'s code), under the machine lock ``debian-base``;
2. the flagship ``cuda11.8-paddle2.6`` exactly as the ``cuda_paddle_image`` fixture builds it (the
   shipped spec and lock in a temporary project, ``envkit build --frozen``; its wheelhouse linked into
   the checkout's ``.envkit/wheelhouse``), under the lock ``image-cuda11.8-paddle2.6``; the image is
   kept, so the fixture finds it up to date;
3. the readiness tests' CUDA wheels (``cuda_wheels.download_all``: the four the flagship shares are
   linked from its wheelhouse, the rest downloaded), under the lock ``cuda-wheels``.

Nothing here is a test: a step that fails is reported (exit 1) and the tests then do that step
themselves, failing where it fails. Usage: ``PYTHONPATH=. .venv/bin/python -m tests.integration.prebuild``.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from envkit.engine.docker_api import DockerEngine
from tests.integration import cuda_wheels
from tests.integration.conftest import FLAGSHIP, build_shipped, debian_base, shipped_project
from tests.integration.machine_lock import machine_lock


def _flagship() -> str:
    engine = DockerEngine()
    with machine_lock(f"image-{FLAGSHIP}"):
        debian_base(engine)
        tmp = Path(tempfile.mkdtemp(prefix="envkit-prebuild-"))
        try:
            built = build_shipped(shipped_project(tmp, FLAGSHIP), FLAGSHIP)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return f"{built['tag']} ({built['status']})"


def _base() -> str:
    return debian_base(DockerEngine())


def _wheels() -> str:
    os.environ["ENVKIT_DOWNLOAD_CUDA_WHEELS"] = "1"
    found = cuda_wheels.download_all()
    return f"{len(found)} wheels in {cuda_wheels.CACHE}"


STEPS: tuple[tuple[str, Callable[[], str]], ...] = (
    ("debian base image", _base),
    (f"flagship image {FLAGSHIP}", _flagship),
    ("readiness CUDA wheels", _wheels),
)


def main() -> int:
    failed = 0
    for label, step in STEPS:
        start = time.monotonic()
        try:
            done = step()
        except (Exception, pytest.skip.Exception, pytest.fail.Exception) as e:  # noqa: BLE001 - the tests redo it
            print(f"prebuild: {label} FAILED after {time.monotonic() - start:.0f} s: {type(e).__name__}: {e}")
            failed = 1
            continue
        print(f"prebuild: {label}: {done} in {time.monotonic() - start:.0f} s", flush=True)
    return failed


if __name__ == "__main__":
    sys.exit(main())
