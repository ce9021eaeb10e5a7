"""Shared reader plumbing: build normalized packages and locate errors."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from envkit.errors import InventoryError
from envkit.inventory.models import VCS_VERSION_PREFIX, Installer, Inventory, Package
from envkit.inventory.names import canonical, project_of

__all__ = [
    "EGG",
    "REQUIREMENT",
    "Collector",
    "channel_from_url",
    "pip_pin",
    "requirement_version",
    "split_conda_filename",
    "vcs_version",
    "version_from_url",
    "version_too_large",
    "without_features",
]

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._+-]*\Z")
# Versions are parsed as integers per component (packaging, conda ordering): Python refuses integers
# of more than 4,300 digits with a ValueError, and nothing real comes near these bounds (the longest
# components are timestamps like 20240101235959).
MAX_VERSION_CHARS = 256
MAX_VERSION_DIGITS = 40
_DIGIT_RUN = re.compile(rf"[0-9]{{{MAX_VERSION_DIGITS + 1},}}")
_VERSION = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._+!*-]*\Z")
_PIP_CHANNELS = {"pypi", "<pip>"}
# conda list's build column for pip-installed packages; ``<pip>`` is conda < 4.6's three-column row.
_PIP_BUILDS = {"pypi_0", "dev_0", "<pip>"}
# ``defaults`` is the name conda prints for its main channel (repo.anaconda.com/pkgs/main).
_CHANNEL_ALIASES = {"defaults": "pkgs/main"}

# One pip requirement line: ``name[extras] <op> version ; marker`` or ``name @ url``.
REQUIREMENT = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*"
    r"(?:(?P<op>===|==|~=|!=|>=|<=|>|<)\s*(?P<version>[^\s;,]+)[^;]*|@\s*(?P<url>\S+))?\s*(?:;.*)?\Z"
)
EGG = re.compile(r"[#&]egg=([A-Za-z0-9._-]+)")
_GIT_SHA = re.compile(r"@([0-9a-f]{7,40})(?:#|$)")
_WHEEL = re.compile(r"/([A-Za-z0-9_.]+)-([0-9][^-/]*)-[^/]*\.whl")


def pip_pin(name: str, version: str, line: int) -> Package:
    """:meth:`Collector.add`'s row for ``name==version`` whose name and version a pattern checked."""
    norm = canonical(name)
    return Package(project_of(norm, "pip", None), norm, version, "pip", None, None, None, line, None)


@dataclass
class Collector:
    """Accumulates packages for one file; ``error`` names the file and the line."""

    path: str
    format: str
    packages: list[Package] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    unreadable: list[InventoryError] = field(default_factory=list)
    platform: str | None = None  # of a multi-platform lock: a conda subdir (None: this machine's)
    environment: str | None = None  # of a multi-environment lock (pixi.lock; None: "default")
    python: str | None = (
        None  # the Python (major.minor) a lock's markers are read for (None: see readers_locks)
    )

    def error(self, line: int | None, message: str, hint: str | None = None) -> InventoryError:
        where = f"{self.path}:{line}" if line is not None else self.path
        return InventoryError(
            f"{where}: {message} (reading as {self.format})",
            hint=hint or "check the file is a complete, unedited listing; force the format with --format",
        )

    def skip(self, line: int | None, message: str) -> None:
        """A row that cannot be read: kept as a warning; the file fails only when most rows do."""
        error = self.error(line, message)
        self.unreadable.append(error)
        self.warnings.append(f"{error.message}: row skipped")

    def add(
        self,
        name: str,
        version: str,
        installer: Installer,
        *,
        line: int | None,
        build: str | None = None,
        channel: str | None = None,
        url: str | None = None,
        env: str | None = None,
        checked: bool = False,
    ) -> None:
        """One row; ``checked``: the caller's pattern already validated the name and version."""
        if not checked and not _NAME.match(name):
            self.skip(line, f"not a package name: {name!r}")
            return
        if not checked and version and not _VERSION.match(version):
            self.skip(line, f"not a version: {version[:80]!r} (package {name})")
            return
        problem = version_too_large(version)
        if problem:
            self.skip(line, f"not a version: {problem} (package {name[:80]})")
            return
        channel = _CHANNEL_ALIASES.get(channel or "", channel)
        if channel in _PIP_CHANNELS or build in _PIP_BUILDS:
            installer = "pip"
        if installer == "pip":
            norm = canonical(name)
            build = None if build in _PIP_BUILDS else build
            channel = None if channel in _PIP_CHANNELS else channel
        else:
            norm = name.lower()
        project = project_of(norm, installer, build)
        self.packages.append(
            Package(project, norm, version, installer, build or None, channel or None, url, line, env)
        )

    def inventory(self, label: str, *, facts_only: bool = False) -> Inventory:
        """The inventory read; an error when nothing, or at least half the rows, could be read.

        ``facts_only``: a file whose host facts are the content (collect_env without package rows).
        """
        if self.unreadable and not self.packages:
            raise InventoryError(
                f"{self.path}: not an environment listing: none of its {len(self.unreadable)} rows reads as "
                f"{self.format} ({self.unreadable[0].message.split(': ', 2)[-1]})",
                hint="envkit reads conda list/export/json/explicit, mamba list, conda env export, "
                "pip freeze, pip list JSON, collect_env, probe reports, snapshots, requirements/conda-lock/"
                "pixi/uv/pylock/poetry locks; force one with --format",
            )
        if self.unreadable and len(self.unreadable) >= len(self.packages):
            first = self.unreadable[0]
            read = f"{len(self.packages)} rows read, {len(self.unreadable)} unreadable"
            raise InventoryError(f"{first.message}; {read}", hint=first.hint)
        if not self.packages and not facts_only:
            raise self.error(None, "no packages found", hint="is this an environment listing? try --format")
        return Inventory(
            label,
            self.path,
            self.format,
            _interned(tuple(sorted(self.packages, key=_order))),
            dict(sorted(self.meta.items())),
            tuple(self.warnings),
        )


