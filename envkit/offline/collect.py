"""Gather every file an offline conda build needs, from the lock, into a cache; hash-checked.

``collect`` downloads each conda package of the lock (from the URL the lock names: the spec's
channels, through ``mirrors.conda`` when set) and checks its sha256 (and md5) against the lock
while the bytes arrive; ``pip download`` fills the wheels of ``requirements.lock`` (pip checks its
``--hash`` lines) and the installer wheel the builder stage runs (pinned with its sha256 in the
catalog). Files are cached by content (``<cache>/conda/<sha256>/<file>``, the build's wheelhouse
cache), so a second run downloads nothing.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from envkit import __version__, _proc
from envkit.catalog import InstallerFile, OfflineInstaller
from envkit.errors import PackError
from envkit.lock.solver import CondaPackage
from envkit.offline.fetch import Fetcher
from envkit.offline.lock_names import check_conda_file
from envkit.offline.pack_manifest import PackFile, PackManifest
from envkit.offline.wheelhouse import Wheelhouse, WheelhouseRequest, fill_wheelhouse
from envkit.render.context import file_sha256

__all__ = [
    "CHANNEL",
    "INSTALLER",
    "WHEELS",
    "CollectedPack",
    "PackProgress",
    "PackRequest",
    "bootstrap_path",
    "collect",
    "conda_path",
    "fetch_verified",
    "requirement_hashes",
]

CHANNEL = "channel"
WHEELS = "wheels"
INSTALLER = "installer"
INSTALLER_PYTHON = "3.10"  # the installer wheel is abi3 for CPython >= 3.10
_HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")


@dataclass(frozen=True)
class PackRequest:
    """What a pack must hold: read from the lock (and the catalog, for the installer)."""

    name: str
    platforms: tuple[str, ...]
    lock_sha256: str
    conda: Mapping[str, tuple[CondaPackage, ...]]  # per platform, as locked
    requirements: str | None  # requirements.lock text when it pins anything
    python: str  # the spec's Python (for the wheels)
    installers: Mapping[str, OfflineInstaller]  # platform -> the wheel the builder stage runs
    find_links: tuple[str, ...] = ()
    # platform -> the spec's catalog installer, when the runtime image has no python3 (see request.py)
    bootstraps: Mapping[str, InstallerFile] = field(default_factory=dict)


@dataclass(frozen=True)
class PackProgress:
    """One step of collecting: ``done`` of ``total`` files, the file, and whether it was downloaded."""

    done: int
    total: int
    item: str
    downloaded: bool
    nbytes: int


@dataclass(frozen=True)
class CollectedPack:
    """Every file of a pack, verified, in the cache: the manifest and where each file lies."""

    manifest: PackManifest
    sources: Mapping[str, Path]  # pack path -> the verified local file
    downloaded: int = 0
    reused: int = 0

    @property
    def size(self) -> int:
        return sum(f.size for f in self.manifest.files)


ProgressSink = Callable[[PackProgress], None]


def conda_path(package: CondaPackage) -> str:
    """Where a conda package lies in a pack and in the build context: ``channel/<subdir>/<file>``."""
    subdir, filename = package.url.rstrip("/").rsplit("/", 2)[-2:]
    return f"{CHANNEL}/{subdir}/{filename}"


def bootstrap_path(installer: InstallerFile) -> str:
    """``installer/bootstrap-<arch>.sh``: the builder stage finds it by ``uname -m``."""
    return f"{INSTALLER}/bootstrap-{installer.arch}.sh"


def requirement_hashes(requirements: str) -> set[str]:
    return set(_HASH.findall(requirements))


def collect(
    request: PackRequest,
    cache_root: Path,
    fetcher: Fetcher,
    *,
    pip_runner: _proc.Runner = _proc.run,
    on_progress: ProgressSink | None = None,
) -> CollectedPack:
    """Download (or reuse) every file of ``request`` into ``cache_root``, each checked; the manifest."""
    conda = _conda_files(request)
    bootstraps = {i.url: i for i in request.bootstraps.values()}
    total = (len(conda) + (1 if request.requirements else 0) + len(set(request.installers.values()))
             + len(bootstraps))  # fmt: skip
    files: list[PackFile] = []
    sources: dict[str, Path] = {}
    downloaded = reused = 0
    for path, package in sorted(conda.items()):
        target = cache_root / "conda" / package.sha256 / path.rsplit("/", 1)[-1]
        fresh = not _cached(target, package.sha256)
        if fresh:
            fetch_verified(fetcher, package.url, target, package.sha256, package.md5,
                           f"{package.name} {package.version} ({package.platform})")  # fmt: skip
        downloaded, reused = downloaded + fresh, reused + (not fresh)
        size = target.stat().st_size
        files.append(PackFile(path, "conda", package.name, package.version, package.platform, package.url,
                              package.sha256, size, package.md5))  # fmt: skip
        sources[path] = target
        _report(on_progress, len(files), total, path, fresh, size)
    wheelhouses = cache_root / "wheelhouse"
    if request.requirements:
        house = fill_wheelhouse(
            WheelhouseRequest(request.requirements, request.python, request.platforms, request.find_links),
            wheelhouses, runner=pip_runner,
        )  # fmt: skip
        allowed = requirement_hashes(request.requirements)
        for wheel in house.wheels:
            if allowed and wheel.sha256 not in allowed:
                raise PackError(
                    f"{wheel.filename}: sha256 {wheel.sha256} is not among requirements.lock's hashes",
                    hint=f"relock with `envkit lock {request.name}`",
                )
        files += _wheel_files(house, WHEELS, ",".join(request.platforms))
        sources |= {f"{WHEELS}/{w.filename}": house.directory / w.filename for w in house.wheels}
        _report(on_progress, len(files), total, "requirements.lock wheels", not house.cached, 0)
    for installer, platforms in _installers(request).items():
        files.append(_installer_file(installer, platforms, wheelhouses, pip_runner, sources))
        _report(on_progress, len(files), total, installer.filename, True, files[-1].size)
    for boot in sorted(bootstraps.values(), key=lambda i: i.url):
        entry, fresh = _bootstrap_file(request, boot, cache_root, fetcher, sources)
        files.append(entry)
        _report(on_progress, len(files), total, entry.path, fresh, entry.size)
    manifest = PackManifest(request.name, request.platforms, request.lock_sha256, __version__,
                            tuple(sorted(files, key=lambda f: f.path)))  # fmt: skip
    return CollectedPack(manifest, sources, downloaded, reused)


def _conda_files(request: PackRequest) -> dict[str, CondaPackage]:
    found: dict[str, CondaPackage] = {}
    for platform in request.platforms:
        for package in request.conda.get(platform, ()):
            if not package.sha256:
                raise PackError(
                    f"{package.name} {package.version} ({platform}) has no sha256 in the lock",
                    hint=f"relock with `envkit lock {request.name}` against a channel with sha256 in its "
                    "repodata",
                )
            check_conda_file(package, f"images/{request.name}/conda-lock.yml")
            path = conda_path(package)
            other = found.get(path)
            if other is not None and other.sha256 != package.sha256:
                raise PackError(
                    f"{path}: two locked packages of that name have different sha256 "
                    f"({other.url} and {package.url})",
                    hint="use one channel per package name",
                )
            found.setdefault(path, package)
    return found


def _installers(request: PackRequest) -> dict[OfflineInstaller, tuple[str, ...]]:
    found: dict[OfflineInstaller, tuple[str, ...]] = {}
    for platform in request.platforms:
        installer = request.installers[platform]
        found[installer] = (*found.get(installer, ()), platform)
    return found


def _installer_file(
    installer: OfflineInstaller,
    platforms: tuple[str, ...],
    wheelhouses: Path,
    runner: _proc.Runner,
    sources: dict[str, Path],
) -> PackFile:
    house = fill_wheelhouse(
        WheelhouseRequest(installer.requirement + "\n", INSTALLER_PYTHON, platforms),
        wheelhouses,
        runner=runner,
    )
    wheel = next((w for w in house.wheels if w.filename == installer.filename), None)
    if wheel is None or wheel.sha256 != installer.sha256:
        got = ", ".join(f"{w.filename} {w.sha256}" for w in house.wheels) or "nothing"
        raise PackError(
            f"the installer wheel {installer.filename} (sha256 {installer.sha256}) was not downloaded; "
            f"got {got}",
            hint="check the pip index (mirrors.pypi) or add the wheel with --find-links DIR",
        )
    path = f"{INSTALLER}/{wheel.filename}"
    sources[path] = house.directory / wheel.filename
    return PackFile(path, "installer", installer.kind, installer.version, ",".join(platforms), "",
                    wheel.sha256, wheel.size)  # fmt: skip


def _bootstrap_file(
    request: PackRequest, boot: InstallerFile, cache_root: Path, fetcher: Fetcher, sources: dict[str, Path]
) -> tuple[PackFile, bool]:
    """The catalog installer (sha256 from the catalog), cached by content like the conda packages."""
    path = bootstrap_path(boot)
    target = cache_root / "installers" / boot.sha256 / boot.url.rsplit("/", 1)[-1]
    fresh = not _cached(target, boot.sha256)
    if fresh:
        fetch_verified(
            fetcher, boot.url, target, boot.sha256, "", f"the {boot.kind} {boot.version} installer"
        )
    served = ",".join(p for p, i in request.bootstraps.items() if i.url == boot.url)
    sources[path] = target
    entry = PackFile(path, "installer", boot.kind, boot.version, served, boot.url, boot.sha256,
                     target.stat().st_size)  # fmt: skip
    return entry, fresh


def _wheel_files(house: Wheelhouse, prefix: str, platforms: str) -> list[PackFile]:
    return [
        PackFile(f"{prefix}/{w.filename}", "wheel", w.name, w.version, platforms, "", w.sha256, w.size)
        for w in house.wheels
    ]


def _cached(path: Path, sha256: str) -> bool:
    """A cached file counts only when its bytes still hash to the lock's sha256 (else fetch again)."""
    return path.is_file() and file_sha256(path) == sha256


def _report(sink: ProgressSink | None, done: int, total: int, item: str, fresh: bool, size: int) -> None:
    if sink is not None:
        sink(PackProgress(done, total, item, fresh, size))


def fetch_verified(fetcher: Fetcher, url: str, target: Path, sha256: str, md5: str, label: str) -> None:
    """Download ``url`` to ``target``, hashing while the bytes arrive; nothing is left on a mismatch."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    tmp = Path(tmp_name)
    digest, check = hashlib.sha256(), hashlib.md5(usedforsecurity=False)
    try:
        with os.fdopen(fd, "wb") as out:

            def sink(chunk: bytes) -> None:
                digest.update(chunk)
                check.update(chunk)
                out.write(chunk)

            fetcher.fetch(url, sink)
        got, got_md5 = digest.hexdigest(), check.hexdigest()
        if got != sha256 or (md5 and got_md5 != md5):
            raise PackError(
                f"{label}: {url} does not match the lock: sha256 {got}, the lock has {sha256}",
                hint="the channel or mirror serves other bytes than when the lock was made; restore the "
                "file from a trusted source, or relock (`envkit lock NAME --update PKG`) if the change is "
                "intended",
            )
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
