"""Fixtures for packs: a real generated conda channel, a fake pip for the installer wheel, fakes."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from envkit._proc import ProcResult
from envkit.catalog import Catalog, OfflineInstaller, load_catalog
from envkit.lock.conda import RattlerSolver
from envkit.lock.fresh import EnvLocker
from envkit.lock.testing import FakePipResolver
from envkit.offline.testing import make_real_channel, noarch_python, venv_python
from envkit.spec.load import LoadedSpec, load_spec

INSTALLER = "py_rattler-0.28.0-cp310-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
INSTALLER_BYTES = b"not really py-rattler: the fake pip serves these bytes"


class InstallerPip:
    """Stands in for ``pip download``: serves the installer wheel and ``name-version`` wheels."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str], *, check: bool = True) -> ProcResult:
        args = list(argv)
        self.calls.append(args)
        dest = Path(args[args.index("--dest") + 1])
        dest.mkdir(parents=True, exist_ok=True)
        for line in Path(args[args.index("-r") + 1]).read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if not line or line.startswith("-"):
                continue
            name, _, version = line.split()[0].rstrip("\\").partition("==")
            if name == "py-rattler":
                (dest / INSTALLER).write_bytes(INSTALLER_BYTES)
            else:
                (dest / f"{name}-{version}-py3-none-any.whl").write_bytes(f"{name} {version}".encode())
        return ProcResult(tuple(args), 0, "", "")


class WheelResolver(FakePipResolver):
    """Locks ``name==version`` pins with the sha256 of the bytes :class:`InstallerPip` serves."""

    def resolve(self, request):  # type: ignore[no-untyped-def]
        from envkit.lock import PipPackage

        self.requests.append(request)
        found = []
        for requirement in request.requirements:
            name, _, version = requirement.partition("==")
            digest = hashlib.sha256(f"{name} {version}".encode()).hexdigest()
            found.append(
                PipPackage(name, version, f"https://example.invalid/{name}-{version}.whl", (digest,))
            )
        return tuple(found)


def packing_catalog() -> Catalog:
    """The real catalog, with the offline installer pinned to the fake pip's bytes."""
    fake = OfflineInstaller(
        kind="py-rattler", version="0.28.0", arch="x86_64", filename=INSTALLER,
        sha256=hashlib.sha256(INSTALLER_BYTES).hexdigest(), source="test",
    )  # fmt: skip
    return replace(load_catalog(), offline_installers=(fake,))


def write_conda_spec(
    root: Path, channel_url: str, *, pins: Sequence[str] = (), conda: str = "tinylib 1.2.*"
) -> Path:
    folder = root / "environments"
    folder.mkdir(parents=True, exist_ok=True)
    pip = "pip:\n" + "".join(f"  - {p}\n" for p in pins) if pins else ""
    text = (
        f'name: ctiny\npython: "3.11"\ncuda: cpu\nchannels: [{channel_url}]\nconda:\n  - {conda}\n'
        f"base_image: envkit/debian-python:bookworm\n{pip}"
    )
    path = folder / "ctiny.yaml"
    path.write_text(text)
    return path


@pytest.fixture
def channel(tmp_path: Path) -> Path:
    packages = [
        venv_python(),
        noarch_python("tinylib", "1.2.0", {"tinylib/__init__.py": "__version__ = '1.2.0'\n"}),
        noarch_python("tinylib", "1.3.0", {"tinylib/__init__.py": "__version__ = '1.3.0'\n"}),
        noarch_python("pip", "23.2.1", {"pip/__init__.py": "__version__ = '23.2.1'\n"}),
    ]
    make_real_channel(tmp_path / "channel", packages)
    return tmp_path / "channel"


@pytest.fixture
def root(tmp_path: Path, channel: Path) -> Path:
    project = tmp_path / "project"
    write_conda_spec(project, channel.resolve().as_uri())
    return project


@pytest.fixture
def loaded(root: Path) -> LoadedSpec:
    return load_spec(root / "environments" / "ctiny.yaml", packing_catalog())


@pytest.fixture
def catalog() -> Catalog:
    return packing_catalog()


@pytest.fixture
def locker() -> EnvLocker:
    return EnvLocker(RattlerSolver(), WheelResolver())


@pytest.fixture
def pip() -> InstallerPip:
    return InstallerPip()