_INTERNED: dict[tuple[int, ...], tuple[Package, ...]] = {}


def _interned(packages: tuple[Package, ...]) -> tuple[Package, ...]:
    """One tuple for the same rows (the same Package objects: ``readers_text``'s memo): files that differ
    only in comments or order then share their tables downstream (see ``Inventory.primary``)."""
    key = tuple(map(id, packages))  # the tuple held below keeps these objects, so their ids, alive
    held = _INTERNED.get(key)
    if held is not None:
        return held
    if len(_INTERNED) >= 256:
        _INTERNED.clear()
    _INTERNED[key] = packages
    return packages


def _order(package: Package) -> tuple[str, str, str, str, int]:
    return (package.project, package.name, package.version, package.installer, package.line or 0)


def version_too_large(version: str) -> str | None:
    """Why ``version`` is beyond what a real version looks like (and what parsers take), or None."""
    if len(version) > MAX_VERSION_CHARS:
        return f"{len(version)} characters (at most {MAX_VERSION_CHARS})"
    run = _DIGIT_RUN.search(version)
    if run:
        return f"a component of {len(run[0])} digits (at most {MAX_VERSION_DIGITS})"
    return None


def version_from_url(url: str) -> str:
    """A wheel URL's version, ``0+git.<sha12>`` for a VCS URL pinned to a commit, else ``""``."""
    wheel = _WHEEL.search(url)
    if wheel:
        return wheel[2]
    sha = _GIT_SHA.search(url)
    return vcs_version(sha[1]) if sha else ""


def vcs_version(commit: str) -> str:
    """The version of a VCS checkout pinned to ``commit``: ``0+git.<sha12>`` (``""`` without one)."""
    return f"{VCS_VERSION_PREFIX}{commit[:12]}" if commit else ""


def requirement_version(match: re.Match[str]) -> str:
    """The installed version a :data:`REQUIREMENT` match states: its ``==`` pin or its URL's, else ``""``."""
    if match["url"]:
        return version_from_url(match["url"])
    return match["version"] if match["op"] in {"==", "==="} else ""


def channel_from_url(url: str) -> str:
    """``https://conda.anaconda.org/conda-forge/linux-64/x.conda`` -> ``conda-forge``;
    ``https://repo.anaconda.com/pkgs/main/...`` -> ``pkgs/main``; a channel URL without a package
    (``conda list``'s channel column: ``http://127.0.0.1:8000``) -> ``127.0.0.1:8000``, the name
    the package URLs of that channel give."""
    base = url.split("#", 1)[0]
    parts = [p for p in base.split("/") if p]
    if "://" not in base or len(parts) < 2:  # already a name: ``conda-forge``, ``pkgs/main``
        return base
    host, rest = parts[1], parts[2:]
    if rest[:1] == ["t"] and len(rest) > 2:  # an access token (/t/<token>/) is no part of the name
        rest = rest[2:]
    subdirs = {
        "noarch",
        "linux-64",
        "linux-aarch64",
        "linux-ppc64le",
        "osx-64",
        "osx-arm64",
        "win-64",
        "win-32",
    }
    cut = next((i for i, p in enumerate(rest) if p in subdirs), len(rest))
    path = rest[:cut]
    if host in {"conda.anaconda.org", "anaconda.org"} or (path and path[0] != "pkgs" and "anaconda" in host):
        return "/".join(path) or host
    if path[:1] == ["pkgs"]:
        return "/".join(path[:2])
    return "/".join([host, *path])


def split_conda_filename(filename: str) -> tuple[str, str, str] | None:
    """``pytorch-2.0.1-py3.9_cuda11.7_cudnn8.5.0_0.tar.bz2`` -> (name, version, build)."""
    for ext in (".tar.bz2", ".conda"):
        if filename.endswith(ext):
            stem = filename[: -len(ext)]
            break
    else:
        return None
    parts = stem.rsplit("-", 2)
    if len(parts) != 3 or not all(parts):
        return None
    return parts[0], parts[1], parts[2]


def without_features(fields: list[str]) -> list[str]:
    """Drop conda < 4.6's feature column (``[blas_openblas]``, ``[vc14]``): it is not a channel."""
    return [f for f in fields if not (f.startswith("[") and f.endswith("]"))]
