"""``DockerEngine.run`` against a real container that floods its output or never ends.

The image is made here: a root filesystem of this host's own ``sh``, ``head``, ``sleep``, ``cat``
and ``yes`` with the libraries ``ldd`` names (a few MB), imported with ``docker import`` under a
tag of this test's own and removed afterwards. No registry, no network.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from envkit.engine.docker_api import DockerEngine
from envkit.errors import ContainerOutputTooLarge, ContainerTimedOut

pytestmark = pytest.mark.docker

TOOLS = ("sh", "head", "sleep", "cat", "yes")


def _rootfs(dest: Path) -> Path:
    """A tar of the tools and every library they load (paths as on this host)."""
    files: set[Path] = set()
    for tool in TOOLS:
        found = shutil.which(tool)
        assert found, tool
        files.add(Path(found))
        ldd = subprocess.run(["ldd", found], capture_output=True, text=True, check=True).stdout
        files |= {Path(w) for w in ldd.split() if w.startswith("/")}
    tar_path = dest / "rootfs.tar"
    with tarfile.open(tar_path, "w") as tar:
        for path in sorted(files):
            tar.add(path.resolve(), arcname=str(path).lstrip("/"))
            if str(path).startswith("/usr/bin/"):  # /bin/sh resolves either way
                tar.add(path.resolve(), arcname="bin/" + path.name)
    return tar_path


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DockerEngine, str]]:
    engine = DockerEngine()
    tar = _rootfs(tmp_path_factory.mktemp("rootfs"))
    tag = f"envkit-sec-test/bounds:{hashlib.sha256(tar.read_bytes()).hexdigest()[:12]}"
    engine.import_image(tar, tag)
    try:
        yield engine, tag
    finally:
        engine.remove(tag)
        engine.api.close()


def _leftovers(engine: DockerEngine, tag: str) -> list[object]:
    return list(engine.api.containers(all=True, filters={"ancestor": tag}))


def test_a_short_report_reads_back_exactly(tiny: tuple[DockerEngine, str]) -> None:
    engine, tag = tiny
    result = engine.run(tag, ["sh", "-c", "echo report; echo warn >&2; exit 3"], timeout_s=60)
    assert (result.exit_code, result.stdout, result.stderr) == (3, "report\n", "warn\n")


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_flood_is_refused_past_the_bound(tiny: tuple[DockerEngine, str], stream: str) -> None:
    engine, tag = tiny
    bounded = DockerEngine(engine.api, max_output=1 << 20)
    redirect = "" if stream == "stdout" else " >&2"
    with pytest.raises(ContainerOutputTooLarge, match=f"more than 1048576 bytes to {stream}"):
        bounded.run(tag, ["sh", "-c", f"head -c 8000000 /dev/zero{redirect}"], timeout_s=120)
    exact = bounded.run(tag, ["sh", "-c", f"head -c 1048576 /dev/zero{redirect}"], timeout_s=120)
    assert len(getattr(exact, stream)) == 1 << 20  # at the bound: read whole
    assert _leftovers(engine, tag) == []


def test_a_command_that_never_ends_is_stopped_at_the_deadline(tiny: tuple[DockerEngine, str]) -> None:
    engine, tag = tiny
    started = time.monotonic()
    with pytest.raises(ContainerTimedOut, match=r"'sleep 3600' did not finish within 3 s"):
        engine.run(tag, ["sleep", "3600"], timeout_s=3)
    assert time.monotonic() - started < 60
    assert _leftovers(engine, tag) == []
