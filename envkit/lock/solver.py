"""Plain values in and out of the solvers, and the two solver protocols.

The conda part is solved by :class:`envkit.lock.conda.RattlerSolver` (py-rattler, in process),
the pip part by :class:`envkit.lock.pip.UvResolver` (uv through :mod:`envkit._proc`). Fakes for
unit tests live in :mod:`envkit.lock.testing`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

__all__ = [
    "CondaPackage",
    "CondaRequest",
    "CondaSolution",
    "CondaSolver",
    "PipPackage",
    "PipRequest",
    "PipResolver",
    "VirtualPackage",
]


@dataclass(frozen=True, order=True)
class VirtualPackage:
    """``__cuda 12.1``, ``__glibc 2.35``, …: what the target machine provides."""

    name: str
    version: str
    build: str = "0"


@dataclass(frozen=True)
class CondaPackage:
    """One locked conda package, with url and hashes exactly as the channel gives them."""

    name: str
    version: str
    build: str
    url: str
    md5: str
    sha256: str
    platform: str  # the lock's target platform (a noarch package is locked per platform)
    subdir: str = ""
    depends: tuple[str, ...] = ()

    @property
    def pin(self) -> str:
        return f"{self.name}={self.version}={self.build}"


@dataclass(frozen=True)
class CondaRequest:
    """Solve ``specs`` for ``platform`` against ``channels`` with the given virtual packages.

    ``preferred`` are the previous lock's packages: the solver keeps them when it can.
    ``cuda`` (e.g. ``"12.1"``, None for CPU) decides between variant builds of one version.
    """

    specs: tuple[str, ...]
    channels: tuple[str, ...]
    platform: str
    virtual_packages: tuple[VirtualPackage, ...] = ()
    cuda: str | None = None
    preferred: tuple[CondaPackage, ...] = ()


@dataclass(frozen=True)
class CondaSolution:
    """The conda packages a solve chose, and its warnings."""

    packages: tuple[CondaPackage, ...]
    warnings: tuple[str, ...] = ()


class CondaSolver(Protocol):
    """Solves the conda part of a spec (py-rattler in production, a fake in tests)."""

    def solve(self, request: CondaRequest) -> CondaSolution: ...


@dataclass(frozen=True)
class PipPackage:
    """One locked pip distribution: its pinned version and the sha256 of every allowed file."""

    name: str
    version: str
    url: str
    hashes: tuple[str, ...]  # sha256 hex digests, sorted; the first belongs to ``url``

    @property
    def sha256(self) -> str:
        return self.hashes[0] if self.hashes else ""


@dataclass(frozen=True)
class PipRequest:
    """Resolve ``requirements`` for one Python version and platform."""

    requirements: tuple[str, ...]
    python_version: str
    python_platform: str  # uv's --python-platform, e.g. "x86_64-manylinux_2_35"
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    no_index: bool = False
    preferred: tuple[PipPackage, ...] = ()
    upgrade: tuple[str, ...] = field(default=())


class PipResolver(Protocol):
    """Resolves the pip part of a spec to hashed pins (uv in production, a fake in tests)."""

    def resolve(self, request: PipRequest) -> tuple[PipPackage, ...]: ...
