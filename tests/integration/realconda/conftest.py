"""Fixtures for the real-conda tests: the installed condas, a channel of real archives over http.

conda checks no checksum for ``file://`` URLs (``CacheUrlAction._execute_local`` copies the file),
so the channel is served over http on 127.0.0.1 by a threaded ``http.server`` on port 0. It holds
``python`` (this interpreter, the prefix made a venv: noarch packages compile and import),
``tinylib`` 1.2.0 / 1.3.0 (noarch python) and ``pip`` (ensurepip's wheel as a noarch package:
conda adds ``pip`` to every ``python`` it solves, ``add_pip_as_python_dependency``).
"""

from __future__ import annotations

import http.server
import os
import shutil
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from envkit.cli import main
from envkit.lock.lockfile import LockContents, read_conda_lock
from envkit.offline.testing import (
    ArchivePackage,
    make_real_channel,
    noarch_python,
    venv_python,
)
from tests.conda_bundle import RealConda
from tests.integration.test_pack_offline_conda import _pip_package as pip_package

NAME = "rc"  # the spec's name: images/rc/ holds what envkit lock writes


class _Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, request: Any, client_address: Any, server: ChannelServer) -> None:
        super().__init__(request, client_address, server, directory=str(server.root))

    def log_message(self, format: str, *args: Any) -> None:
        pass


class ChannelServer(http.server.ThreadingHTTPServer):
    """Serves ``root`` (settable: a test may point it at a changed copy) on 127.0.0.1, port 0."""

    daemon_threads = True

    def __init__(self, root: Path) -> None:
        self.root = root
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@contextmanager
def serving(root: Path) -> Iterator[ChannelServer]:
    server = ChannelServer(root)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def this_python() -> ArchivePackage:
    """``python``: the interpreter running the tests (conda compiles noarch packages with it)."""
    version = ".".join(str(n) for n in sys.version_info[:3])
    return venv_python(version, interpreter=os.path.realpath(sys.executable))


def channel_packages() -> list[ArchivePackage]:
    return [
        this_python(),
        noarch_python("tinylib", "1.2.0", {"tinylib/__init__.py": "__version__ = '1.2.0'\n"}),
        noarch_python("tinylib", "1.3.0", {"tinylib/__init__.py": "__version__ = '1.3.0'\n"}),
        pip_package(),
    ]


@dataclass(frozen=True)
class Locked:
    """A project whose spec envkit locked against the served channel."""

    root: Path
    out: Path  # images/NAME: conda-lock.yml, conda-linux-64.lock, environment.yml
    server: ChannelServer
    channel: Path
    contents: LockContents

    @property
    def url(self) -> str:
        return self.server.url


@pytest.fixture(scope="session")
def locked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Locked]:
    root = tmp_path_factory.mktemp("realconda")
    channel = root / "channel"
    make_real_channel(channel, channel_packages())
    with serving(channel) as server:
        (root / "environments").mkdir()
        (root / "environments" / f"{NAME}.yaml").write_text(
            f'name: {NAME}\npython: "{sys.version_info[0]}.{sys.version_info[1]}"\ncuda: cpu\n'
            f'channels: ["{server.url}"]\nconda:\n  - tinylib 1.2.*\n  - pip\nplatforms: [linux-64]\n'
        )
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("ENVKIT_ROOT", str(root))
            assert main(["lock", NAME, "--json"]) == 0
        out = root / "images" / NAME
        yield Locked(root, out, server, channel, read_conda_lock(out / "conda-lock.yml"))


class ExplicitInstalls:
    """``conda create -p P --file conda-linux-64.lock`` once per conda, shared by the tests that read P."""

    def __init__(self, condas: dict[str, RealConda], locked: Locked, root: Path) -> None:
        self._condas, self._locked, self._root = condas, locked, root
        self._made: dict[str, Path] = {}

    def scratch(self, version: str) -> Path:
        return self._root / version

    def prefix(self, version: str) -> Path:
        if version not in self._made:
            prefix = self._root / version / "env"
            lock = self._locked.out / "conda-linux-64.lock"
            self._condas[version].ok(["create", "-y", "-q", "-p", str(prefix), "--file", str(lock)],
                                     self.scratch(version))  # fmt: skip
            self._made[version] = prefix
        return self._made[version]


@pytest.fixture(scope="session")
def explicit_installs(
    condas: dict[str, RealConda], locked: Locked, tmp_path_factory: pytest.TempPathFactory
) -> ExplicitInstalls:
    return ExplicitInstalls(condas, locked, tmp_path_factory.mktemp("explicit"))


def changed_copy(channel: Path, dest: Path, filename: str) -> Path:
    """A copy of ``channel`` with one byte of ``filename`` (under any subdir) flipped."""
    shutil.copytree(channel, dest)
    target = next(dest.glob(f"*/{filename}"))
    data = target.read_bytes()
    target.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    return dest
