"""Platforms of multi-platform locks: conda subdirs and the PEP 508 marker values they stand for."""

from __future__ import annotations

import platform as _platform
import sys

__all__ = ["MARKER_ENV", "marker_env", "marker_holds", "this_platform"]

# conda subdir -> (sys_platform, platform_system, platform_machine, os_name)
MARKER_ENV: dict[str, tuple[str, str, str, str]] = {
    "linux-64": ("linux", "Linux", "x86_64", "posix"),
    "linux-aarch64": ("linux", "Linux", "aarch64", "posix"),
    "linux-ppc64le": ("linux", "Linux", "ppc64le", "posix"),
    "osx-64": ("darwin", "Darwin", "x86_64", "posix"),
    "osx-arm64": ("darwin", "Darwin", "arm64", "posix"),
    "win-64": ("win32", "Windows", "AMD64", "nt"),
}


def this_platform() -> str:
    """This machine as a conda subdir (``linux-64``, ``osx-arm64``, ``win-64``, ...)."""
    machine = _platform.machine().lower()
    if sys.platform.startswith("win"):
        return "win-64"
    arch = {"x86_64": "64", "amd64": "64", "arm64": "arm64", "aarch64": "aarch64", "ppc64le": "ppc64le"}
    os_name = "osx" if sys.platform == "darwin" else "linux"
    suffix = arch.get(machine, "64")
    if os_name == "osx" and suffix == "aarch64":
        suffix = "arm64"
    if os_name == "linux" and suffix == "arm64":
        suffix = "aarch64"
    return f"{os_name}-{suffix}"


def marker_env(platform: str, python: str) -> dict[str, str]:
    """PEP 508 marker values for a conda subdir and a Python ``major.minor``."""
    sys_platform, system, machine, os_name = MARKER_ENV.get(platform, MARKER_ENV["linux-64"])
    return {
        "sys_platform": sys_platform,
        "platform_system": system,
        "platform_machine": machine,
        "os_name": os_name,
        "python_version": python,
        "python_full_version": f"{python}.0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "platform_release": "",
        "platform_version": "",
        "implementation_version": f"{python}.0",
        "extra": "",
    }


def marker_holds(marker: str | None, env: dict[str, str]) -> bool | None:
    """Whether ``marker`` holds in ``env``; None when it cannot be evaluated."""
    if not marker:
        return True
    # imported here: a pip freeze or an env export has no markers (~15 ms of start-up)
    from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName

    try:
        return Marker(marker).evaluate(env)  # type: ignore[arg-type,unused-ignore]
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return None
