"""Fill a wheelhouse on the host with ``pip download`` so that the image builds without network.

Wheels are fetched for the image's Python and platform (not the host's), binary
only. With the hashed lock (``requirements.lock``, which every build has) pip
checks every hash itself, and the install inside the image checks them again
(``--require-hashes``). Wheelhouses are cached by request under
``.envkit/wheelhouse/<key>/`` and reused: a no-op rebuild needs no network.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from envkit import _proc
from envkit._atomic import write_text_atomic
from envkit._pep503 import canonicalize_name
from envkit.engine.pip_messages import PIP_NO_MATCH
from envkit.errors import BuildFailed, Unsatisfiable
from envkit.render.context import ContextEntry, file_sha256
from envkit.spec.models import ARCHES

__all__ = ["PIP_NO_MATCH", "Wheel", "Wheelhouse", "WheelhouseRequest", "fill_wheelhouse", "pip_platforms"]

MANIFEST = "manifest.json"
_MAX_GLIBC_MINOR = 28  # manylinux_2_28: the oldest glibc the supported base images ship is newer


def pip_platforms(platform: str) -> tuple[str, ...]:
    """pip ``--platform`` tags for a conda-style platform name, best first."""
    arch = ARCHES[platform]
    many = [f"manylinux_2_{minor}_{arch}" for minor in range(_MAX_GLIBC_MINOR, 16, -1)]
    return (*many, f"manylinux2014_{arch}", f"linux_{arch}")


@dataclass(frozen=True)
class WheelhouseRequest:
    """What a wheelhouse must hold: the requirements, the image's Python and platforms."""

    requirements: str  # requirements file text (may carry index options and hashes)
    python: str  # "3.11"
    platforms: tuple[str, ...] = ("linux-64",)
    find_links: tuple[str, ...] = ()  # local wheel directories tried besides the index

    @property
    def digest(self) -> str:
        """sha256 of the request: with a hashed lock, what decides the wheelhouse's files."""
        data = json.dumps(
            [self.requirements, self.python, sorted(self.platforms), list(self.find_links)], sort_keys=True
        )
        return hashlib.sha256(data.encode("utf-8")).hexdigest()

    @property
    def key(self) -> str:
        return self.digest[:16]

    @property
    def hashed(self) -> bool:
        return "--hash=" in self.requirements


@dataclass(frozen=True)
class Wheel:
    """One wheel of a wheelhouse, with its sha256."""

    filename: str
    name: str
    version: str
    sha256: str
    size: int


@dataclass(frozen=True)
class Wheelhouse:
    """The wheels ``pip download`` fetched for an offline build, cached by request."""

    directory: Path
    wheels: tuple[Wheel, ...]
    cached: bool = False

    @property
    def size(self) -> int:
        """The wheels' bytes (what the build context carries)."""
        return sum(w.size for w in self.wheels)

    def installed_size(self) -> int:
        """The bytes the wheels unpack to (their zip members' sizes, read from each central directory):
        what the installed environment holds, before pip's .pyc files."""
        return sum(_unpacked(self.directory / w.filename, w.size) for w in self.wheels)

    def entries(self, prefix: str = "wheels") -> list[ContextEntry]:
        return [
            ContextEntry(f"{prefix}/{w.filename}", w.sha256, w.size, source=self.directory / w.filename)
            for w in self.wheels
        ]


def _unpacked(path: Path, size: int) -> int:
    try:
        with zipfile.ZipFile(path) as archive:
            return sum(info.file_size for info in archive.infolist())
    except (OSError, zipfile.BadZipFile):
        return size  # not a zip (pip would refuse it): counted as it is


