"""Debian packages pinned for a lock: a private apt state on the host, the closure an image needs, pins.

envkit keeps its own apt configuration under ``.envkit/apt/<suite>/`` (sources, lists, cache): the
host's apt setup is never changed, and non-free (where Debian ships ``nsight-systems``) is enabled
there only. The lists serve three uses:

- :func:`simulate_install` runs ``apt-get -s install`` *inside the image* that the packages are
  for, with these lists mounted read-only: the image's own dpkg status decides what is missing, so
  the result is the exact closure (name and version) that image needs, and nothing it already has
  is upgraded;
- :func:`deb_records` reads each pin's SHA256, size and file name from the signed index;
- :func:`envkit.offline.debs.download_debs` fetches them with ``apt-get download`` (apt checks the
  signature chain) and checks every file's sha256 against the pin once more before it enters a
  build context.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from envkit import _proc
from envkit.engine.protocol import ContainerEngine, Mount
from envkit.errors import BuildFailed, UsageError

__all__ = [
    "DEB_NAME",
    "DEB_VERSION",
    "AptState",
    "DebPin",
    "check_pin",
    "deb_records",
    "image_release",
    "parse_simulation",
    "simulate_install",
]

# Debian policy 5.6.1 (a name: two or more of [a-z0-9+.-], alphanumeric first) and 5.6.12 (a version:
# [epoch:]upstream[-revision], the upstream part starting with a digit): never a word that starts with `-`
DEB_NAME = re.compile(r"[a-z0-9][a-z0-9+.-]{1,199}", re.ASCII)
DEB_VERSION = re.compile(r"(?:[0-9]{1,9}:)?[0-9][A-Za-z0-9.+~]{0,199}(?:-[A-Za-z0-9.+~]{1,99})*", re.ASCII)
_SUITE = re.compile(r"^[a-z]+\Z")
# `Inst NAME[:ARCH] [INSTALLED] (VERSION ARCHIVES [ARCH])`: the bracket is an installed version (an upgrade)
_INST = re.compile(r"^Inst (\S+?)(?::\S+)? (?:\[(\S+)\] )?\((\S+) ")
_MOUNT = "/run/envkit-apt"


@dataclass(frozen=True)
class DebPin:
    """One Debian package at an exact version, as the index describes its file."""

    name: str
    version: str
    arch: str
    sha256: str
    size: int
    filename: str  # the file's name in the archive (pool/.../NAME_VERSION_ARCH.deb): its basename

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class AptState:
    """envkit's own apt configuration for one Debian release (``.envkit/apt/<suite>/``)."""

    directory: Path
    suite: str
    mirror: str = "http://deb.debian.org/debian"
    security: str = "http://deb.debian.org/debian-security"
    components: tuple[str, ...] = ("main", "non-free")

    def __post_init__(self) -> None:
        if not _SUITE.match(self.suite):
            raise UsageError(f"{self.suite!r} is not a Debian suite name", hint="e.g. bookworm")

    def sources(self) -> str:
        parts = " ".join(self.components)
        return (
            f"deb {self.mirror} {self.suite} {parts}\n"
            f"deb {self.mirror} {self.suite}-updates {parts}\n"
            f"deb {self.security} {self.suite}-security {parts}\n"
        )

    def options(self, root: Path | None = None) -> list[str]:
        """``-o`` options that point apt at this state (``root``: where it is mounted, else here)."""
        base = root or self.directory
        settings = {
            "Dir::Etc::SourceList": f"{base}/sources.list",
            "Dir::Etc::SourceParts": f"{base}/empty",
            "Dir::State::Lists": f"{base}/lists",
            "Dir::Etc::Preferences": f"{base}/empty/none",
            "Dir::Etc::PreferencesParts": f"{base}/empty",
            "Debug::NoLocking": "1",
            "Dir::Cache::pkgcache": "",
            "Dir::Cache::srcpkgcache": "",
            "APT::Install-Recommends": "false",
            "Acquire::Languages": "none",
        }
        return [word for key, value in settings.items() for word in ("-o", f"{key}={value}")]

    def update(self, run: _proc.Runner = _proc.run, *, refresh: bool = False) -> None:
        """``apt-get update`` into this state (once; again with ``refresh``)."""
        lists = self.directory / "lists"
        if not refresh and any(lists.glob("*_Packages*")):
            return
        (lists / "partial").mkdir(parents=True, exist_ok=True)
        (self.directory / "empty").mkdir(exist_ok=True)
        (self.directory / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
        (self.directory / "sources.list").write_text(self.sources(), "utf-8")
        cache = ["-o", f"Dir::Cache={self.directory}/cache"]
        run(
            ["apt-get", *self.options(), *cache, "update"],
            timeout=600,
            hint=f"is {self.mirror} reachable? (set ENVKIT_DEBIAN_MIRROR)",
        )

    def candidate(self, package: str, run: _proc.Runner = _proc.run) -> str | None:
        """The version apt would install of ``package`` (None: no source has it)."""
        _check_name(package)
        out = run(["apt-cache", *self.options(), "policy", "--", package], check=False).stdout
        found = re.search(r"^\s*Candidate:\s*(\S+)", out, re.M)
        return None if not found or found.group(1) == "(none)" else found.group(1)


def _check_name(name: str) -> None:
    if not DEB_NAME.fullmatch(name):
        raise UsageError(f"{name!r} is not a Debian package name", hint="e.g. gdb or openssh-server")


def check_pin(name: str, version: str) -> str:
    """``NAME=VERSION`` for apt, once both are checked by Debian's grammar (UsageError otherwise)."""
    _check_name(name)
    if not DEB_VERSION.fullmatch(version):
        raise UsageError(f"{version!r} is not a Debian version", hint="e.g. 13.1-3 or 1:9.2p1-2")
    return f"{name}={version}"


def image_release(engine: ContainerEngine, image: str) -> str:
    """The Debian release of ``image`` (``VERSION_CODENAME`` of its /etc/os-release)."""
    result = engine.run(image, ["cat", "/etc/os-release"])
    found = re.search(r"^VERSION_CODENAME=\"?([a-z]+)\"?$", result.stdout, re.M)
    if result.exit_code != 0 or not found or "debian" not in result.stdout.lower():
        raise UsageError(
            f"{image} is not a Debian image (no VERSION_CODENAME in /etc/os-release)",
            hint="the debug image installs Debian packages: its runtime image must be Debian-based",
        )
    return found.group(1)


def parse_simulation(output: str) -> tuple[list[tuple[str, str]], list[str]]:
    """``apt-get -s install`` output -> ([(name, version) to install], [upgrades of installed packages])."""
    new: list[tuple[str, str]] = []
    upgrades: list[str] = []
    for line in output.splitlines():
        found = _INST.match(line)
        if not found:
            continue
        name, installed, version = found.groups()
        if installed is not None:
            upgrades.append(f"{name} {installed} -> {version}")
        else:
            new.append((name, version))
    return sorted(new), upgrades


def simulate_install(
    engine: ContainerEngine, image: str, state: AptState, packages: Sequence[str]
) -> list[tuple[str, str]]:
    """The exact packages (name, version) ``image`` lacks for ``packages``; refuses any upgrade."""
    for spec in packages:
        name, pinned, version = spec.partition("=")
        if pinned:
            check_pin(name, version)
        else:
            _check_name(name)
    argv = ["apt-get", *state.options(Path(_MOUNT)), "-s", "-q", "install", "--", *packages]
    result = engine.run(image, argv, mounts=[Mount(str(state.directory), _MOUNT)])
    if result.exit_code != 0:
        tail = (result.stderr or result.stdout).strip()[-600:]
        raise BuildFailed(
            f"apt cannot install {' '.join(packages)} in {image}: {tail}",
            hint="is the image's Debian release the one envkit's apt lists are for? "
            f"(delete {state.directory}: the next `envkit build NAME --debug-image` fetches them again)",
        )
    new, upgrades = parse_simulation(result.stdout)
    if upgrades:
        raise BuildFailed(
            f"installing {' '.join(packages)} would upgrade packages of {image}: {'; '.join(upgrades)}",
            hint="the debug image never changes what the runtime image has: pin the tool to the "
            "installed version, or rebuild the runtime image on the newer packages first",
        )
    return new


def deb_records(
    state: AptState, pins: Sequence[tuple[str, str]], run: _proc.Runner = _proc.run
) -> list[DebPin]:
    """Each pin's file as the index describes it (sha256, size, file name)."""
    if not pins:
        return []
    words = [check_pin(n, v) for n, v in pins]
    out = run(
        ["apt-cache", *state.options(), "show", "--", *words],
        hint="apt-cache show failed: refresh envkit's apt lists",
    ).stdout
    found: dict[tuple[str, str], DebPin] = {}
    for block in out.split("\n\n"):
        fields = dict(re.findall(r"^([A-Za-z0-9-]+): (.*)$", block, re.M))
        key = (fields.get("Package", ""), fields.get("Version", ""))
        if key in found or key not in set(pins) or "SHA256" not in fields:
            continue
        found[key] = DebPin(
            key[0],
            key[1],
            fields.get("Architecture", ""),
            fields["SHA256"],
            int(fields.get("Size", "0")),
            fields["Filename"].rsplit("/", 1)[-1],
        )
    missing = [f"{n}={v}" for n, v in pins if (n, v) not in found]
    if missing:
        raise BuildFailed(
            f"the Debian index has no file for {', '.join(missing)}",
            hint="refresh envkit's apt lists (a newer point release replaced it)",
        )
    return [found[p] for p in pins]
