"""Make a base image without a registry: ``debootstrap`` a Debian root filesystem, ``docker import`` it.

Air-gapped clusters (and this project's CI) cannot pull ``python:3.11-slim``;
they can reach a Debian mirror (or a local copy of one). The result is a
minimal Debian with python3, venv and pip: a ``base_image`` for ``installer:
venv`` specs, or a builder image for conda installers.
"""

from __future__ import annotations

import os
import re
import shutil
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from envkit import _proc
from envkit.catalog import load_catalog
from envkit.engine.protocol import ContainerEngine, ImageInfo
from envkit.errors import EngineError, UsageError

__all__ = [
    "BASE_LABEL",
    "DEFAULT_PACKAGES",
    "PACKAGES_LABEL",
    "BootstrapResult",
    "bootstrap_image",
    "debian_mirror",
    "default_packages",
]

BASE_LABEL = "io.envkit.base"
PACKAGES_LABEL = "io.envkit.base-packages"  # what debootstrap included: an image lacking one is remade
DEFAULT_PACKAGES = ("python3", "python3-venv", "python3-pip")


def default_packages() -> tuple[str, ...]:
    """python3, venv, pip and the OS libraries the catalog's framework wheels need (libgomp1 for Paddle)."""
    return tuple(sorted({*DEFAULT_PACKAGES, *load_catalog().os_packages()}))


_SUITE = re.compile(r"^[a-z]+\Z")
_PACKAGE = re.compile(r"^[a-z0-9][a-z0-9+.-]*\Z")
_TIMEOUT_S = 1800


@dataclass(frozen=True)
class BootstrapResult:
    """A base image made without a registry (debootstrap + import): the image, whether it was new."""

    image: ImageInfo
    created: bool
    suite: str
    mirror: str | None


def debian_mirror(suite: str, sources: Sequence[Path] | None = None) -> str:
    """``$ENVKIT_DEBIAN_MIRROR``, else the Debian mirror apt uses here, else deb.debian.org."""
    if os.environ.get("ENVKIT_DEBIAN_MIRROR"):
        return os.environ["ENVKIT_DEBIAN_MIRROR"]
    if sources is None:
        folder = Path("/etc/apt/sources.list.d")
        sources = [Path("/etc/apt/sources.list"), *(sorted(folder.glob("*")) if folder.is_dir() else [])]
    for path in sources:
        text = path.read_text("utf-8", errors="replace") if path.is_file() else ""
        found = re.search(r"^URIs:\s*(\S+/debian)/?\s*$", text, re.M) or re.search(
            rf"^deb\s+(?:\[[^\]]*\]\s+)?(\S+/debian)/?\s+{suite}\b", text, re.M
        )
        if found:
            return found.group(1)
    return "http://deb.debian.org/debian"


def bootstrap_image(
    engine: ContainerEngine,
    tag: str,
    *,
    suite: str = "bookworm",
    mirror: str | None = None,
    packages: Sequence[str] | None = None,
    force: bool = False,
    run: _proc.Runner = _proc.run,
) -> BootstrapResult:
    """Return the image ``tag``, creating it first when it is missing, lacks one of ``packages``
    (default: :func:`default_packages`), or ``force``."""
    packages = sorted(set(packages if packages is not None else default_packages()))
    if not _SUITE.match(suite):
        raise UsageError(f"{suite!r} is not a Debian suite name", hint="e.g. bookworm or trixie")
    bad = [p for p in packages if not _PACKAGE.match(p)]
    if bad:
        raise UsageError(f"not Debian package names: {', '.join(bad)}", hint="e.g. python3-venv")
    existing = engine.inspect(tag)
    if existing is not None and not force and _has_packages(existing, packages):
        return BootstrapResult(existing, created=False, suite=suite, mirror=None)
    if shutil.which("debootstrap") is None:
        raise EngineError("debootstrap is not installed", hint="apt-get install debootstrap")
    if os.geteuid() != 0:
        raise EngineError("debootstrap needs root", hint="run this command as root (or with sudo)")
    source = mirror or debian_mirror(suite)
    with tempfile.TemporaryDirectory(prefix="envkit-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        argv = [
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join(packages)}",
            suite,
            str(rootfs),
            source,
        ]
        run(argv, timeout=_TIMEOUT_S, hint=f"check that {source} is reachable (or set ENVKIT_DEBIAN_MIRROR)")
        archive = Path(tmp) / "rootfs.tar"
        with tarfile.open(archive, "w") as tar:
            for entry in sorted(rootfs.iterdir()):
                tar.add(entry, arcname=entry.name)
        changes = [
            f"LABEL {BASE_LABEL}=debootstrap:{suite}",
            f"LABEL {PACKAGES_LABEL}={','.join(packages)}",
            'CMD ["python3"]',
        ]
        image = engine.import_image(archive, tag, changes=changes)
    return BootstrapResult(image, created=True, suite=suite, mirror=source)


def _has_packages(image: ImageInfo, packages: Sequence[str]) -> bool:
    """Whether ``image`` was made with every package (an image made by another tool: assume yes)."""
    if BASE_LABEL not in image.labels:
        return True
    included = set(image.labels.get(PACKAGES_LABEL, "").split(","))
    return set(packages) <= included
