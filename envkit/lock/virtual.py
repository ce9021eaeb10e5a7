"""Virtual packages per target platform: what the image provides, taken from the spec.

No GPU and no host detection: ``__cuda`` is the spec's CUDA version, ``__glibc`` the glibc
of the base image's OS (the resolved spec's runtime image row), so a laptop locks the same
environment as a GPU server.
"""

from __future__ import annotations

from envkit.lock.solver import VirtualPackage
from envkit.spec.models import ARCHES
from envkit.spec.resolve import ResolvedSpec

__all__ = ["GLIBC_BY_OS", "glibc_for", "python_platform", "virtual_packages"]

# glibc of the distributions the catalog's base images use (from each release's libc6 package).
GLIBC_BY_OS = {
    "ubuntu20.04": "2.31",
    "ubuntu22.04": "2.35",
    "ubuntu24.04": "2.39",
    "debian11": "2.31",
    "debian12": "2.36",
}
_DEFAULT_OS = "ubuntu22.04"
_LINUX_KERNEL = "4.18"  # the oldest kernel envkit claims to run on (RHEL 8's), as pixi assumes


def glibc_for(resolved: ResolvedSpec) -> str:
    """The glibc of the image the environment will run in."""
    image = resolved.base
    return GLIBC_BY_OS.get(image.os if image else _DEFAULT_OS, GLIBC_BY_OS[_DEFAULT_OS])


def virtual_packages(resolved: ResolvedSpec, platform: str) -> tuple[VirtualPackage, ...]:
    spec = resolved.spec
    found = [
        VirtualPackage("__glibc", glibc_for(resolved)),
        VirtualPackage("__linux", _LINUX_KERNEL),
        VirtualPackage("__unix", "0"),
        VirtualPackage("__archspec", "1", ARCHES[platform]),
    ]
    if spec.is_gpu:
        found.append(VirtualPackage("__cuda", spec.cuda))
    return tuple(sorted(found))


def python_platform(resolved: ResolvedSpec, platform: str) -> str:
    """uv's ``--python-platform`` for a conda platform: ``x86_64-manylinux_2_35``."""
    major, minor = glibc_for(resolved).split(".")
    return f"{ARCHES[platform]}-manylinux_{major}_{minor}"