def fill_wheelhouse(
    request: WheelhouseRequest,
    cache_root: Path,
    *,
    runner: _proc.Runner = _proc.run,
    pip: Sequence[str] = (sys.executable, "-m", "pip"),
) -> Wheelhouse:
    """Return the cached wheelhouse for ``request`` or download it (atomically) into the cache."""
    target = cache_root / request.key
    cached = _read_manifest(target)
    if cached is not None:
        return cached
    cache_root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=cache_root, prefix=f".{request.key}."))
    try:
        requirements = work / "requirements.in"
        requirements.write_text(request.requirements, "utf-8")
        dest = work / "wheels"
        seeded = _seed(request, cache_root, dest)
        for platform in request.platforms:
            _download(request, platform, requirements, dest, runner, pip)
        wheels = tuple(
            seeded[path.name] if path.name in seeded and path.stat().st_size == seeded[path.name].size
            else _describe(path)
            for path in sorted(dest.iterdir()) if path.is_file()
        )  # fmt: skip
        manifest = {"request": request.key, "wheels": [w.__dict__ for w in wheels]}
        write_text_atomic(dest / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        if target.exists():  # a concurrent fill finished first: keep theirs
            shutil.rmtree(target, ignore_errors=True)
        dest.rename(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return Wheelhouse(target, wheels)


_HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")


def _seed(request: WheelhouseRequest, cache_root: Path, dest: Path) -> dict[str, Wheel]:
    """Link into ``dest`` the wheels the request's lock pins (by sha256) that another wheelhouse in
    ``cache_root`` already holds: ``pip download`` then keeps them ("already downloaded", checked
    against the lock's hashes) and fetches only the rest. A one-pin change made a new wheelhouse of
    every wheel again (the flagship's 2.4 GB downloaded for one 35 MB wheel)."""
    wanted = set(_HASH.findall(request.requirements))
    if not wanted or not cache_root.is_dir():
        return {}
    seeded: dict[str, Wheel] = {}
    for other in sorted(cache_root.iterdir()):
        house = _read_manifest(other) if other.is_dir() and not other.name.startswith(".") else None
        for wheel in house.wheels if house is not None else ():
            if wheel.sha256 not in wanted or wheel.filename in seeded:
                continue
            dest.mkdir(parents=True, exist_ok=True)
            try:
                os.link(other / wheel.filename, dest / wheel.filename)
            except OSError:
                try:
                    shutil.copyfile(other / wheel.filename, dest / wheel.filename)
                except OSError:
                    continue
            seeded[wheel.filename] = wheel
    return seeded


def _download(
    request: WheelhouseRequest,
    platform: str,
    requirements: Path,
    dest: Path,
    runner: _proc.Runner,
    pip: Sequence[str],
) -> None:
    argv = [
        *pip, "download", "--dest", str(dest), "--only-binary=:all:", "--progress-bar", "off",
        "--disable-pip-version-check", "--python-version", request.python,
        "--implementation", "cp", "--abi", f"cp{request.python.replace('.', '')}",
    ]  # fmt: skip
    for tag in pip_platforms(platform):
        argv += ["--platform", tag]
    for link in request.find_links:
        argv += ["--find-links", link]
    if request.hashed:
        argv += ["--require-hashes", "--no-deps"]
    argv += ["-r", str(requirements)]
    result = runner(argv, check=False)
    if result.returncode != 0:
        raise _translate(result)


def _translate(result: _proc.ProcResult) -> Exception:
    text = result.stderr + result.stdout
    tail = tuple(text.strip().splitlines()[-15:])
    missing = PIP_NO_MATCH.search(text)
    if missing:
        return Unsatisfiable(
            f"pip download: no wheel matches {missing.group(1)} for this image's Python and platform",
            hint="check the pin in the spec's pip: list (does that version exist? is there a wheel for "
            "this Python?); local wheels can be added with --find-links DIR",
        )
    if "DO NOT MATCH THE HASHES" in text:
        return BuildFailed(
            "pip download: a downloaded file does not match the hash in the lock",
            hint="the index serves different files than when the lock was made: re-lock with `envkit lock`",
            log_tail=tail,
        )
    if "No space left on device" in text:
        return BuildFailed("pip download: the disk is full", hint="free disk space (pip cache, "
                           ".envkit/wheelhouse, unused images) and retry", log_tail=tail)  # fmt: skip
    if "NewConnectionError" in text or "Failed to establish" in text or "Temporary failure" in text:
        return BuildFailed(
            "pip download: the package index is unreachable from this host",
            hint="check the network or set mirrors.pypi in the spec; add local wheels with --find-links DIR",
            log_tail=tail,
        )
    return BuildFailed("pip download failed while filling the wheelhouse", hint="see the output above",
                       log_tail=tail)  # fmt: skip


def _describe(path: Path) -> Wheel:
    try:
        name, version, _, _ = parse_wheel_filename(path.name)
    except InvalidWheelFilename as e:
        raise BuildFailed(f"{path.name} is not a wheel", hint="only wheels can be installed offline") from e
    return Wheel(path.name, canonicalize_name(name), str(version), file_sha256(path), path.stat().st_size)


def _read_manifest(target: Path) -> Wheelhouse | None:
    try:
        data = json.loads((target / MANIFEST).read_text("utf-8"))
        wheels = tuple(Wheel(**w) for w in data["wheels"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not all(
        (target / w.filename).is_file() and (target / w.filename).stat().st_size == w.size for w in wheels
    ):
        return None
    return Wheelhouse(target, wheels, cached=True)
