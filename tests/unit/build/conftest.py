"""Fixtures for the build stage: a tmp project root with a venv spec, fake pip/uv, a FakeEngine."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import pytest

from envkit._proc import ProcResult
from envkit.build.builder import Builder
from envkit.engine.testing import FakeEngine
from envkit.errors import Unsatisfiable
from envkit.lock import PipPackage, PipRequest
from envkit.lock.fresh import EnvLocker
from envkit.lock.testing import FakeCondaSolver, FakePipResolver
from envkit.spec.load import LoadedSpec, load_spec

SPEC = """\
name: tiny
python: "3.11"
cuda: cpu
installer: venv
base_image: python:3.11-slim-bookworm
pip:
{pins}
"""


class FakePip:
    """Stands in for ``pip download``: writes a small wheel per ``name==version`` line."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.missing = {"doesnotexist"}

    def __call__(self, argv: Sequence[str], *, check: bool = True) -> ProcResult:
        args = list(argv)
        self.calls.append(args)
        dest = Path(args[args.index("--dest") + 1])
        dest.mkdir(parents=True, exist_ok=True)
        lines = Path(args[args.index("-r") + 1]).read_text().splitlines()
        for line in lines:
            line = line.split("#", 1)[0].strip()
            if not line or line.startswith("-"):
                continue
            name, _, version = line.split()[0].partition("==")
            if name in self.missing:
                return ProcResult(tuple(args), 1, "", f"ERROR: No matching distribution found for {line}\n")
            (dest / f"{name}-{version}-py3-none-any.whl").write_bytes(f"{name} {version}".encode())
        return ProcResult(tuple(args), 0, "", "")


class PinResolver(FakePipResolver):
    """envkit.lock's fake uv that follows the spec's ``name==version`` pins; ``doesnotexist`` fails."""

    def resolve(self, request: PipRequest) -> tuple[PipPackage, ...]:
        self.requests.append(request)
        found = []
        for requirement in request.requirements:
            name, _, version = requirement.partition("==")
            if name == "doesnotexist":
                raise Unsatisfiable(f"no version of {requirement}", hint="relax it")
            digest = hashlib.sha256(requirement.encode()).hexdigest()
            found.append(
                PipPackage(
                    name, version, f"https://example.invalid/{name}-{version}-py3-none-any.whl", (digest,)
                )
            )
        return tuple(found)


def fake_locker(resolver: FakePipResolver | None = None) -> EnvLocker:
    return EnvLocker(FakeCondaSolver(), resolver or PinResolver())


def write_spec(root: Path, pins: Sequence[str] = ("six==1.16.0", "packaging==24.1"), **extra: str) -> Path:
    folder = root / "environments"
    folder.mkdir(parents=True, exist_ok=True)
    text = SPEC.format(pins="\n".join(f"  - {p}" for p in pins))
    text += "".join(f"{k}: {v}\n" for k, v in extra.items())
    path = folder / "tiny.yaml"
    path.write_text(text)
    return path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    write_spec(tmp_path)
    return tmp_path


@pytest.fixture
def loaded(root: Path) -> LoadedSpec:
    return load_spec(root / "environments" / "tiny.yaml")


@pytest.fixture
def engine() -> FakeEngine:
    return FakeEngine()


@pytest.fixture
def pip() -> FakePip:
    return FakePip()


@pytest.fixture
def resolver() -> PinResolver:
    return PinResolver()


@pytest.fixture
def builder(engine: FakeEngine, root: Path, pip: FakePip, resolver: PinResolver) -> Builder:
    return Builder(engine, root, locker=fake_locker(resolver), pip_runner=pip)


@pytest.fixture
def spec_writer() -> object:
    return write_spec
